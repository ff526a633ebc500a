// Queries compiled once (src/platform/sql/compiled.ts) give the same rows as Kysely building them each time,
// on SQLite and PostgreSQL, with arguments in any order and constants left alone.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { prepare, rowOfValues } from '../src/platform/sql/compiled.js';
import { openDatabase } from '../src/platform/sql/database.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';

const pg = await postgresAvailable();
if (!pg && PG_REQUIRED) throw new Error(PG_SKIP);

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`prepare (${backend})`, { skip: backend === 'postgres' && !pg ? PG_SKIP : false }, () => {
    test('runs one compiled query with new arguments each time', async () => {
      const dir = await mkdtemp(path.join(tmpdir(), 'remessa-compiled-'));
      const database = backend === 'postgres' ? await createTempDatabase() : null;
      const { db, close } = await openDatabase({ dataDir: dir, databaseUrl: database?.url ?? null });
      try {
        for (const [name, enabled] of [
          ['ana', 1],
          ['bia', 0],
          ['caio', 1],
        ] as const)
          await db
            .insertInto('users')
            .values({
              name,
              name_key: name,
              email: null,
              mobile: null,
              lang: 'en',
              enabled,
              first_access: 0,
              password_hash: null,
              token_generation: 0,
              failed_logins: 0,
              locked_until: 0,
              created_at: 0,
              updated_at: 0,
            })
            .execute();
        // Arguments used in reverse order, with a constant in between.
        const q = prepare<[string, string], { name: string }>(db, 2, (p) =>
          db
            .selectFrom('users')
            .select('name')
            .where('name_key', '>=', p<string>(1))
            .where('enabled', '=', 1)
            .where('name_key', '<=', p<string>(0))
            .orderBy('name_key'),
        );
        assert.deepEqual(await q.all(['zzz', 'a']), [{ name: 'ana' }, { name: 'caio' }]);
        assert.deepEqual(await q.all(['bz', 'a']), [{ name: 'ana' }]);
        assert.deepEqual(await q.first(['zzz', 'b']), { name: 'caio' });
        assert.equal(await q.first(['a', 'b']), undefined);
        assert.deepEqual(
          await db.transaction().execute((trx) => q.all(['zzz', 'a'], trx)),
          [{ name: 'ana' }, { name: 'caio' }],
          'runs in a transaction too',
        );
        // A row as its values, in the order selected, and made back into an object of one shape;
        // the shared statement answers objects again afterwards.
        const values = await q.firstValues(['zzz', 'b']);
        assert.deepEqual(values, ['caio']);
        assert.deepEqual(rowOfValues<{ name: string }>(['name'])(values!), { name: 'caio' });
        assert.deepEqual(await q.first(['zzz', 'b']), { name: 'caio' }, 'objects again after values');
        assert.deepEqual(
          await db.transaction().execute((trx) => q.firstValues(['zzz', 'a'], trx)),
          ['ana'],
          'values in a transaction too',
        );
        assert.equal(await q.firstValues(['a', 'b']), undefined);
        const two = rowOfValues<{ a: unknown; 'b"c': unknown }>(['a', 'b"c'], 1);
        assert.deepEqual(two([0, 1, 2]), { a: 1, 'b"c': 2 }, 'from an offset; any column name');
        // The new row's id without RETURNING: SQLite's, on the database and in a transaction.
        const add = prepare<[string], never>(db, 1, (p) =>
          db.insertInto('audit').values({ at: 1, event: p<string>(0), detail: null }),
        );
        if (backend === 'sqlite') {
          const first = await add.insertId(['x']);
          const second = await db.transaction().execute((trx) => add.insertId(['y'], trx));
          const rows = await db.selectFrom('audit').select(['id', 'event']).orderBy('id').execute();
          assert.deepEqual(rows, [
            { id: first, event: 'x' },
            { id: second, event: 'y' },
          ]);
        } else {
          await assert.rejects(add.insertId(['x']), /reported no id/);
        }
        assert.throws(
          () =>
            prepare<[string, string], unknown>(db, 2, (p) =>
              db.selectFrom('users').where('name', '=', p<string>(0)),
            ),
          /uses 1 of its 2 arguments/,
        );
      } finally {
        await close();
        await database?.drop();
        await rm(dir, { recursive: true, force: true });
      }
    });
  });
}

