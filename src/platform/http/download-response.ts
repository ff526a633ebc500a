// Sends a stored file over HTTP: Content-Type/Disposition/Length, ETag (from the SHA-256),
// Last-Modified, a single Range (206/416), conditional GET (304), HEAD, and integrity checking.
import { createHash } from 'node:crypto';
import { type Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { BlobAccess, DownloadOutcome } from '../../features/files/download.js';
import type { ByteRange } from '../blobs/blob-store.js';
import { received } from '../memory.js';
import type { FileRow } from '../sql/schema.js';
import { AppError } from './http-error.js';

/** Files up to this size are answered from one read into memory instead of a stream. */
const SMALL_FILE = 64 * 1024;

/** With verify 'always', files up to this size are re-hashed before the first byte is sent. */
const VERIFY_BEFORE_SEND = 16 * 1024 * 1024;

export function contentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  const encoded = encodeURIComponent(name).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

/** Parses a single-range `bytes=` header. null: ignore the header (absent, multi-range, other unit). */
export function parseRange(header: string | undefined, size: number): ByteRange | 'unsatisfiable' | null {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m) return null;
  const [, a, b] = m;
  if (a === '' && b === '') return null;
  let start: number;
  let end: number;
  if (a === '') {
    const suffix = Number(b);
    if (suffix === 0) return 'unsatisfiable';
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(a);
    end = b === '' ? size - 1 : Math.min(Number(b), size - 1);
    if (b !== '' && Number(b) < start) return null;
  }
  if (start >= size || size === 0) return 'unsatisfiable';
  return { start, end };
}

function etagOf(file: FileRow): string {
  return `"${file.sha256}"`;
}

function notModified(request: FastifyRequest, file: FileRow): boolean {
  const inm = request.headers['if-none-match'];
  if (inm !== undefined) {
    const tag = etagOf(file);
    return inm.split(',').some((t) => {
      const v = t.trim();
      return v === '*' || v === tag || v === `W/${tag}`;
    });
  }
  const ims = request.headers['if-modified-since'];
  if (ims) {
    const since = Date.parse(ims);
    return !Number.isNaN(since) && Math.floor(file.created_at / 1000) * 1000 <= since;
  }
  return false;
}

/**
 * Counts bytes on their way out and, given the expected SHA-256, holds back the last chunk until
 * the hash is known: a corrupted blob never completes as a valid download (the client sees a broken
 * transfer instead of wrong bytes).
 */
class DownloadMeter extends Transform {
  bytes = 0;
  private readonly hash;
  private held: Buffer | null = null;
  constructor(
    private readonly expected: string | null,
    private readonly onMismatch: () => void,
  ) {
    super({ highWaterMark: 1 << 20 });
    this.hash = expected ? createHash('sha256') : null;
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.bytes += chunk.length;
    received(chunk.length);
    if (!this.hash) {
      cb(null, chunk);
      return;
    }
    this.hash.update(chunk);
    const prev = this.held;
    this.held = chunk;
    cb(null, prev ?? undefined);
  }
  override _flush(cb: TransformCallback): void {
    if (this.hash && this.hash.digest('hex') !== this.expected) {
      this.onMismatch();
      cb(new Error('stored contents do not match their SHA-256'));
      return;
    }
    cb(null, this.held ?? undefined);
  }
}

function sha256Of(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

async function hashOf(stream: NodeJS.ReadableStream): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of stream) h.update(chunk as Buffer);
  return h.digest('hex');
}

/** The headers that describe the file; taken back when the answer becomes an error instead. */
const FILE_HEADERS = [
  'Content-Type',
  'Content-Disposition',
  'ETag',
  'Last-Modified',
  'Accept-Ranges',
  'Cache-Control',
  'Content-Range',
  'Content-Length',
];

/**
 * Answers a download request for `file`. Resolves with what reached the client once the response
 * is over (finished or aborted); errors before the first byte become envelopes via AppError.
 * `beforeBody` runs once it is certain that a body will be sent (not for HEAD, 304 or an error)
 * and before its first byte: the download's audit row. If it fails, no byte is sent.
 */
