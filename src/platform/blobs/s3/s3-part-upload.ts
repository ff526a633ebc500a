// Streams a body into one S3 object: a single PutObject when it fits in one part, otherwise a
// multipart upload whose parts are filled into a few reused buffers (private to the S3 adapter).
//
// Why not @aws-sdk/lib-storage's Upload: it concatenates every part into a fresh buffer (a copy
// and an 8 MiB allocation per part, which the garbage collector then has to find) and, on
// streams, ends quietly when the source is destroyed. Here each part is copied once into one of
// `queueSize + 1` buffers that are reused for the whole upload, so memory is fixed at
// partSize × (queueSize + 1) however large the file, and a source error fails the upload.
// On any failure the multipart upload is aborted; a crash leaves it to listPartial/discardPartial.
import type { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';

export interface PartUploadOptions {
  client: S3Client;
  bucket: string;
  key: string;
  /** Bytes per part (S3's minimum is 5 MiB, except the last). */
  partSize: number;
  /** Parts in flight at once. */
  queueSize: number;
}

/** Resolves once the object is complete and visible; rejects (leaving nothing) otherwise. */
export async function uploadObject(source: Readable, o: PartUploadOptions): Promise<void> {
  const { client, bucket, key, partSize } = o;
  // Until a whole part has arrived the chunks are only kept, not copied: a small file is one
  // PutObject of exactly its bytes and never touches a part buffer.
  let head: Buffer[] = [];
  let headBytes = 0;
  let multipart: MultipartWriter | null = null;
  try {
    for await (const chunk of source as AsyncIterable<Buffer>) {
      if (multipart) {
        await multipart.write(chunk);
        continue;
      }
      head.push(chunk);
      headBytes += chunk.length;
      if (headBytes >= partSize) {
        multipart = new MultipartWriter(o);
        for (const c of head) await multipart.write(c);
        head = [];
      }
    }
    if (!multipart) {
      const body = head.length === 1 ? head[0]! : Buffer.concat(head, headBytes);
      await client.send(
        new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentLength: headBytes }),
      );
      return;
    }
    await multipart.finish();
  } catch (err) {
    await multipart?.abort();
    throw err;
  }
}

class MultipartWriter {
  private uploadId: Promise<string>;
  private readonly free: Buffer[] = [];
  private allocated = 0;
  private readonly waiting: ((b: Buffer) => void)[] = [];
  private current: Buffer | null = null;
  private filled = 0;
  private partNumber = 0;
  private readonly etags: { PartNumber: number; ETag: string }[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private failure: unknown = null;

  constructor(private readonly o: PartUploadOptions) {
    this.uploadId = o.client
      .send(new CreateMultipartUploadCommand({ Bucket: o.bucket, Key: o.key }))
      .then((r) => {
        if (!r.UploadId) throw new Error('CreateMultipartUpload answered no UploadId');
        return r.UploadId;
      });
    // Observed by write/finish; this keeps an early rejection from being reported as unhandled.
    this.uploadId.catch(() => {});
  }

  async write(chunk: Buffer): Promise<void> {
    let offset = 0;
    while (offset < chunk.length) {
      if (this.failure) throw this.failure;
      this.current ??= await this.takeBuffer();
      const n = chunk.copy(this.current, this.filled, offset);
      this.filled += n;
      offset += n;
      if (this.filled === this.o.partSize) this.sendCurrent();
    }
  }

  async finish(): Promise<void> {
    if (this.filled > 0) this.sendCurrent();
    await Promise.all(this.inFlight);
    if (this.failure) throw this.failure;
    const UploadId = await this.uploadId;
    this.etags.sort((a, b) => a.PartNumber - b.PartNumber);
    await this.o.client.send(
      new CompleteMultipartUploadCommand({
        Bucket: this.o.bucket,
        Key: this.o.key,
        UploadId,
        MultipartUpload: { Parts: this.etags },
      }),
    );
  }

  async abort(): Promise<void> {
    this.failure ??= new Error('upload aborted');
    await Promise.allSettled(this.inFlight);
    const UploadId = await this.uploadId.catch(() => null);
    if (!UploadId) return;
    await this.o.client
      .send(new AbortMultipartUploadCommand({ Bucket: this.o.bucket, Key: this.o.key, UploadId }))
      // Left for the reconciler (listPartial) when the store does not answer now.
      .catch(() => {});
  }

  private sendCurrent(): void {
    const buffer = this.current!;
    const length = this.filled;
    const PartNumber = ++this.partNumber;
    this.current = null;
    this.filled = 0;
    const sent = this.uploadId
      .then((UploadId) =>
        this.o.client.send(
          new UploadPartCommand({
            Bucket: this.o.bucket,
            Key: this.o.key,
            UploadId,
            PartNumber,
            Body: buffer.subarray(0, length),
            ContentLength: length,
          }),
        ),
      )
      .then((r) => {
        if (!r.ETag) throw new Error(`UploadPart ${PartNumber} answered no ETag`);
        this.etags.push({ PartNumber, ETag: r.ETag });
      })
      .catch((err: unknown) => {
        this.failure ??= err;
      })
      .finally(() => {
        this.inFlight.delete(sent);
        this.releaseBuffer(buffer);
      });
    this.inFlight.add(sent);
  }

  /** A part buffer: a free one, a new one while fewer than queueSize + 1 exist, else the next released. */
  private takeBuffer(): Promise<Buffer> {
    const b = this.free.pop();
    if (b) return Promise.resolve(b);
    if (this.allocated <= this.o.queueSize) {
      this.allocated++;
      return Promise.resolve(Buffer.allocUnsafeSlow(this.o.partSize));
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private releaseBuffer(b: Buffer): void {
    const next = this.waiting.shift();
    if (next) next(b);
    else this.free.push(b);
  }
}
