// Helpers of the admin API's tests: accounts with a role, GETs and POSTs under {base}/admin, audit
// rows written straight into the database (a known trail, or a large one).
import assert from 'node:assert/strict';
import v8 from 'node:v8';
import vm from 'node:vm';
import { type CompiledQuery, type Insertable, sql } from 'kysely';
import type { Db } from '../../src/platform/sql/database.js';
import type { AuditTable } from '../../src/platform/sql/schema.js';
import { inTransaction } from '../../src/platform/sql/transaction.js';
import { basic, call, type TestServer } from './server.js';

export type Role = 'user' | 'auditor' | 'admin';

/** Creates an account with `role` and returns its Basic credentials. */
export async function accountWithRole(t: TestServer, name: string, role: Role): Promise<string> {
  const password = `${name}-password-1`;
  await t.createUser(name, password);
  await t.server.services.db
    .updateTable('users')
    .set({ role })
    .where('name_key', '=', name.toLowerCase())
    .execute();
  return basic(name, password);
}

/** GET {base}/admin{path} as `auth`; the body parsed. */
export function adminGet(t: TestServer, path: string, auth: string) {
  return call(`${t.base}/admin${path}`, { headers: { Authorization: auth } });
}

export function adminPost(t: TestServer, path: string, auth: string) {
  return call(`${t.base}/admin${path}`, { method: 'POST', headers: { Authorization: auth } });
}

export type AuditInsert = Insertable<AuditTable>;

/** Writes audit rows directly, in statements of 500 rows, in one transaction; returns their ids in order. */
export function insertAudit(t: TestServer, rows: AuditInsert[]): Promise<number[]> {
  return inTransaction(t.server.services.db, (db) => insertRows(db, rows));
}

async function insertRows(db: Db, rows: AuditInsert[]): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < rows.length; i += 500) {
    const inserted = await db
      .insertInto('audit')
      .values(rows.slice(i, i + 500))
      .returning('id')
      .execute();
    ids.push(...inserted.map((r) => Number(r.id)).sort((a, b) => a - b));
  }
  return ids;
}

/** An answer's error envelope with `status`, and its detail matching `detail`. */
export function assertRefused(
  r: { status: number; body: Record<string, unknown> },
  status: number,
  detail?: RegExp,
): void {
  assert.equal(r.status, status, JSON.stringify(r.body));
  assert.equal(r.body['status'], status);
  if (detail) assert.match(String(r.body['detail']), detail);
}

/** The success envelope's keys, then `more`, in that order. */
export const envelopeKeys = (...more: string[]) => [
  'status',
  'description',
  'apiver',
  'time',
  'user',
  ...more,
];

/**
 * Reads a streamed answer chunk by chunk, keeping none of it: its size, its CRLFs, its start.
 * `onBytes` is told the bytes read so far after each chunk.
 */
export async function drainCsv(
  res: Response,
  onBytes: (bytes: number) => void,
): Promise<{ bytes: number; lines: number; head: string }> {
  const reader = res.body!.getReader();
  let bytes = 0;
  let lines = 0;
  let head = '';
  let previous = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const chunk = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
    for (let i = chunk.indexOf(0x0a); i >= 0; i = chunk.indexOf(0x0a, i + 1))
      if ((i > 0 ? chunk[i - 1] : previous) === 0x0d) lines++;
    previous = chunk[chunk.length - 1] ?? previous;
    if (head.length < 400) head += chunk.subarray(0, 400).toString('utf8');
    bytes += chunk.length;
    onBytes(bytes);
  }
  return { bytes, lines, head };
}

/**
 * The heap's live size after a full collection (V8's gc(), reached at run time: the test runner
 * starts no process with --expose-gc), so garbage not collected yet does not count.
 */
export function liveHeap(): number {
  v8.setFlagsFromString('--expose-gc');
  (vm.runInNewContext('gc') as () => void)();
  return process.memoryUsage().heapUsed;
}

/** SQLite's EXPLAIN QUERY PLAN of a compiled query, its values (numbers, plain strings) inlined. */
export async function sqlitePlan(t: TestServer, query: CompiledQuery): Promise<string> {
  const inlined = query.parameters.reduce<string>(
    (text, p) => text.replace('?', typeof p === 'number' ? String(p) : `'${String(p)}'`),
    query.sql,
  );
  const plan = await sql
    .raw<{ detail: string }>(`explain query plan ${inlined}`)
    .execute(t.server.services.db);
  return plan.rows.map((r) => r.detail).join('; ');
}
