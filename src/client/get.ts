// `remessa get LINK`: downloads into `<name>.part`, resuming with Range (If-Range on the ETag, the
// file's SHA-256) after a cut, in this run or the next; checks the SHA-256 and only then renames
// the file to its final name, so a half file never carries it. Secure links need a PIN: --pin, or
// one is requested (sent to the recipient) and asked for on the terminal.
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { AppError } from '../errors.js';
import { progress } from './progress.js';

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

/**
 * Attempts in a row that brought no byte before giving up. A cut after progress starts the count
 * again: a long download over a network that drops every few megabytes still arrives, however
 * many drops it takes, while a server that is gone (or restarting) gets ~25 s of backing off.
 */
const FRUITLESS_ATTEMPTS = 8;
/** The wait before the next attempt doubles with each fruitless one, up to this. */
const MAX_BACKOFF_MS = 8000;

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
  if (!sent.ok) throw new AppError(403, `could not request a PIN: ${await envelopeDetail(sent)}`);
  process.stderr.write('A PIN was sent to the recipient of this link.\n');
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: process.stdin.isTTY });
  try {
    return (await rl.question('PIN: ')).trim();
  } finally {
    rl.close();
  }
}

export async function get(link: string, o: GetOptions): Promise<GotFile> {
  let url: URL;
  try {
    url = new URL(link);
  } catch {
    throw new AppError(400, `not a link: "${link}"`);
  }
  if (o.pin) url.searchParams.set('p', o.pin);
  let head = await fetch(url, { method: 'HEAD' });
  if (head.status === 403 && !o.pin) {
    url.searchParams.set('p', await askPin(url));
    head = await fetch(url, { method: 'HEAD' });
  }
  if (!head.ok) {
    const why = await envelopeDetail(await fetch(url, { method: 'GET', headers: { Range: 'bytes=0-0' } }));
    throw new AppError(head.status === 403 ? 403 : 400, `download refused (${head.status}): ${why}`);
  }
  const length = Number(head.headers.get('content-length'));
  const etag = head.headers.get('etag') ?? '';
  const sha256 = /^"([0-9a-f]{64})"$/.exec(etag)?.[1];
  if (!sha256) throw new AppError(400, 'the server gave no SHA-256 (ETag) to check the file against');
  const final = path.resolve(o.out ?? nameFrom(head.headers.get('content-disposition')) ?? 'download');
  const part = `${final}.part`;
  const bar = progress(path.basename(final), length, o.json);
  let fruitless = 0;
  for (;;) {
    const have = await sizeOf(part);
    if (have === length) break;
    const headers: Record<string, string> =
      have > 0 && have < length ? { Range: `bytes=${have}-`, 'If-Range': etag } : {};
    let received = 0;
    try {
      const res = await fetch(url, { headers });
      if (res.status !== 200 && res.status !== 206)
        throw new AppError(400, `download refused (${res.status}): ${await envelopeDetail(res)}`);
      // 200: the server sends it all (the file changed, or no resume): start the part file over.
      const append = res.status === 206;
      let done = append ? have : 0;
      const body = Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>);
      body.on('data', (c: Buffer) => {
        received += c.length;
        done += c.length;
        bar.update(done);
      });
      await pipeline(body, createWriteStream(part, { flags: append ? 'a' : 'w', mode: 0o600 }));
    } catch (err) {
      fruitless = received > 0 ? 1 : fruitless + 1;
      if (err instanceof AppError || fruitless >= FRUITLESS_ATTEMPTS) {
        bar.stop();
        throw err instanceof AppError
          ? err
          : new AppError(503, `download interrupted (${(err as Error).message}); run again to resume`);
      }
      process.stderr.write(`connection lost at ${await sizeOf(part)} bytes; resuming\n`);
      await new Promise((r) => setTimeout(r, Math.min(250 * 2 ** (fruitless - 1), MAX_BACKOFF_MS)));
    }
  }
  bar.stop();
  const h = createHash('sha256');
  for await (const c of createReadStream(part)) h.update(c as Buffer);
  if (h.digest('hex') !== sha256) {
    await unlink(part).catch(() => {});
    throw new AppError(400, 'the downloaded file does not match its SHA-256: removed it, try again');
  }
  await rename(part, final);
  return { path: final, length, sha256 };
}