// On SQLite prepared queries skip Kysely's executor where that is safe (src/platform/sql/compiled.ts): the
// isolation and durability they had through Kysely must hold all the same.
describe('prepare (sqlite): run without Kysely where safe', () => {
  test('reads never see a transaction still open; writes in one commit or roll back with it', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'remessa-compiled-'));
    const { db, close } = await openDatabase({ dataDir: dir, databaseUrl: null });
    try {
      const count = prepare<[string], { n: number }>(db, 1, (p) =>
        db
          .selectFrom('audit')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('event', '=', p<string>(0)),
      );
      const insert = prepare<[string], { id: number }>(db, 1, (p) =>
        db
          .insertInto('audit')
          .values({ at: 1, event: p<string>(0), detail: null })
          .returning('id'),
      );
      // A transaction writes, stays open while a read from outside runs, then rolls back: the read
      // must not have seen the row (it shares the one connection, so running it at once would).
      let seenOutside: number | undefined;
      let seenInside: number | undefined;
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const open = db.transaction().execute(async (trx) => {
        await insert.first(['download'], trx);
        seenInside = (await count.first(['download'], trx))?.n;
        await gate;
        throw new Error('roll back');
      });
      await new Promise((resolve) => setImmediate(resolve));
      const outside = count.first(['download']).then((r) => (seenOutside = r?.n));
      release();
      await assert.rejects(open, /roll back/);
      await outside;
      assert.equal(seenInside, 1, 'a transaction sees its own write');
      assert.equal(seenOutside, 0, 'the outside read did not see the uncommitted row');

      await assert.rejects(
        db.transaction().execute(async (trx) => {
          await insert.first(['upload'], trx);
          throw new Error('abandon');
        }),
        /abandon/,
      );
      assert.equal((await count.first(['upload']))?.n, 0, 'a rolled-back prepared write is gone');

      // Reads asked in one turn share one read transaction, run when the turn is over: a
      // transaction that began meanwhile and is still open must not be seen by them either.
      let release2!: () => void;
      const gate2 = new Promise<void>((resolve) => (release2 = resolve));
      const queued = [count.first(['download']), count.first(['login'])];
      let inserted!: () => void;
      const rowInserted = new Promise<void>((resolve) => (inserted = resolve));
      const open2 = db.transaction().execute(async (trx) => {
        await insert.first(['login'], trx);
        inserted();
        await gate2;
        throw new Error('roll back');
      });
      await rowInserted;
      release2();
      await assert.rejects(open2, /roll back/);
      assert.deepEqual(
        (await Promise.all(queued)).map((r) => r?.n),
        [0, 0],
        'reads queued before an open transaction did not see its row',
      );
    } finally {
      await close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('reads asked together each get their own rows; a failing one fails alone', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'remessa-compiled-'));
    const { db, close } = await openDatabase({ dataDir: dir, databaseUrl: null });
    try {
      for (let i = 0; i < 5; i++)
        await db
          .insertInto('audit')
          .values({ at: i, event: 'download', detail: `row ${i}` })
          .execute();
      const byAt = prepare<[number], { detail: string | null }>(db, 1, (p) =>
        db.selectFrom('audit').select('detail').where('at', '=', p<number>(0)),
      );
      const results = await Promise.all([
        byAt.first([0]),
        byAt.first([3]),
        // better-sqlite3 cannot bind an object: this read fails, the others are answered.
        byAt.first([{} as unknown as number]).then(
          () => 'answered',
          (err: Error) => err.constructor.name,
        ),
        byAt.first([4]),
        byAt.first([99]),
      ]);
      assert.deepEqual(results, [
        { detail: 'row 0' },
        { detail: 'row 3' },
        'TypeError',
        { detail: 'row 4' },
        undefined,
      ]);
      // Nothing was left open: a write right after commits.
      await db.insertInto('audit').values({ at: 9, event: 'download', detail: 'after' }).execute();
      assert.deepEqual(await byAt.first([9]), { detail: 'after' });
    } finally {
      await close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
