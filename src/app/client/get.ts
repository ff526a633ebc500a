// `remessa get LINK`: downloads into `<name>.part`, resuming with Range (If-Range on the ETag, the
// file's SHA-256) after a cut, in this run or the next; checks the SHA-256 and only then renames
// the file to its final name, so a half file never carries it. Secure links need a PIN: --pin, or
// one is requested (sent to the recipient) and asked for on the terminal. A cut connection, a
// server that is down or a load balancer's 502/503/504 is retried on the schedule of retry.ts.
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DomainError, forbidden, invalid, unavailableFor } from '../../platform/errors.js';
import { type Progress, progress } from './progress.js';
import { Backoff, reconnecting, retryAfterMs, sleep, TRANSIENT_STATUSES } from './retry.js';

export interface GetOptions {
  out?: string;
  pin?: string;
  json: boolean;
}

export interface GotFile {
  path: string;
  length: number;
  sha256: string;
}

function nameFrom(disposition: string | null): string | undefined {
  if (!disposition) return undefined;
  const star = /filename\*=UTF-8''([^;]+)/i.exec(disposition);
  const plain = /filename="([^"]+)"/i.exec(disposition);
  const raw = star ? decodeURIComponent(star[1]!) : plain?.[1];
  // Never a path from the server: only its last part, in the current directory.
  const base = raw ? path.basename(raw.replace(/\\/g, '/')) : undefined;
  return base && base !== '.' && base !== '..' ? base : undefined;
}

async function sizeOf(p: string): Promise<number> {
  try {
    return (await stat(p)).size;
  } catch {
    return 0;
  }
}

async function envelopeDetail(res: Response): Promise<string> {
  try {
    return String(((await res.json()) as { detail?: string }).detail ?? res.statusText);
  } catch {
    return res.statusText;
  }
}

async function askPin(link: URL): Promise<string> {
  const pinUrl = new URL(link);
  pinUrl.pathname = pinUrl.pathname.replace(/\/download\/file$/, '/download/pin');
  const sent = await fetch(pinUrl, { method: 'POST' });
  if (!sent.ok) throw forbidden(`could not request a PIN: ${await envelopeDetail(sent)}`);
  process.stderr.write('A PIN was sent to the recipient of this link.\n');
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: process.stdin.isTTY });
  try {
    return (await rl.question('PIN: ')).trim();
  } finally {
    rl.close();
  }
}

/** A proxy's or server's "not now": retried like a cut connection, after Retry-After if given. */
class Unavailable extends Error {
  constructor(
    readonly status: number,
    readonly retryAfter: number | undefined,
  ) {
    super(`server unavailable (${status})`);
  }
}

async function request(url: URL, init: RequestInit): Promise<Response> {
  const res = await fetch(url, init);
  if (!TRANSIENT_STATUSES.has(res.status)) return res;
  await res.body?.cancel();
  throw new Unavailable(res.status, retryAfterMs(res.headers.get('retry-after')));
}

/**
 * Runs `attempt` until it succeeds, on the backoff's schedule. A DomainError is final; anything
 * else (a network error, Unavailable) is retried, said through `say` with `why`'s words.
 */
async function retrying<T>(
  backoff: Backoff,
  say: (line: string) => void,
  why: (err: Error) => Promise<string>,
  attempt: () => Promise<T>,
): Promise<T> {
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      if (err instanceof DomainError) throw err;
      const e = err as Error;
      const reason = e instanceof Unavailable ? e.message : await why(e);
      const retryAfter = e instanceof Unavailable ? e.retryAfter : undefined;
      const next = backoff.next(retryAfter);
      if (!next) throw unavailableFor(`download interrupted: ${reason}; run again to resume`);
      say(reconnecting(reason, next.attempt, next.ms, retryAfter !== undefined));
      await sleep(next.ms);
    }
  }
}

/** undici's "fetch failed" says nothing: its cause says what (ECONNREFUSED, other side closed). */
const causeOf = (e: Error) => (e.cause instanceof Error ? e.cause.message : e.message);

/** One request for the rest of the file, appended to the part file; returns once it ends whole. */
async function fetchRest(
  url: URL,
  etag: string,
  part: string,
  length: number,
  bar: Progress,
  backoff: Backoff,
): Promise<void> {
  const have = await sizeOf(part);
  const headers: Record<string, string> =
    have > 0 && have < length ? { Range: `bytes=${have}-`, 'If-Range': etag } : {};
  const res = await request(url, { headers });
  if (res.status !== 200 && res.status !== 206)
    throw invalid(`download refused (${res.status}): ${await envelopeDetail(res)}`);
  // 200: the server sends it all (the file changed, or no resume): start the part file over.
  const append = res.status === 206;
  let done = append ? have : 0;
  bar.resumeAt(done);
  const body = Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>);
  // Bytes arrived: this attempt moved the download forward, a later cut starts the schedule over.
  body.once('data', () => backoff.progressed());
  body.on('data', (c: Buffer) => {
    done += c.length;
    bar.update(done);
  });
  // The default mode (0666 less the umask), as curl and cp: the saved file is the user's to share.
  await pipeline(body, createWriteStream(part, { flags: append ? 'a' : 'w' }));
}

export async function get(link: string, o: GetOptions): Promise<GotFile> {
  let url: URL;
  try {
    url = new URL(link);
  } catch {
    throw invalid(`not a link: "${link}"`);
  }
  if (o.pin) url.searchParams.set('p', o.pin);
  const backoff = new Backoff();
  const say = (line: string) => process.stderr.write(`${line}\n`);
  const probe = () =>
    retrying(
      backoff,
      say,
      async (e) => `no answer (${causeOf(e)})`,
      () => request(url, { method: 'HEAD' }),
    );
  let head = await probe();
  if (head.status === 403 && !o.pin) {
    url.searchParams.set('p', await askPin(url));
    head = await probe();
  }
  if (!head.ok) {
    const why = await envelopeDetail(await fetch(url, { method: 'GET', headers: { Range: 'bytes=0-0' } }));
    throw new DomainError(
      head.status === 403 ? 'forbidden' : 'invalid',
      `download refused (${head.status}): ${why}`,
    );
  }
  const length = Number(head.headers.get('content-length'));
  const etag = head.headers.get('etag') ?? '';
  const sha256 = /^"([0-9a-f]{64})"$/.exec(etag)?.[1];
  if (!sha256) throw invalid('the server gave no SHA-256 (ETag) to check the file against');
  const final = path.resolve(o.out ?? nameFrom(head.headers.get('content-disposition')) ?? 'download');
  const part = `${final}.part`;
  const bar = progress(path.basename(final), length, o.json, 'received');
  const lost = async (e: Error) => `connection lost at ${await sizeOf(part)} bytes (${causeOf(e)})`;
  try {
    while ((await sizeOf(part)) !== length)
      await retrying(backoff, bar.note, lost, () => fetchRest(url, etag, part, length, bar, backoff));
  } catch (err) {
    bar.stop();
    throw err;
  }
  bar.finish();
  const h = createHash('sha256');
  for await (const c of createReadStream(part)) h.update(c as Buffer);
  if (h.digest('hex') !== sha256) {
    await unlink(part).catch(() => {});
    throw invalid('the downloaded file does not match its SHA-256: removed it, try again');
  }
  await rename(part, final);
  return { path: final, length, sha256 };
}
