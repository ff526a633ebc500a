// Small files' contents kept in memory after a read (FileLookups.contents).

/** Contents by file id, least recently read first; drops the oldest past `maxBytes`. */
export class RecentContents {
  private readonly entries = new Map<number, Buffer>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  get(id: number): Buffer | undefined {
    const data = this.entries.get(id);
    if (data) {
      this.entries.delete(id);
      this.entries.set(id, data);
    }
    return data;
  }

  set(id: number, data: Buffer): void {
    if (data.length > this.maxBytes) return;
    this.delete(id);
    this.entries.set(id, data);
    this.bytes += data.length;
    for (const [oldest, old] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= old.length;
    }
  }

  delete(id: number): void {
    const data = this.entries.get(id);
    if (!data) return;
    this.entries.delete(id);
    this.bytes -= data.length;
  }
}
