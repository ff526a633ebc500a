// Group commit (src/platform/sql/group-commit.ts) on SQLite and PostgreSQL: units that arrive together share
// one transaction, each resolves only after its commit, and a failing unit fails alone.
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import type { AuditLog } from '../src/features/audit/audit-log.js';
import { type OpenDatabase, openDatabase } from '../src/platform/sql/database.js';
import { takeLock } from '../src/platform/sql/locks.js';
import { inTransaction } from '../src/platform/sql/transaction.js';
import { auditLogOn } from './helpers/audit.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';

const available = await postgresAvailable();
if (!available && PG_REQUIRED) throw new Error(PG_SKIP);

/** Runs `fn` on a fresh SQLite database in a temporary directory; removes it afterwards. */
async function onSqlite(fn: (database: OpenDatabase) => Promise<void>): Promise<void> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'remessa-group-'));
  const database = await openDatabase({ dataDir, databaseUrl: null });
  try {
    await fn(database);
  } finally {
    await database.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** Runs `fn` on a fresh PostgreSQL database, with an audit log on it; drops it afterwards. */
async function onPostgres(fn: (database: OpenDatabase, audit: AuditLog) => Promise<void>): Promise<void> {
  const temp = await createTempDatabase();
  try {
    const database = await openDatabase({ dataDir: '/nonexistent', databaseUrl: temp.url });
    try {
      await fn(database, auditLogOn(database));
    } finally {
      await database.close();
    }
  } finally {
    await temp.drop();
  }
}

async function exercise(database: OpenDatabase): Promise<void> {
  const { db, commits } = database;
  const handles = new Set<unknown>();
  const insert = (i: number) =>
    commits.run(async (trx) => {
      handles.add(trx);
      await trx
        .insertInto('audit')
        .values({ at: i, event: 'download', detail: `unit ${i}` })
        .execute();
      return i;
    });
  // 200 units at once: far fewer transactions, every unit answered with its own result.
  const results = await Promise.all(Array.from({ length: 200 }, (_, i) => insert(i)));
  assert.deepEqual(
    results,
    Array.from({ length: 200 }, (_, i) => i),
  );
  assert.ok(handles.size < 20, `${handles.size} transactions for 200 units`);
  // Resolved means committed: another connection (or a reader after it) sees every row.
  const n = await db
    .selectFrom('audit')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  assert.equal(Number(n.n), 200);

  // A failing unit in a batch fails alone, with its own error; the others commit.
  const failing = commits.run(async (trx) => {
    await trx.insertInto('audit').values({ at: 0, event: 'download', detail: 'doomed' }).execute();
    throw new Error('this unit fails');
  });
  const others = Array.from({ length: 20 }, (_, i) => insert(1000 + i));
  await assert.rejects(failing, /this unit fails/);
  assert.equal((await Promise.all(others)).length, 20);
  const doomed = await db.selectFrom('audit').select('id').where('detail', '=', 'doomed').execute();
  assert.deepEqual(doomed, []);
  const all = await db
    .selectFrom('audit')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  assert.equal(Number(all.n), 220);
}

describe('group commit', () => {
  test('SQLite', async () => {
    await onSqlite(async (database) => {
      await exercise(database);
    });
  });

  test('PostgreSQL', { skip: available ? false : PG_SKIP }, async () => {
    await onPostgres((database) => exercise(database));
  });
});

describe('appends (rows that only insert)', () => {
  test('PostgreSQL: a download audit row does not wait behind a batch of other work', {
    skip: available ? false : PG_SKIP,
  }, async () => {
    await onPostgres(async ({ commits }, audit) => {
      const events: string[] = [];
      // A batch of other work holding its transaction for a while (an upload, an outcome).
      const slow = commits
        .run(async (trx) => {
          await sql`select pg_sleep(2)`.execute(trx);
        })
        .then(() => events.push('other batch'));
      await new Promise((resolve) => setTimeout(resolve, 50));
      // Rows begun meanwhile, from several requests, commit before it ends.
      const rows = await Promise.all(
        Array.from({ length: 5 }, () => audit.begin({ event: 'download', detail: {} })),
      );
      events.push('audit rows');
      await slow;
      assert.deepEqual(events, ['audit rows', 'other batch']);
      assert.equal(new Set(rows).size, 5);
    });
  });

  test('SQLite: the same queue as the other commits (one connection)', async () => {
    await onSqlite(async (database) => {
      assert.equal(database.appends, database.commits);
    });
  });
});

describe('locks a batch takes for its units (PostgreSQL)', () => {
  test("two instances' batches take their units' locks in one order: none deadlocks", {
    skip: available ? false : PG_SKIP,
  }, async () => {
    const temp = await createTempDatabase();
    const instances = [
      await openDatabase({ dataDir: '/nonexistent', databaseUrl: temp.url }),
      await openDatabase({ dataDir: '/nonexistent', databaseUrl: temp.url }),
    ];
    try {
      let runs = 0;
      const unit = (database: OpenDatabase, keys: number[]) =>
        database.commits.run(
          async (trx) => {
            runs++;
            for (const k of keys) {
              await sql`select pg_advisory_xact_lock(7, ${k})`.execute(trx);
              await sql`select pg_sleep(0.005)`.execute(trx);
            }
          },
          { locks: keys.map((k) => [7, k] as const) },
        );
      // Each turn, one instance's batch locks 3, 2, 1 and the other's 1, 2, 3, as two areas'
      // uploads may on two instances.
      const units: Promise<void>[] = [];
      for (let turn = 0; turn < 8; turn++) {
        for (let i = 0; i < 4; i++)
          units.push(unit(instances[0]!, [3, 2, 1]), unit(instances[1]!, [1, 2, 3]));
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      await Promise.all(units);
      // A deadlock fails a batch, whose units then run again alone: more runs than units.
      assert.equal(runs, units.length);
    } finally {
      for (const database of instances) await database.close();
      await temp.drop();
    }
  });
});

/** A unit's lock taken in its batch: declared, a second time, undeclared; and outside any batch. */
async function lockRule(database: OpenDatabase): Promise<void> {
  const { db, commits, dialect } = database;
  const declared = [7, 1] as const;
  const other = [7, 2] as const;
  // Declared: the batch already holds it, taking it again is nothing; an undeclared one fails the
  // unit (alone, so the others of its batch still commit).
  const units = [
    commits.run(async (trx) => takeLock(trx, dialect, declared), { locks: [declared] }),
    commits.run(async (trx) => takeLock(trx, dialect, other), { locks: [declared] }),
    commits.run(async (trx) => takeLock(trx, dialect, other)),
  ];
  const [ok, ...undeclared] = await Promise.allSettled(units);
  assert.equal(ok!.status, 'fulfilled');
  for (const r of undeclared) {
    assert.equal(r.status, 'rejected');
    assert.match(
      String((r as PromiseRejectedResult).reason),
      /lock 7\/2 taken in a group-commit unit that did not declare it/,
    );
  }
  // A transaction of its own takes whatever it needs, when it needs it.
  await inTransaction(db, async (trx) => {
    await takeLock(trx, dialect, other);
    await takeLock(trx, dialect, declared);
    await takeLock(trx, dialect, other);
  });
  await assert.rejects(takeLock(db, dialect, other), /needs a transaction/);
}

describe('the lock rule: a unit takes only the locks it declared (db/locks.ts)', () => {
  test('SQLite', () => onSqlite(lockRule));
  test('PostgreSQL', { skip: available ? false : PG_SKIP }, () =>
    onPostgres((database) => lockRule(database)),
  );
});

describe('merged work', () => {
  test('the units of one kind in a batch run in one call, in queue order, each answered with its own result', async () => {
    await onSqlite(async (database) => {
      const calls: number[][] = [];
      const doubling = {
        runAll: async (_trx: unknown, items: number[]) => {
          calls.push(items);
          return items.map((i) => i * 2);
        },
      };
      const other = database.commits.run(async () => 'plain');
      const results = await Promise.all([1, 2, 3, 4].map((i) => database.commits.runMerged(doubling, i)));
      assert.deepEqual(results, [2, 4, 6, 8]);
      assert.equal(await other, 'plain');
      assert.deepEqual(calls, [[1, 2, 3, 4]]);

      // A failing batch: each unit runs again alone (its kind with its one item).
      calls.length = 0;
      const merged = [5, 6].map((i) => database.commits.runMerged(doubling, i));
      const failing = database.commits.run(async () => {
        throw new Error('this unit fails');
      });
      await assert.rejects(failing, /this unit fails/);
      assert.deepEqual(await Promise.all(merged), [10, 12]);
      assert.deepEqual(calls, [[5, 6], [5], [6]]);
    });
  });

  test('PostgreSQL: audit rows begun and finished in one batch each get their own id and detail', {
    skip: available ? false : PG_SKIP,
  }, async () => {
    await onPostgres(async ({ db, commits }, audit) => {
      const ids = await Promise.all(
        Array.from({ length: 20 }, (_, i) => audit.begin({ event: 'download', detail: { n: i } })),
      );
      const detailOf = async (id: number) =>
        JSON.parse(
          (await db.selectFrom('audit').select('detail').where('id', '=', id).executeTakeFirstOrThrow())
            .detail!,
        ) as Record<string, unknown>;
      for (const [i, id] of ids.entries()) assert.deepEqual(await detailOf(id), { n: i, outcome: 'unknown' });
      await commits.run((trx) =>
        audit.finishAll(
          ids.map((id, i) => ({
            id,
            entry: { event: 'download' as const, detail: { n: i, complete: true } },
          })),
          trx,
        ),
      );
      for (const [i, id] of ids.entries()) assert.deepEqual(await detailOf(id), { n: i, complete: true });
    });
  });
});

describe('effects after commit (src/platform/sql/transaction.ts)', () => {
  /** Records rows through `audit` on `database` and returns the events its observer was told. */
  async function observed(
    database: OpenDatabase,
    audit: AuditLog,
    write: (audit: AuditLog, told: string[]) => Promise<void>,
  ): Promise<string[]> {
    const told: string[] = [];
    audit.observe((entry) => told.push(String(entry.detail)));
    await write(audit, told);
    await database.commits.idle();
    return told.sort();
  }

  async function exerciseObservers(database: OpenDatabase, audit: AuditLog): Promise<void> {
    const { db, commits } = database;
    // A batch with a failing unit runs every unit again alone: each row is observed once, not
    // once per run (a metric counted on insert counted these twice).
    const told = await observed(database, audit, async (a) => {
      const rows = Array.from({ length: 5 }, (_, i) => a.record({ event: 'upload', detail: `row ${i}` }));
      const failing = commits.run(async (trx) => {
        await a.record({ event: 'upload', detail: 'rolled back' }, trx);
        throw new Error('this unit fails');
      });
      await assert.rejects(failing, /this unit fails/);
      await Promise.all(rows);
    });
    assert.deepEqual(told, ['row 0', 'row 1', 'row 2', 'row 3', 'row 4']);
    const stored = await db.selectFrom('audit').select('detail').where('event', '=', 'upload').execute();
    assert.deepEqual(stored.map((r) => r.detail).sort(), told);

    // Inside a caller's transaction: told after the commit, never for a rollback.
    const inside = await observed(database, auditLogOn(database), async (a, told) => {
      await assert.rejects(
        inTransaction(db, async (trx) => {
          await a.record({ event: 'login', detail: 'undone' }, trx);
          throw new Error('roll back');
        }),
        /roll back/,
      );
      let toldBeforeCommit = -1;
      await inTransaction(db, async (trx) => {
        await a.record({ event: 'login', detail: 'kept' }, trx);
        toldBeforeCommit = told.length;
      });
      assert.equal(toldBeforeCommit, 0, 'told before the transaction committed');
    });
    assert.deepEqual(inside, ['kept']);
  }

  test('SQLite', async () => {
    await onSqlite((database) => exerciseObservers(database, auditLogOn(database)));
  });

  test('PostgreSQL', { skip: available ? false : PG_SKIP }, async () => {
    await onPostgres((database, audit) => exerciseObservers(database, audit));
  });

  test('a failing effect leaves its committed batch alone; a transaction opened elsewhere is refused', async () => {
    await onSqlite(async (database) => {
      const audit = auditLogOn(database);
      let told = 0;
      audit.observe(() => {
        told++;
        throw new Error('observer broke');
      });
      const warnings: Error[] = [];
      const onWarning = (w: Error) => warnings.push(w);
      process.on('warning', onWarning);
      try {
        await Promise.all([1, 2, 3].map((i) => audit.record({ event: 'upload', detail: `w${i}` })));
        await new Promise((resolve) => setImmediate(resolve));
      } finally {
        process.off('warning', onWarning);
      }
      // Committed once, told once each: the batch was not run again because an effect threw.
      const rows = await database.db
        .selectFrom('audit')
        .select('detail')
        .where('event', '=', 'upload')
        .execute();
      assert.equal(rows.length, 3);
      assert.equal(told, 3);
      assert.equal(warnings.filter((w) => w.name === 'AfterCommitWarning').length, 3);
      // A transaction whose commit inTransaction() does not see cannot take effects.
      await assert.rejects(
        database.db.transaction().execute((trx) => audit.record({ event: 'login' }, trx)),
        /not opened by inTransaction/,
      );
    });
  });

  test('every transaction in src/ is opened by inTransaction (else its effects would run uncommitted)', async () => {
    const src = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'src');
    const sqlLayer = path.join('platform', 'sql');
    const offenders: string[] = [];
    for (const file of await readdir(src, { recursive: true })) {
      if (!file.endsWith('.ts') || file === path.join(sqlLayer, 'transaction.ts')) continue;
      const text = await readFile(path.join(src, file), 'utf8');
      // Kysely's ways to open one anywhere; a raw BEGIN outside platform/sql/ (whose SQLite
      // internals open read transactions and the WAL's first one by hand).
      const raw = !file.startsWith(`${sqlLayer}${path.sep}`) && /['"`]\s*begin\b/i.test(text);
      if (/\.transaction\(\)|startTransaction\(/.test(text) || raw) offenders.push(file);
    }
    assert.deepEqual(offenders, []);
  });
});
