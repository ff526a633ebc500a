// `remessa send`: uploads files with tus (tus-js-client), resuming an interrupted upload of the
// same file (its fingerprint and upload URL are kept in the config directory), then asks the
// server for each file's entry (GET {base}/uploads/{id}) to print its link. The file goes in
// chunks, one PATCH each: the server keeps a PATCH's bytes when its request ends, so a server
// killed or restarted mid-upload loses at most the chunk in flight, not everything sent so far.
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import * as tus from 'tus-js-client';
import { DomainError, invalid, unavailableFor } from '../../platform/errors.js';
import { mib, progress } from './progress.js';
import { RETRY_DELAYS_MS, reconnecting } from './retry.js';
import { authorization, configDir } from './session.js';

// Node's build exports it; the bundled type declarations only know the browser's storages.
const { FileUrlStorage } = tus as unknown as { FileUrlStorage: new (file: string) => tus.UrlStorage };

export interface SendOptions {
  server: string;
  to?: string;
  email?: string;
  mobile?: string;
  message?: string;
  json: boolean;
}

export interface SentEntry {
  id: number;
  name: string;
  length: number;
  linkURL: string;
  sha256: string;
  [k: string]: unknown;
}

const MiB = 1024 * 1024;

/** Bytes per PATCH: REMESSA_CLIENT_CHUNK_BYTES, default 64 MiB (re-sent at most after a restart). */
function chunkBytes(): number {
  const raw = process.env['REMESSA_CLIENT_CHUNK_BYTES'];
  if (raw === undefined || raw === '') return 64 * MiB;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1)
    throw invalid(`REMESSA_CLIENT_CHUNK_BYTES must be a whole number of bytes, got "${raw}"`);
  return n;
}

/** The size of a file to send; a clear message, not a stack trace, when it cannot be read. */
async function readableSize(file: string): Promise<number> {
  try {
    const fh = await open(file, 'r');
    try {
      const s = await fh.stat();
      if (!s.isFile()) throw invalid(`cannot read ${file}: not a file`);
      return s.size;
    } finally {
      await fh.close();
    }
  } catch (err) {
    if (err instanceof DomainError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT' || code === 'ENOTDIR'
        ? 'no such file'
        : code === 'EACCES' || code === 'EPERM'
          ? 'permission denied'
          : (err as Error).message;
    throw invalid(`cannot read ${file}: ${why}`);
  }
}

/** What went wrong with a request tus-js-client will retry, in a few words. */
function failure(err: tus.DetailedError): string {
  const status = err.originalResponse?.getStatus();
  if (status) return status >= 500 ? `server unavailable (${status})` : `server answered ${status}`;
  return `connection lost (${err.causingError?.message ?? err.message})`;
}

/** Drops the record of a finished upload, so that the file's next send is a new upload. */
async function forget(storage: tus.UrlStorage, url: string): Promise<void> {
  for (const u of await storage.findAllUploads())
    if (u.uploadUrl === url) await storage.removeUpload(u.urlStorageKey);
}

/** tus-js-client's errors carry the response; the server's envelope says what was wrong. */
function uploadError(name: string, err: unknown): DomainError {
  const e = err as tus.DetailedError;
  const res = e.originalResponse;
  const status = res?.getStatus() ?? 0;
  if (res && !(status >= 500 || status === 409 || status === 423)) {
    let detail = '';
    try {
      detail = String((JSON.parse(res.getBody()) as { detail?: string }).detail ?? '');
    } catch {}
    return invalid(`${name}: upload refused (${status})${detail ? `: ${detail}` : ''}`);
  }
  const why = e.originalRequest ? failure(e) : String(err);
  return unavailableFor(`${name}: upload interrupted: ${why}; run again to resume`);
}

async function sendOne(file: string, size: number, o: SendOptions): Promise<SentEntry> {
  const auth = authorization(o.server);
  const metadata: Record<string, string> = { filename: path.basename(file) };
  if (o.to) metadata['d'] = o.to;
  if (o.email) metadata['m'] = o.email;
  if (o.mobile) metadata['c'] = o.mobile;
  if (o.message) metadata['i'] = o.message;
  const chunkSize = chunkBytes();
  const storage = new FileUrlStorage(path.join(configDir(), 'uploads.json'));
  const bar = progress(path.basename(file), size, o.json);
  let resuming = false;
  let retried = false;
  const url = await new Promise<string>((resolve, reject) => {
    const upload: tus.Upload = new tus.Upload(createReadStream(file), {
      endpoint: `${o.server}/uploads`,
      headers: { Authorization: auth },
      metadata,
      uploadSize: size,
      urlStorage: storage,
      storeFingerprintForResuming: true,
      // Forgotten in onSuccess, waited for: tus-js-client does not wait, and a record still there
      // when the command exits made the next send of the same file "resume" the finished upload
      // and print its old link, announcing nothing to the new recipients.
      removeFingerprintOnSuccess: false,
      chunkSize,
      retryDelays: RETRY_DELAYS_MS,
      // tus-js-client's own rule (not a 4xx other than 409 and 423), said on screen.
      onShouldRetry: (err, attempt) => {
        const status = err.originalResponse?.getStatus() ?? 0;
        if (status >= 400 && status < 500 && status !== 409 && status !== 423) return false;
        retried = true;
        bar.note(reconnecting(failure(err), attempt + 1, RETRY_DELAYS_MS[attempt] ?? 0));
        return true;
      },
      // The server's offset, at the start and after each reconnection: where this run goes on from.
      onAfterResponse: (req, res) => {
        if (req.getMethod() !== 'HEAD') return;
        const offset = Number(res.getHeader('Upload-Offset') ?? Number.NaN);
        if (Number.isSafeInteger(offset)) {
          bar.resumeAt(offset);
          if (resuming) bar.note(`resuming an interrupted upload at ${mib(offset)} of ${mib(size)} MiB`);
          else if (retried) bar.note(`reconnected; going on from ${mib(offset)} MiB`);
        }
        resuming = retried = false;
      },
      onProgress: (sent) => bar.update(sent),
      onError: (err) => {
        bar.stop();
        reject(err);
      },
      onSuccess: () => {
        bar.finish();
        const done = upload.url ?? '';
        forget(storage, done)
          .catch((err: Error) => bar.note(`could not forget the finished upload: ${err.message}`))
          .then(() => resolve(done));
      },
    });
    upload
      .findPreviousUploads()
      .then((previous) => {
        if (previous[0]) {
          resuming = true;
          upload.resumeFromPreviousUpload(previous[0]);
        }
        upload.start();
      })
      .catch(reject);
  }).catch((err: unknown) => {
    throw uploadError(path.basename(file), err);
  });
  const res = await fetch(new URL(url, o.server), { headers: { Authorization: auth } });
  const body = (await res.json()) as { files?: SentEntry[]; detail?: string };
  if (!res.ok || !body.files?.[0])
    throw unavailableFor(`upload finished but no entry: ${body.detail ?? res.status}`);
  return body.files[0];
}

export async function send(files: string[], o: SendOptions): Promise<SentEntry[]> {
  // Every file is checked first: a typo in the last name fails before the others are sent.
  const sizes: number[] = [];
  for (const f of files) sizes.push(await readableSize(f));
  const out: SentEntry[] = [];
  for (const [i, f] of files.entries()) out.push(await sendOne(f, sizes[i]!, o));
  return out;
}
