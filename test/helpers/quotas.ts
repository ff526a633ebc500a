// Helpers for quota tests: uploads of every kind over HTTP, and the usage counters as the database
// holds them and as `remessa storage check` recomputes them.
import { Readable } from 'node:stream';
import { remessa } from './cli.js';
import { call, type TestServer } from './server.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');

export const QUOTA_EXCEEDED = 'quota exceeded';

/** POST /upload with a chunked raw body: no Content-Length, so the length is unknown until the end. */
export function uploadChunked(t: TestServer, auth: string, data: Buffer, name: string) {
  const body = Readable.toWeb(
    Readable.from([data.subarray(0, data.length >> 1), data.subarray(data.length >> 1)]),
  );
  return call(`${t.base}/upload?file=${encodeURIComponent(name)}`, {
    method: 'POST',
    headers: { Authorization: auth, 'Content-Type': 'application/octet-stream' },
    body: body as ReadableStream,
    duplex: 'half',
  } as RequestInit);
}

/** tus creation of an upload of `length` bytes. */
export function tusCreate(base: string, auth: string, length: number, filename: string) {
  return call(`${base}/uploads`, {
    method: 'POST',
    headers: {
      'Tus-Resumable': '1.0.0',
      Authorization: auth,
      'Upload-Length': String(length),
      'Upload-Metadata': `filename ${b64(filename)}`,
    },
  });
}

/** One PATCH of the whole body at offset 0 to a created upload's URL. */
export function tusPatch(url: string, auth: string, body: Buffer) {
  return fetch(url, {
    method: 'PATCH',
    headers: {
      'Tus-Resumable': '1.0.0',
      Authorization: auth,
      'Upload-Offset': '0',
      'Content-Type': 'application/offset+octet-stream',
    },
    body: new Uint8Array(body),
  });
}

/** The counter the database holds for `name`. */
export async function usageOf(t: TestServer, name: string): Promise<number> {
  const row = await t.server.services.db
    .selectFrom('users')
    .select('usage_bytes')
    .where('name', '=', name)
    .executeTakeFirstOrThrow();
  return Number(row.usage_bytes);
}

export interface UsageCheck {
  code: number | null;
  usage: { user: string; counted: number; recomputed: number }[];
}

/** `remessa storage check --json [--fix]` on the test server's installation. */
export async function storageCheck(env: Record<string, string>, fix = false): Promise<UsageCheck> {
  const r = await remessa(env, ['storage', 'check', '--json', ...(fix ? ['--fix'] : [])]);
  const out = JSON.parse(r.stdout) as { usage: UsageCheck['usage'] };
  return { code: r.code, usage: out.usage };
}

/** The owner token of a file entry's link. */
export function ownerToken(entry: { linkURL: string }): string {
  return new URL(entry.linkURL).searchParams.get('k')!;
}
