// The byte limit and the SHA-256 of an upload, for any store: bytes pass through on their way to
// the adapter, counted and hashed; past the limit the stream fails with a too-large DomainError.
import { createHash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { tooLarge } from '../errors.js';
import { received } from '../memory.js';

export const overByteLimit = (max: number) => tooLarge(`file larger than the limit of ${max} bytes`);

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
      cb(overByteLimit(this.maxBytes));
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
