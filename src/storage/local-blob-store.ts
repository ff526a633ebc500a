// Blob store in a local directory: <dir>/blobs/ab/<key>, partial writes in <dir>/tmp.
// A write goes to a temp file, is fsynced, then renamed into place and its directory fsynced, so a
// blob either exists whole or not at all.
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { type FileHandle, mkdir, open, readdir, rename, stat, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { type Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { AppError } from '../errors.js';
import { received } from '../memory.js';
import { nativeModule } from '../native.js';
import type { BlobStat, BlobStore, ByteRange, StoredBlob } from './blob-store.js';

const MiB = 1024 * 1024;

/** Counts and hashes bytes in passing; errors with 413 past the limit. */
export class MeteredHash extends Transform {
  bytes = 0;
  private readonly hash = createHash('sha256');
  constructor(
    private readonly maxBytes: number,
    private readonly onBytes?: (total: number) => void,
  ) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) {
      cb(new AppError(413, `file larger than the limit of ${this.maxBytes} bytes`));
      return;
    }
    this.hash.update(chunk);
    this.onBytes?.(this.bytes);
    received(chunk.length);
    cb(null, chunk);
  }
  digest(): string {
    return this.hash.digest('hex');
  }
}

/**
 * Starts writing a large upload to disk while it is still arriving, so that the fsync before the
 * rename has only the tail left to flush instead of the whole file. Durability still rests on that
 * final fsync; this only moves the disk work earlier, at most one request in flight, never waited
 * on by the stream. With the native module it is sync_file_range(SYNC_FILE_RANGE_WRITE) every
 * 8 MiB, which starts writeback without the device cache flush of an fdatasync; without it, an
 * fdatasync every 64 MiB (more often, those flushes cost more than they save). Figures:
 * docs/benchmarks.md, "Upload writeback".
 */
class EarlyWriteback {
  private readonly every: number;
  private pending: Promise<void> | null = null;
  private error: unknown = null;
  private next: number;
  /** Where the next native writeback request starts. */
  private from = 0;
  private readonly native = nativeModule();

  constructor(private readonly fh: FileHandle) {
    this.every = this.native ? 8 * MiB : 64 * MiB;
    this.next = this.every;
  }

  /** Called with the running total of bytes that have passed on their way to the file. */
  passed(total: number): void {
    if (total < this.next || this.pending) return;
    this.next = total + this.every;
    this.pending = this.request(total).then(
      () => {
        this.pending = null;
      },
      (err: unknown) => {
        this.error ??= err;
        this.pending = null;
      },
    );
  }

  private request(total: number): Promise<void> {
    const native = this.native;
    if (!native) return this.fh.datasync();
    const from = this.from;
    // The last megabyte or so may still sit in the write stream's buffer: the next request starts
    // a little before this one's end. Length 0 means "to the end of the file".
    this.from = Math.max(0, total - 2 * MiB);
    return new Promise((resolve, reject) => {
      native.startWriteback(this.fh.fd, from, 0, (errno) =>
        errno === 0
          ? resolve()
          : reject(Object.assign(new Error(`writeback failed (errno ${errno})`), { errno })),
      );
    });
  }

  /** Waits for the one in flight; rethrows a failed one (a write error surfaces here too). */
  async settle(): Promise<void> {
    await this.pending;
    if (this.error) throw this.error;
  }
}

const HOST = hostname().replace(/[^A-Za-z0-9-]/g, '_');

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function fsyncPath(p: string, flags = 'r'): Promise<void> {
  const fh = await open(p, flags);
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

export class LocalBlobStore implements BlobStore {
  private readonly blobDir: string;
  private readonly tmpDir: string;

  constructor(root: string) {
    this.blobDir = path.join(root, 'blobs');
    this.tmpDir = path.join(root, 'tmp');
  }

  private pathOf(key: string): string {
    if (!/^[A-Za-z0-9_-]{16,64}$/.test(key)) throw new Error(`invalid blob key ${key}`);
    return path.join(this.blobDir, key.slice(0, 2), key);
  }

  async write(source: Readable, opts: { maxBytes: number }): Promise<StoredBlob> {
    const key = randomBytes(18).toString('base64url');
    // host.pid in the name lets recover() tell a crashed writer's file from a live one's.
    const tmp = path.join(this.tmpDir, `${HOST}.${process.pid}.${key}.part`);
    const fh = await open(tmp, 'wx', 0o600);
    const writeback = new EarlyWriteback(fh);
    const meter = new MeteredHash(opts.maxBytes, (total) => writeback.passed(total));
    try {
      // The stream owns the handle: `flush` makes it fsync before it closes, and the pipeline only
      // settles after that close. (With `autoClose: false` the stream keeps a reference on the
      // FileHandle forever and a later `fh.close()` never settles on Node 20: uploads hung.)
      await pipeline(source, meter, createWriteStream('', { fd: fh, highWaterMark: 1 << 20, flush: true }));
      await writeback.settle();
      const final = this.pathOf(key);
      await mkdir(path.dirname(final), { recursive: true, mode: 0o700 });
      await rename(tmp, final);
      await fsyncPath(path.dirname(final));
      const st = await this.stat(key);
      return { key, length: meter.bytes, sha256: meter.digest(), fingerprint: st!.fingerprint };
    } catch (err) {
      await writeback.settle().catch(() => {});
      // A no-op when the stream already closed it.
      await fh.close().catch(() => {});
      await unlink(tmp).catch(() => {});
      throw err;
    }
  }

  async read(key: string, range?: ByteRange): Promise<Readable> {
    const fh = await this.openFile(key);
    return createReadStream('', { fd: fh, start: range?.start, end: range?.end, highWaterMark: 1 << 20 });
  }

  openFile(key: string): Promise<FileHandle> {
    return open(this.pathOf(key), 'r');
  }

  async stat(key: string): Promise<BlobStat | null> {
    try {
      const st = await stat(this.pathOf(key), { bigint: true });
      return { size: Number(st.size), fingerprint: `${st.size}-${st.mtimeNs}-${st.ino}` };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await unlink(this.pathOf(key)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }

  async recover(): Promise<number> {
    await mkdir(this.blobDir, { recursive: true, mode: 0o700 });
    await mkdir(this.tmpDir, { recursive: true, mode: 0o700 });
    let removed = 0;
    const dayAgo = Date.now() - 24 * 3600 * 1000;
    for (const name of await readdir(this.tmpDir)) {
      const file = path.join(this.tmpDir, name);
      const m = /^(.+)\.(\d+)\.[A-Za-z0-9_-]+\.part$/.exec(name);
      if (m && m[1] === HOST) {
        // Ours or a live sibling process's: still being written.
        const pid = Number(m[2]);
        if (pid === process.pid || isAlive(pid)) continue;
      } else if (m) {
        // Another host sharing the directory: only files untouched for a day are surely orphans.
        const st = await stat(file).catch(() => null);
        if (!st || st.mtimeMs > dayAgo) continue;
      }
      await unlink(file).catch(() => {});
      removed++;
    }
    return removed;
  }
}
