// `remessa audit --user` (AuditLog.query): user names match case-insensitively, through the index
// on lower(user_name) (migration 0019) instead of a read of the whole trail.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { sql } from 'kysely';
import type { AuditLog } from '../src/audit/audit-log.js';
import { type OpenDatabase, openDatabase } from '../src/db/database.js';
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
}

test('SQLite: --user is case-insensitive and read through the index on lower(user_name)', async () => {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'remessa-audit-'));
  const database = await openDatabase({ dataDir, databaseUrl: null });
  try {
    const audit = auditLogOn(database);
    await exercise(database, audit);
    for (const filter of [{ user: 'bob' }, { user: 'bob', since: 5, until: 9 }]) {
      // EXPLAIN takes no bound parameters here: the values (numbers, a plain name) go inline.
      const { sql: text, parameters } = audit.selection(filter).compile();
      const inlined = parameters.reduce<string>(
        (s, p) => s.replace('?', typeof p === 'number' ? String(p) : `'${String(p)}'`),
        text,
      );
      const plan = await sql.raw<{ detail: string }>(`explain query plan ${inlined}`).execute(database.db);
      const details = plan.rows.map((r) => r.detail).join('; ');
      assert.match(details, /USING INDEX audit_user_lower/, details);
    }
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
      const index = await sql<{ indexdef: string }>`select indexdef from pg_indexes
        where tablename = 'audit' and indexname = 'audit_user_lower'`.execute(database.db);
      assert.match(index.rows[0]?.indexdef ?? '', /lower\(user_name\)/);
    } finally {
      await database.close();
    }
  } finally {
    await temp.drop();
  }
});
