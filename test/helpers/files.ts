// Helpers for file-transfer tests: uploads over real HTTP and a look at what the server left on
// disk and in the database (to prove failures leave nothing behind).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { STORE_IDENTITY_KEY } from '../../src/platform/blobs/store-identity.js';
import type { Database } from '../../src/platform/sql/schema.js';
import { basic, call, type TestServer } from './server.js';

export interface FileEntry {
  id: number;
  name: string;
  length: number;
  modified: number;
  linkURL: string;
  sha256: string;
  expires: number;
}

export function bytes(n: number): Buffer {
  return randomBytes(n);
}

export async function uploadMultipart(
  t: TestServer,
  auth: string,
  parts: { name?: string; filename?: string; data: Buffer }[],
  query: Record<string, string> = {},
) {
  const form = new FormData();
  for (const [i, p] of parts.entries()) {
    form.append(p.name ?? `part${i}`, new Blob([new Uint8Array(p.data)]), p.filename ?? '');
  }
  const qs = new URLSearchParams(query).toString();
  return call(`${t.base}/upload${qs ? `?${qs}` : ''}`, {
    method: 'POST',
    headers: { Authorization: auth },
    body: form,
  });
}

export function uploadRaw(t: TestServer, auth: string, data: Buffer, query: Record<string, string>) {
  return call(`${t.base}/upload?${new URLSearchParams(query)}`, {
    method: 'POST',
    headers: { Authorization: auth, 'Content-Type': 'application/octet-stream' },
    body: new Uint8Array(data),
  });
}

/** Uploads `data` as `name` (a raw body) and returns its entry: the file's id, link and the rest. */
export async function uploadFile(
  t: TestServer,
  auth: string,
  name: string,
  data: Buffer,
  /** more query parameters: recipients (m, c), destination (d), message (i) */
  query: Record<string, string> = {},
): Promise<FileEntry> {
  const r = await uploadRaw(t, auth, data, { ...query, file: name });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return (r.body['files'] as FileEntry[])[0]!;
}

export async function listArea(t: TestServer, name: string, password: string, page = 1, backup = false) {
  const r = await call(`${t.base}/download/list${backup ? '/backup' : ''}?page=${page}`, {
    headers: { Authorization: basic(name, password) },
  });
  return r.body['files'] as FileEntry[];
}

async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await walk(p)));
    else out.push(p);
  }
  return out;
}

/** The blob files of the local store under the data dir (full paths), its identity marker aside. */
export async function blobFiles(t: TestServer): Promise<string[]> {
  return (await walk(path.join(t.dataDir, 'blobs'))).filter((p) => path.basename(p) !== STORE_IDENTITY_KEY);
}

/** How many rows a table holds. */
export async function rowCount(t: TestServer, table: keyof Database): Promise<number> {
  const { db } = t.server.services;
  return Number(
    (
      await db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );
}

/** What the data dir and the database hold: blob files, temp files, file rows and links. */
export async function footprint(t: TestServer) {
  const count = (table: 'files' | 'links' | 'file_contents') => rowCount(t, table);
  return {
    // Contents live in the blob store, or in the database for small uploads (file_contents).
    blobs: (await blobFiles(t)).length + (await count('file_contents')),
    temps: (await walk(path.join(t.dataDir, 'tmp'))).length,
    files: await count('files'),
    links: await count('links'),
  };
}

/**
 * A download audit row whose outcome is recorded. The row is written before the first byte
 * (saying `"outcome":"unknown"`) and completed once the response is over.
 */
export function outcomeKnown(row: { detail: string | null }): boolean {
  return !(row.detail ?? '').includes('"outcome":"unknown"');
}

/** The download audit rows with their outcome recorded, oldest first. */
export async function finishedDownloads(t: TestServer) {
  return (await t.server.services.audit.query({ event: 'download' })).filter(outcomeKnown);
}
