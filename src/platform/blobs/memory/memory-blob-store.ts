// Blob store in memory, for tests: keeps the same contract as the real adapters and can be told to
// fail at any step, so the layers above prove what a failing store does to an upload, a download
// and the sweeper. Holds whole objects in memory: never for production.
import { Readable } from 'node:stream';
import {
  type BlobStat,
  type BlobStore,
  type ByteRange,
  type ListedBlob,
  type PartialWrite,
  type SmallBlob,
  STORE_IDENTITY_KEY,
} from '../blob-store.js';

/** Where an injected failure strikes. */
export type FailStep = 'write' | 'finish' | 'read' | 'delete';

interface MemoryObject {
  data: Buffer;
  modifiedAt: number;
  generation: number;
}

export class MemoryBlobStore implements BlobStore {
  readonly description = 'memory';
  private readonly objects = new Map<string, MemoryObject>();
  private readonly partial = new Map<string, { chunks: Buffer[]; startedAt: number }>();
  private readonly failing = new Set<FailStep>();
  private generation = 0;

  /** Makes every later call fail at `step` (until heal). */
  failAt(step: FailStep): void {
    this.failing.add(step);
  }

  heal(): void {
    this.failing.clear();
  }

  private check(step: FailStep): void {
    if (this.failing.has(step)) throw new Error(`memory store: injected ${step} failure`);
  }

  async open(): Promise<void> {}

  async put(key: string, source: Readable): Promise<{ fingerprint: string }> {
    const ref = `${key}#${++this.generation}`;
    const entry = { chunks: [] as Buffer[], startedAt: Date.now() };
    this.partial.set(ref, entry);
    try {
      for await (const chunk of source) {
        this.check('write');
        entry.chunks.push(chunk as Buffer);
      }
      this.check('finish');
      const data = Buffer.concat(entry.chunks);
      this.objects.set(key, { data, modifiedAt: Date.now(), generation: this.generation });
      return { fingerprint: this.fingerprintOf(key)! };
    } finally {
      this.partial.delete(ref);
    }
  }

  private fingerprintOf(key: string): string | null {
    const o = this.objects.get(key);
    return o ? `${o.data.length}-${o.generation}` : null;
  }

  async read(key: string, range?: ByteRange): Promise<Readable> {
    this.check('read');
    const o = this.objects.get(key);
    if (!o) throw Object.assign(new Error(`no such blob ${key}`), { code: 'ENOENT' });
    const data = range ? o.data.subarray(range.start, range.end + 1) : o.data;
    return Readable.from([data]);
  }

  async readSmall(key: string, maxBytes: number): Promise<SmallBlob | null> {
    this.check('read');
    const o = this.objects.get(key);
    if (!o) return null;
    return {
      stat: { size: o.data.length, fingerprint: this.fingerprintOf(key)! },
      data: o.data.length <= maxBytes ? o.data : null,
    };
  }

  async stat(key: string): Promise<BlobStat | null> {
    const o = this.objects.get(key);
    return o ? { size: o.data.length, fingerprint: this.fingerprintOf(key)! } : null;
  }

  async delete(key: string): Promise<void> {
    this.check('delete');
    this.objects.delete(key);
  }

  async *list(): AsyncIterable<ListedBlob> {
    for (const [key, o] of [...this.objects])
      if (key !== STORE_IDENTITY_KEY) yield { key, modifiedAt: o.modifiedAt, size: o.data.length };
  }

  async *listPartial(): AsyncIterable<PartialWrite> {
    for (const [ref, p] of [...this.partial]) yield { key: ref.split('#')[0]!, startedAt: p.startedAt, ref };
  }

  async discardPartial(p: PartialWrite): Promise<void> {
    this.partial.delete(p.ref);
  }
}
