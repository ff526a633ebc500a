// Blob store in an S3-compatible bucket (AWS S3, Ceph RGW, MinIO…), through the AWS SDK v3.
// Objects are `<prefix><key>`. Uploads stream through s3-part-upload.ts: one PutObject for a
// small body, a multipart upload of 8 MiB parts (4 in flight, 5 reused buffers: 40 MiB) for a
// large one; on any failure the multipart upload is aborted, so nothing partial stays (a crash is
// the exception: listPartial/discardPartial and the reconciler handle those). An object is only
// visible once complete: S3 never shows an unfinished multipart upload.
// With non-AWS stores the SDK's default checksums (aws-chunked trailers) are refused by some
// gateways (Ceph 16 answers 411): checksums are sent only when the operation requires them.

import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  type GetObjectCommandOutput,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import type { S3Config } from '../../../app/config.js';
import { unavailableFor } from '../../errors.js';
import {
  BLOB_KEY,
  type BlobStat,
  type BlobStore,
  type ByteRange,
  isListedBlob,
  type ListedBlob,
  type PartialWrite,
  type SmallBlob,
} from '../blob-store.js';
import { BoundedHttpAgent, BoundedHttpsAgent } from './s3-agents.js';
import { uploadObject } from './s3-part-upload.js';

const MiB = 1024 * 1024;

/** REMESSA_S3_* (config.ts), plus tuning the benchmarks and tests may change. */
export interface S3Settings extends S3Config {
  /** Multipart part size and parts in flight (memory per upload ≈ partSize × (queueSize + 1)). */
  partSize?: number;
  queueSize?: number;
  /** Bounds on a silent store (REMESSA_CONNECT_TIMEOUT_SECONDS, REMESSA_BACKEND_TIMEOUT_SECONDS). */
  connectTimeoutSeconds?: number;
  backendTimeoutSeconds?: number;
}

function isNotFound(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NotFound' || e.name === 'NoSuchKey' || e.$metadata?.httpStatusCode === 404;
}

export class S3BlobStore implements BlobStore {
  readonly description: string;
  readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;
  private readonly partSize: number;
  private readonly queueSize: number;
  /** How long each start-up probe (open()) may take in all, retries included. */
  private readonly probeMs: number;

  constructor(s: S3Settings) {
    // The SDK warns on stderr that releases after January 2027 need Node 22; the pinned release
    // supports Node 20, which Remessa still runs on (package.json pins the SDK to that line).
    process.env['AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED'] ??= 'true';
    this.bucket = s.bucket;
    this.prefix = s.prefix;
    this.partSize = s.partSize ?? 8 * MiB;
    this.queueSize = s.queueSize ?? 4;
    const timeouts = {
      connectMs: (s.connectTimeoutSeconds ?? 5) * 1000,
      idleMs: (s.backendTimeoutSeconds ?? 30) * 1000,
      // Uploads and downloads run side by side; the SDK's default of 50 sockets queued them.
      maxSockets: 256,
    };
    this.probeMs = timeouts.connectMs + timeouts.idleMs;
    this.description = `s3 bucket=${s.bucket} endpoint=${s.endpoint ?? 'aws'}${s.prefix ? ` prefix=${s.prefix}` : ''}`;
    const cfg: S3ClientConfig = {
      region: s.region,
      forcePathStyle: s.forcePathStyle,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      requestHandler: {
        httpAgent: new BoundedHttpAgent(timeouts),
        httpsAgent: new BoundedHttpsAgent(timeouts),
      },
    };
    if (s.endpoint) cfg.endpoint = s.endpoint;
    if (s.accessKeyId && s.secretAccessKey)
      cfg.credentials = { accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey };
    // The SDK locked in package.json runs on Node 20; its releases from January 2027 will need Node
    // 22, which it says on every start in a warning the operator can do nothing about (the README
    // says it once). Setting the variable yourself keeps whatever you chose.
    process.env['AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED'] ??= 'true';
    this.client = new S3Client(cfg);
    // Uploads are signed without their payload's SHA-256 (`UNSIGNED-PAYLOAD`, as the SDK itself does
    // for streamed bodies): the SDK would otherwise hash every part once more, on top of the SHA-256
    // Remessa computes of the whole file, a third of the upload's CPU. Integrity on the wire comes
    // from TLS (use an https endpoint across any untrusted network), and REMESSA_VERIFY_DOWNLOADS=
    // always checks every download against Remessa's SHA-256.
    this.client.middlewareStack.add(
      (next, context) => (args) => {
        const headers = (args.request as { headers?: Record<string, string> } | undefined)?.headers;
        const command = context.commandName;
        if (headers && (command === 'UploadPartCommand' || command === 'PutObjectCommand'))
          headers['x-amz-content-sha256'] = 'UNSIGNED-PAYLOAD';
        return next(args);
      },
      { step: 'build', name: 'remessaUnsignedPayload' },
    );
  }

  private objectKey(key: string): string {
    if (!BLOB_KEY.test(key)) throw new Error(`invalid blob key ${key}`);
    return this.prefix + key;
  }

