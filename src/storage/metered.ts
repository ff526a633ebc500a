// The byte limit and the SHA-256 of an upload, for any store: bytes pass through on their way to
// the adapter, counted and hashed; past the limit the stream fails with a 413 AppError.
import { createHash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { AppError } from '../errors.js';
import { received } from '../memory.js';

export const tooLarge = (max: number) => new AppError(413, `file larger than the limit of ${max} bytes`);

export class MeteredHash extends Transform {
  bytes = 0;
  private readonly hash = createHash('sha256');
  constructor(
    private readonly maxBytes: number,
    private readonly onBytes: (total: number) => void = () => {},
  ) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) {
      cb(tooLarge(this.maxBytes));
      return;
    }
    this.hash.update(chunk);
    this.onBytes(this.bytes);
    received(chunk.length);
    cb(null, chunk);
  }
  digest(): string {
    return this.hash.digest('hex');
  }
}
