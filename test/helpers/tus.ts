// Uploads with the official tus-js-client (interoperability is the point), and big test files on
// disk that never sit whole in memory.
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import * as tus from 'tus-js-client';

const MiB = 1024 * 1024;

/** Writes `mib` MiB of random-looking bytes to `path`; answers their SHA-256 (hex). */
export async function writeBigFile(path: string, mib: number): Promise<string> {
  const block = randomBytes(MiB);
  const hash = createHash('sha256');
  const out = createWriteStream(path);
  for (let i = 0; i < mib; i++) {
    // Every MiB differs (its index in front), so a misplaced chunk changes the hash.
    block.writeUInt32BE(i, 0);
    hash.update(block);
    if (!out.write(block)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return hash.digest('hex');
}

export interface TusOptions {
  endpoint?: string;
  uploadUrl?: string;
  auth: string;
  metadata?: Record<string, string>;
  chunkSize?: number;
  /** stop after this many bytes (onProgress) and answer the upload URL without finishing */
  stopAfter?: number;
}

/** Uploads `path`; answers the upload URL once done (or once stopped). */
export function tusUpload(path: string, opts: TusOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    const upload: tus.Upload = new tus.Upload(createReadStream(path), {
      ...(opts.endpoint ? { endpoint: opts.endpoint } : {}),
      ...(opts.uploadUrl ? { uploadUrl: opts.uploadUrl } : {}),
      headers: { Authorization: opts.auth },
      metadata: opts.metadata ?? { filename: 'big.bin' },
      ...(opts.chunkSize ? { chunkSize: opts.chunkSize } : {}),
      // Under load the server may still be storing the bytes of a cut request when the client
      // comes back (423 Locked meanwhile): keep trying for a while.
      retryDelays: [0, 200, 500, 1000, 1000, 2000, 2000, 3000, 3000, 5000, 5000, 5000, 5000],
      removeFingerprintOnSuccess: true,
      onProgress: (sent) => {
        if (opts.stopAfter !== undefined && sent >= opts.stopAfter) {
          void upload.abort(false).then(() => resolve(upload.url ?? ''));
        }
      },
      onError: reject,
      onSuccess: () => resolve(upload.url ?? ''),
    });
    upload.start();
  });
}