  /** Reachable and writable: the bucket answers, and a probe object can be written and removed (503 otherwise). */
  async open(): Promise<void> {
    const where = `S3 bucket "${this.bucket}" (${this.description})`;
    // Each probe is one attempt, bounded as a whole: the SDK's retries would triple the wait for a
    // store that does not answer, and start-up says what it waits for, then gives up.
    const once = { abortSignal: AbortSignal.timeout(this.probeMs) };
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }), once);
    } catch (err) {
      // HEAD answers a missing bucket with a bare 404, which the SDK names NotFound or UnknownError.
      if ((err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404)
        throw unavailableFor(
          `${where} does not exist: create it first (docs/deploy.md, "Database and bucket")`,
        );
      throw unavailableFor(`${where} is not reachable: ${this.describeProbe(err)}`);
    }
    // The probe's name has a dot, which no blob key has, so list() never sees it.
    const probe = `${this.prefix}.remessa-probe-${randomBytes(8).toString('hex')}`;
    try {
      const write = { abortSignal: AbortSignal.timeout(this.probeMs) };
      await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: probe, Body: 'probe' }), write);
      const remove = { abortSignal: AbortSignal.timeout(this.probeMs) };
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: probe }), remove);
    } catch (err) {
      throw unavailableFor(`${where} is not writable: ${this.describeProbe(err)}`);
    }
  }

  private describeProbe(err: unknown): string {
    const e = err as { name?: string };
    return e.name === 'AbortError' || e.name === 'TimeoutError'
      ? `no answer within ${this.probeMs / 1000} s (${describe(err)})`
      : describe(err);
  }

  async put(key: string, source: Readable): Promise<{ fingerprint: string }> {
    const Key = this.objectKey(key);
    await uploadObject(source, {
      client: this.client,
      bucket: this.bucket,
      key: Key,
      partSize: this.partSize,
      queueSize: this.queueSize,
    });
    // CompleteMultipartUpload's ETag is empty on some gateways (Ceph): ask for the real one.
    const st = await this.stat(key);
    if (!st) throw new Error(`S3 object ${key} missing right after it was written`);
    return { fingerprint: st.fingerprint };
  }

  async read(key: string, range?: ByteRange): Promise<Readable> {
    const r = await this.client.send(
      new GetObjectCommand({
        Bucket: this.bucket,
        Key: this.objectKey(key),
        Range: range ? `bytes=${range.start}-${range.end}` : undefined,
      }),
    );
    return r.Body as Readable;
  }

  async readSmall(key: string, maxBytes: number): Promise<SmallBlob | null> {
    if (maxBytes <= 0) {
      const stat = await this.stat(key);
      return stat && { stat, data: null };
    }
    let r: GetObjectCommandOutput;
    try {
      // One request: the first maxBytes bytes; Content-Range tells the whole size.
      r = await this.client.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: this.objectKey(key),
          Range: `bytes=0-${maxBytes - 1}`,
        }),
      );
    } catch (err) {
      if (isNotFound(err)) return null;
      // An empty object has no byte 0: 416. Its stat says all there is.
      if ((err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 416) {
        const stat = await this.stat(key);
        return stat && { stat, data: stat.size === 0 ? Buffer.alloc(0) : null };
      }
      throw err;
    }
    const total = Number(/\/(\d+)$/.exec(r.ContentRange ?? '')?.[1] ?? r.ContentLength ?? 0);
    const stat = { size: total, fingerprint: r.ETag ?? '' };
    const body = r.Body as Readable;
    if (total > maxBytes) {
      body.destroy();
      return { stat, data: null };
    }
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(chunk as Buffer);
    return { stat, data: Buffer.concat(chunks) };
  }

  async stat(key: string): Promise<BlobStat | null> {
    try {
      const r = await this.client.send(
        new HeadObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }),
      );
      return { size: r.ContentLength ?? 0, fingerprint: r.ETag ?? '' };
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    // S3 answers 204 for a missing key too: idempotent as it is.
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }));
  }

  async *list(): AsyncIterable<ListedBlob> {
    let token: string | undefined;
    do {
      const r = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix, ContinuationToken: token }),
      );
      for (const o of r.Contents ?? []) {
        const key = (o.Key ?? '').slice(this.prefix.length);
        if (isListedBlob(key)) yield { key, modifiedAt: o.LastModified?.getTime() ?? 0, size: o.Size ?? 0 };
      }
      token = r.IsTruncated ? r.NextContinuationToken : undefined;
    } while (token);
  }

  async *listPartial(): AsyncIterable<PartialWrite> {
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    for (;;) {
      const r = await this.client.send(
        new ListMultipartUploadsCommand({
          Bucket: this.bucket,
          Prefix: this.prefix,
          KeyMarker: keyMarker,
          UploadIdMarker: uploadIdMarker,
        }),
      );
      for (const u of r.Uploads ?? []) {
        const key = (u.Key ?? '').slice(this.prefix.length);
        if (BLOB_KEY.test(key) && u.UploadId)
          yield { key, startedAt: u.Initiated?.getTime() ?? 0, ref: u.UploadId };
      }
      if (!r.IsTruncated) return;
      keyMarker = r.NextKeyMarker;
      uploadIdMarker = r.NextUploadIdMarker;
    }
  }

  async discardPartial(p: PartialWrite): Promise<void> {
    try {
      await this.client.send(
        new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: this.objectKey(p.key), UploadId: p.ref }),
      );
    } catch (err) {
      if ((err as { name?: string }).name !== 'NoSuchUpload' && !isNotFound(err)) throw err;
    }
  }

  close(): void {
    this.client.destroy();
  }
}

function describe(err: unknown): string {
  const e = err as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  const status = e.$metadata?.httpStatusCode;
  return `${e.name ?? 'Error'}${status ? ` (HTTP ${status})` : ''}${e.message && e.message !== e.name ? `: ${e.message}` : ''}`;
}