export async function sendStoredFile(
  request: FastifyRequest,
  reply: FastifyReply,
  file: FileRow,
  blob: BlobAccess,
  beforeBody: (range: ByteRange | null) => Promise<void>,
): Promise<DownloadOutcome> {
  reply.header('Content-Type', file.content_type);
  reply.header('Content-Disposition', contentDisposition(file.name));
  reply.header('ETag', etagOf(file));
  reply.header('Last-Modified', new Date(file.created_at).toUTCString());
  reply.header('Accept-Ranges', 'bytes');
  reply.header('Cache-Control', 'private, no-cache');

  if (notModified(request, file)) {
    await reply.code(304).send();
    return { complete: false, bytes: 0, range: null };
  }

  // Integrity: the blob must still be the one written. A changed fingerprint (rewritten,
  // touched, restored from backup) means re-hashing it all before the first byte, so damage is a
  // clean 500 instead of wrong bytes; an unchanged blob streams at full speed.
  // A small file is read whole with its stat (one open, one read) and answered from that buffer.
  const small =
    request.method !== 'HEAD' && file.length <= SMALL_FILE ? await blob.readSmall(SMALL_FILE) : undefined;
  const st = small === undefined ? await blob.stat() : small?.stat;
  const data = small?.data ?? null;
  if (!st || st.size !== file.length || (data && data.length !== file.length)) {
    await blob.corrupt(st ? `size ${st.size} instead of ${file.length}` : 'contents missing');
    throw new AppError(500, 'stored file is damaged');
  }
  const contentsHash = async () => (data ? sha256Of(data) : hashOf(await blob.open()));
  if (st.fingerprint !== file.blob_fingerprint && request.method !== 'HEAD') {
    if ((await contentsHash()) !== file.sha256) {
      await blob.corrupt('SHA-256 mismatch');
      throw new AppError(500, 'stored file is damaged');
    }
    await blob.verified(st.fingerprint);
  }

  const ifRange = request.headers['if-range'];
  const rangeAllowed = !ifRange || ifRange === etagOf(file);
  const range = rangeAllowed ? parseRange(request.headers.range, file.length) : null;
  if (range === 'unsatisfiable') {
    reply.header('Content-Range', `bytes */${file.length}`);
    throw new AppError(416);
  }
  const length = range ? range.end - range.start + 1 : file.length;
  if (range) {
    reply.code(206);
    reply.header('Content-Range', `bytes ${range.start}-${range.end}/${file.length}`);
  }
  reply.header('Content-Length', String(length));

  if (request.method === 'HEAD') {
    await reply.send();
    return { complete: false, bytes: 0, range };
  }

  // REMESSA_VERIFY_DOWNLOADS=always also catches silent media errors on every full download:
  // small files are re-hashed first (clean 500), large ones in passing (a broken transfer).
  const always = blob.verify === 'always' && !range && st.fingerprint === file.blob_fingerprint;
  if (always && file.length <= VERIFY_BEFORE_SEND && (await contentsHash()) !== file.sha256) {
    await blob.corrupt('SHA-256 mismatch');
    throw new AppError(500, 'stored file is damaged');
  }
  const verifyInPassing = always && file.length > VERIFY_BEFORE_SEND ? file.sha256 : null;
  const res = reply.raw;
  try {
    await beforeBody(range);
  } catch (err) {
    for (const h of FILE_HEADERS) reply.removeHeader(h);
    reply.code(200);
    throw err;
  }

  if (data) return respondBuffer(reply, range ? data.subarray(range.start, range.end + 1) : data, range);

  // The fast path: the store moves the bytes into the socket itself (local store: sendfile(2), on
  // plain HTTP), unless they must be hashed in passing.
  const body = verifyInPassing ? null : await blob.directBody?.(res, range?.start ?? 0, length);
  if (body) {
    return respond(
      reply,
      body,
      range,
      blob,
      () => body.progress(),
      () => body.settled,
    );
  }

  const meter = new DownloadMeter(
    verifyInPassing,
    () => void blob.corrupt('SHA-256 mismatch during download'),
  );
  const source = await blob.open(range ?? undefined);
  // pipeline ties the two together: a client that goes away destroys the meter, which closes the
  // file at once instead of leaving the descriptor to the garbage collector.
  pipeline(source, meter).catch(() => {});
  const sent = () => meter.bytes;
  return respond(reply, meter, range, blob, sent, async () => sent());
}

/**
 * Sends a small body from memory: one write, no file left open, so no stall watchdog either (a
 * client that reads nothing holds only its socket, as any other idle connection does).
 */
function respondBuffer(reply: FastifyReply, body: Buffer, range: ByteRange | null): Promise<DownloadOutcome> {
  const res = reply.raw;
  // Gone while the file was being read: 'close' has fired already.
  if (res.destroyed || reply.request.raw.socket.destroyed)
    return Promise.resolve({ complete: false, bytes: 0, range });
  const done = new Promise<DownloadOutcome>((resolve) => {
    res.once('close', () =>
      resolve({
        complete: !range && res.writableFinished,
        bytes: res.writableFinished ? body.length : 0,
        range,
      }),
    );
  });
  reply.send(body);
  return done;
}

/**
 * Sends `body` and resolves with the outcome once the response is over, finished or not. A
 * client that takes nothing for `stallSeconds` is cut off: it would otherwise hold its connection
 * and file open forever, as Node has no write timeout (and cannot see sendfile's writes at all).
 * `progress` is the bytes sent so far; `finalBytes` the count once the body has let go of the file.
 */
function respond(
  reply: FastifyReply,
  body: Readable,
  range: ByteRange | null,
  blob: Pick<BlobAccess, 'stallSeconds' | 'now'>,
  progress: () => number,
  finalBytes: () => Promise<number>,
): Promise<DownloadOutcome> {
  const { stallSeconds } = blob;
  const now = () => blob.now();
  const res = reply.raw;
  const outcome = async (): Promise<DownloadOutcome> => ({
    complete: !range && res.writableFinished,
    bytes: await finalBytes(),
    range,
  });
  // (res.socket is null for a pipelined request waiting its turn; the request keeps its socket.)
  if (res.destroyed || reply.request.raw.socket.destroyed) {
    // Gone while the file was being opened: 'close' has fired already.
    body.destroy();
    return outcome();
  }
  // Checked every second against the server clock, so a stall is cut within stallSeconds + 1s.
  let last = progress();
  let lastMoved = now();
  const watchdog = setInterval(() => {
    const sent = progress();
    if (sent !== last) {
      last = sent;
      lastMoved = now();
      return;
    }
    if (now() - lastMoved < stallSeconds * 1000) return;
    // A reset, not a close: a close would queue the FIN behind the unread data, so the kernel
    // would keep the connection (and sendfile's duplicate of it) alive for as long as it waits.
    reply.log.warn({ stallSeconds, bytes: sent }, 'download stalled: client took nothing; connection reset');
    clearInterval(watchdog);
    reply.request.raw.socket.resetAndDestroy();
  }, 1000);
  const done = new Promise<DownloadOutcome>((resolve) => {
    res.once('close', () => {
      clearInterval(watchdog);
      if (!res.writableFinished) body.destroy();
      resolve(outcome());
    });
  });
  reply.send(body);
  return done;
}
