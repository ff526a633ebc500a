// `remessa audit --user` (AuditLog.query): user names match case-insensitively, through the index
// on lower(user_name) (migration 0019) instead of a read of the whole trail.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { type Compilable, sql } from 'kysely';
import type { AuditLog } from '../src/features/audit/audit-log.js';
import { type OpenDatabase, openDatabase } from '../src/platform/sql/database.js';
import { auditLogOn } from './helpers/audit.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';

const available = await postgresAvailable();
if (!available && PG_REQUIRED) throw new Error(PG_SKIP);

/** 300 rows of three users, one of them written in capitals; checks what --user finds. */
async function exercise(database: OpenDatabase, audit: AuditLog): Promise<void> {
  const names = ['alice', 'BOB', 'carol'];
  for (let i = 0; i < 300; i++)
    await database.db
      .insertInto('audit')
      .values({ at: 1000 + i, event: 'login', user_name: names[i % 3]!, detail: String(i) })
      .execute();
  const bob = await audit.query({ user: 'bob' });
  assert.equal(bob.length, 100);
  assert.ok(bob.every((r) => r.user_name === 'BOB'));
  assert.deepEqual(
    bob.slice(0, 3).map((r) => r.detail),
    ['1', '4', '7'],
    'oldest first',
  );
  const recent = await audit.query({ user: 'Alice', since: 1000 + 270 });
  assert.deepEqual(
    recent.map((r) => r.detail),
    ['270', '273', '276', '279', '282', '285', '288', '291', '294', '297'],
  );
  // Rows without a user are not in the user index, and no --user query finds them.
  await database.db.insertInto('audit').values({ at: 2000, event: 'download', detail: 'anon' }).execute();
  assert.equal((await audit.query({ user: 'bob' })).length, 100);
  // The per-address failure budget counts failed sign-ins only, from that address, since a time.
  for (const [event, remote, at] of [
    ['login.failed', '192.0.2.1', 3000],
    ['login.failed', '192.0.2.1', 3010],
    ['login.failed', '192.0.2.2', 3010],
    ['download', '192.0.2.1', 3010],
    ['login.failed', '192.0.2.1', 2990],
  ] as const)
    await database.db.insertInto('audit').values({ at, event, remote, detail: null }).execute();
  assert.equal(await audit.countFailedLogins('192.0.2.1', 3000), 2);
}

/** EXPLAIN QUERY PLAN of a compiled query, its values (numbers, plain strings) inlined. */
async function sqlitePlan(database: OpenDatabase, query: Compilable): Promise<string> {
  const { sql: text, parameters } = query.compile();
  const inlined = parameters.reduce<string>(
    (s, p) => s.replace('?', typeof p === 'number' ? String(p) : `'${String(p)}'`),
    text,
  );
  const plan = await sql.raw<{ detail: string }>(`explain query plan ${inlined}`).execute(database.db);
  return plan.rows.map((r) => r.detail).join('; ');
}

test('SQLite: --user is case-insensitive and read through the index on lower(user_name)', async () => {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'remessa-audit-'));
  const database = await openDatabase({ dataDir, databaseUrl: null });
  try {
    const audit = auditLogOn(database);
    await exercise(database, audit);
    for (const filter of [{ user: 'bob' }, { user: 'bob', since: 5, until: 9 }]) {
      const details = await sqlitePlan(database, audit.selection(filter));
      assert.match(details, /USING INDEX audit_user_lower/, details);
    }
    // (EXPLAIN takes no bound parameters here, so the plans above see values inline; the failed
    // sign-in count's event is a literal in the query itself.)
    const failed = await sqlitePlan(database, audit.failedLogins('192.0.2.1', 3000));
    assert.match(failed, /USING (COVERING )?INDEX audit_failed_logins/, failed);
  } finally {
    await database.close();
    await rm(dataDir, { recursive: true, force: true });
  }
});

test('PostgreSQL: the same answers after the same migration', {
  skip: available ? false : PG_SKIP,
}, async () => {
  const temp = await createTempDatabase();
  try {
    const database = await openDatabase({ dataDir: '/nonexistent', databaseUrl: temp.url });
    try {
      await exercise(database, auditLogOn(database));
      const indexes = await sql<{ indexname: string; indexdef: string }>`select indexname, indexdef
        from pg_indexes where tablename = 'audit' and indexname like 'audit_%'`.execute(database.db);
      const def = (name: string) => indexes.rows.find((r) => r.indexname === name)?.indexdef ?? '';
      assert.match(def('audit_user_lower'), /lower\(user_name\).*WHERE \(user_name IS NOT NULL\)/);
      assert.match(def('audit_failed_logins'), /\(remote, at\) WHERE \(event = 'login.failed'::text\)/);
      assert.equal(def('audit_remote'), '', 'the index of every row by address is gone');
    } finally {
      await database.close();
    }
  } finally {
    await temp.drop();
  }
});
