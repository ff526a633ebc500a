// Writes one upload into an open temp file: counts the bytes (413 past the limit), computes their
// SHA-256, and fsyncs at the end. With the native module the hashing and the writes run in the
// thread pool (native/hashwrite.c), so the JS thread only reads the socket, and the writes bypass
// the page cache (O_DIRECT) where the filesystem allows; without it, a Transform hashes on the JS
// thread in front of a write stream. Writes through the page cache start writeback early.
// Figures: docs/benchmarks.md, "Large transfers".
import { createWriteStream } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { type Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { received } from '../../memory.js';
import { type NativeModule, nativeError, nativeModule } from '../../native/native.js';
import { MeteredHash, overByteLimit } from '../metered.js';

const MiB = 1024 * 1024;

export interface WrittenUpload {
  bytes: number;
  sha256: string;
}

/**
 * Starts writing a large upload to disk while it is still arriving, so that the fsync at the end
 * has only the tail left to flush instead of the whole file. Durability still rests on that final
 * fsync; this only moves the disk work earlier, at most one request in flight, never waited on by
 * the stream. With the native module it is sync_file_range(SYNC_FILE_RANGE_WRITE) every 8 MiB,
 * which starts writeback without the device cache flush of an fdatasync; without it, an fdatasync
 * every 64 MiB (more often, those flushes cost more than they save). Figures: docs/benchmarks.md,
 * "Large transfers".
 */
class EarlyWriteback {
  private readonly every: number;
  private pending: Promise<void> | null = null;
  private error: unknown = null;
  private next: number;
  /** Where the next native writeback request starts: the end of the previous one. */
  private from = 0;

  constructor(
    private readonly fh: FileHandle,
    private readonly native: NativeModule | null,
  ) {
    this.every = native ? 8 * MiB : 64 * MiB;
    this.next = this.every;
  }

  /** Called with the running total of bytes written (native sink) or on their way to the file. */
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
    // The native sink reports totals after the bytes are written, so [from, end of file) is
    // exactly what no earlier request covered. Length 0 means "to the end of the file".
    const from = this.from;
    this.from = total;
    return new Promise((resolve, reject) => {
      native.startWriteback(this.fh.fd, from, 0, (errno) =>
        errno === 0 ? resolve() : reject(nativeError(errno, 'sync_file_range')),
      );
    });
  }

  /** Waits for the one in flight; rethrows a failed one (a write error surfaces here too). */
  async settle(): Promise<void> {
    await this.pending;
    if (this.error) throw this.error;
  }
}

/** Native path: each batch of chunks is hashed and written in the thread pool (two jobs side by side). */
class NativeHashedSink extends Writable {
  bytes = 0;
  private readonly writer: object;
  /** Set when the writes go through the page cache and early writeback pays off. */
  private readonly writeback: EarlyWriteback | null;

  constructor(
    private readonly native: NativeModule,
    private readonly fh: FileHandle,
    private readonly maxBytes: number,
    directIo: boolean,
  ) {
    super({ highWaterMark: MiB });
    this.writer = native.hashWriter(fh.fd, directIo);
    this.writeback = native.directHashed(this.writer) ? null : new EarlyWriteback(fh, native);
  }

  get direct(): boolean {
    return this.writeback === null;
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.batch([chunk], cb);
  }

  override _writev(chunks: { chunk: Buffer }[], cb: (err?: Error | null) => void): void {
    this.batch(
      chunks.map((c) => c.chunk),
      cb,
    );
  }

  private batch(buffers: Buffer[], cb: (err?: Error | null) => void): void {
    let n = 0;
    for (const b of buffers) n += b.length;
    if (this.bytes + n > this.maxBytes) {
      cb(overByteLimit(this.maxBytes));
      return;
    }
    this.bytes += n;
    received(n);
    this.send(buffers, false, (err) => {
      if (!err && !this.destroyed) this.writeback?.passed(this.bytes);
      cb(err);
    });
  }

  private send(buffers: Buffer[], last: boolean, cb: (err?: Error | null) => void): void {
    try {
      this.native.writeHashed(
        this.writer,
        buffers,
        (errno) => cb(errno === 0 ? null : nativeError(errno, 'write')),
        last,
      );
    } catch (err) {
      // Could not queue the batch (out of memory): fail this upload, not the process.
      cb(err as Error);
    }
  }

  /** Writes what the writer held back, waits for early writeback, then fsyncs. */
  override _final(cb: (err?: Error | null) => void): void {
    this.send([], true, (err) => {
      if (err) return cb(err);
      (this.writeback?.settle() ?? Promise.resolve()).then(() => this.fh.sync()).then(() => cb(), cb);
    });
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    this.native.closeHashed(this.writer);
    // An early writeback in flight must end before the caller closes and removes the file.
    (this.writeback?.settle() ?? Promise.resolve()).then(
      () => cb(err),
      () => cb(err),
    );
  }

  digest(): string {
    return this.native.digestHashed(this.writer);
  }
}

export interface UploadWriteOptions {
  /** The native module; injectable so tests can run the JS path on a machine that has it. */
  native?: NativeModule | null;
  /** Let the native writer use O_DIRECT (default true). */
  directIo?: boolean;
}

/**
 * Native path: counts (413 past `maxBytes`), hashes and writes `source` into `fh` (a new, empty
 * file) in the thread pool, and makes it durable (fsync). On success `fh` is closed; on failure it
 * may still be open, and the caller closes it and removes the file.
 */
export async function writeHashed(
  source: Readable,
  fh: FileHandle,
  maxBytes: number,
  native: NativeModule,
  directIo: boolean,
): Promise<WrittenUpload & { direct: boolean }> {
  const sink = new NativeHashedSink(native, fh, maxBytes, directIo);
  await pipeline(source, sink);
  await fh.close();
  return { bytes: sink.bytes, sha256: sink.digest(), direct: sink.direct };
}

/**
 * Plain path: writes `source` (already counted and hashed upstream) into `fh` through the page
 * cache with early writeback, and fsyncs. Same ownership rules as writeHashed.
 */
export async function writePlain(source: Readable, fh: FileHandle): Promise<number> {
  const writeback = new EarlyWriteback(fh, null);
  let total = 0;
  try {
    // The stream owns the handle: `flush` makes it fsync before it closes, and the pipeline only
    // settles after that close. (With `autoClose: false` the stream keeps a reference on the
    // FileHandle forever and a later `fh.close()` never settles on Node 20: uploads hung.)
    const out = createWriteStream('', { fd: fh, highWaterMark: MiB, flush: true });
    source.on('data', (chunk: Buffer) => {
      total += chunk.length;
      writeback.passed(total);
    });
    await pipeline(source, out);
    await writeback.settle();
    return total;
  } catch (err) {
    await writeback.settle().catch(() => {});
    throw err;
  }
}

/** Either path, as the local store takes it: the native one when the module is there. */
export async function writeUpload(
  source: Readable,
  fh: FileHandle,
  maxBytes: number,
  opts: UploadWriteOptions = {},
): Promise<WrittenUpload & { direct: boolean }> {
  const native = opts.native === undefined ? nativeModule() : opts.native;
  if (native) return writeHashed(source, fh, maxBytes, native, opts.directIo ?? true);
  const meter = new MeteredHash(maxBytes);
  source.once('error', (err) => meter.destroy(err));
  const bytes = await writePlain(source.pipe(meter), fh);
  return { bytes, sha256: meter.digest(), direct: false };
}
