// Recipients' links for tests: a file sent to recipients, their tokens (opened from the stored
// sealed copy, as the outbox would have sent them), downloads with each, and the owner's controls.
import { uploadFile } from './files.js';
import { basic, call, type TestServer } from './server.js';

export interface SentFile {
  id: number;
  /** the owner's link token */
  k: string;
  linkURL: string;
}

/** Uploads `name` as alice (password alice-password-1) to the e-mail recipients `to`. */
export async function sendTo(t: TestServer, to: string[], name = 'report.pdf'): Promise<SentFile> {
  const entry = await uploadFile(t, basic('alice', 'alice-password-1'), name, Buffer.alloc(4096, 7), {
    m: to.join(','),
  });
  return { id: entry.id, k: new URL(entry.linkURL).searchParams.get('k')!, linkURL: entry.linkURL };
}

/** The token of the recipient link of `email` for file `fileId`. */
export async function recipientToken(t: TestServer, fileId: number, email: string): Promise<string> {
  const { db, keys } = t.server.services;
  const row = await db
    .selectFrom('links')
    .select('token_sealed')
    .where('file_id', '=', fileId)
    .where('recipient_email', '=', email)
    .executeTakeFirstOrThrow();
  return keys.unseal(row.token_sealed);
}

/** The status of a download with `token` (the body read to its end: a complete download). */
export async function downloadStatus(t: TestServer, token: string, headers: Record<string, string> = {}) {
  const r = await fetch(`${t.base}/download/file?k=${encodeURIComponent(token)}`, { headers });
  await r.arrayBuffer();
  return r.status;
}

export const revokeLink = (t: TestServer, k: string, to: string) =>
  call(`${t.base}/download/revoke?k=${encodeURIComponent(k)}&to=${encodeURIComponent(to)}`, {
    method: 'POST',
  });

export const changeLink = (t: TestServer, k: string, body: object, to?: string) =>
  call(`${t.base}/download/link?k=${encodeURIComponent(k)}${to ? `&to=${encodeURIComponent(to)}` : ''}`, {
    method: 'PATCH',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });

export const deleteFile = (t: TestServer, k: string) =>
  call(`${t.base}/download/file?k=${encodeURIComponent(k)}`, { method: 'DELETE' });
