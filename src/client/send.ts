// `remessa send`: uploads files with tus (tus-js-client), resuming an interrupted upload of the
// same file (its fingerprint and upload URL are kept in the config directory), then asks the
// server for each file's entry (GET {base}/uploads/{id}) to print its link.
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import * as tus from 'tus-js-client';
import { AppError } from '../errors.js';
import { progress } from './progress.js';
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

async function sendOne(file: string, o: SendOptions): Promise<SentEntry> {
  const size = (await stat(file)).size;
  const auth = authorization(o.server);
  const metadata: Record<string, string> = { filename: path.basename(file) };
  if (o.to) metadata['d'] = o.to;
  if (o.email) metadata['m'] = o.email;
  if (o.mobile) metadata['c'] = o.mobile;
  if (o.message) metadata['i'] = o.message;
  const bar = progress(path.basename(file), size, o.json);
  const url = await new Promise<string>((resolve, reject) => {
    const upload: tus.Upload = new tus.Upload(createReadStream(file), {
      endpoint: `${o.server}/uploads`,
      headers: { Authorization: auth },
      metadata,
      uploadSize: size,
      urlStorage: new FileUrlStorage(path.join(configDir(), 'uploads.json')),
      storeFingerprintForResuming: true,
      removeFingerprintOnSuccess: true,
      // A dropped connection is retried at once, then with growing pauses (about a minute in all).
      retryDelays: [0, 1000, 3000, 5000, 10000, 20000],
      onProgress: (sent) => bar.update(sent),
      onError: (err) => {
        bar.stop();
        reject(err);
      },
      onSuccess: () => {
        bar.stop();
        resolve(upload.url ?? '');
      },
    });
    upload
      .findPreviousUploads()
      .then((previous) => {
        if (previous[0]) {
          process.stderr.write(`${path.basename(file)}: resuming an interrupted upload\n`);
          upload.resumeFromPreviousUpload(previous[0]);
        }
        upload.start();
      })
      .catch(reject);
  }).catch((err: unknown) => {
    // tus-js-client's errors carry the response; the server's envelope says what was wrong.
    const res = (err as { originalResponse?: { getStatus(): number; getBody(): string } }).originalResponse;
    if (res) {
      let detail = '';
      try {
        detail = String((JSON.parse(res.getBody()) as { detail?: string }).detail ?? '');
      } catch {}
      throw new AppError(
        400,
        `${path.basename(file)}: upload refused (${res.getStatus()})${detail ? `: ${detail}` : ''}`,
      );
    }
    throw new AppError(
      503,
      `${path.basename(file)}: upload interrupted (${(err as Error).message}); run again to resume`,
    );
  });
  const res = await fetch(new URL(url, o.server), { headers: { Authorization: auth } });
  const body = (await res.json()) as { files?: SentEntry[]; detail?: string };
  if (!res.ok || !body.files?.[0])
    throw new AppError(503, `upload finished but no entry: ${body.detail ?? res.status}`);
  return body.files[0];
}

export async function send(files: string[], o: SendOptions): Promise<SentEntry[]> {
  const out: SentEntry[] = [];
  for (const f of files) out.push(await sendOne(f, o));
  return out;
}
