// Queries compiled once (src/platform/sql/compiled.ts) give the same rows as Kysely building them each time,
// on SQLite and PostgreSQL, with parameters bound by name wherever they stand and constants left alone.
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { compiledQuery, type Param, rowOfValues } from '../src/platform/sql/compiled.js';
import { openDatabase } from '../src/platform/sql/database.js';
import { ROOT } from './helpers/cli.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';

const pg = await postgresAvailable();
if (!pg && PG_REQUIRED) throw new Error(PG_SKIP);

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`compiledQuery (${backend})`, { skip: backend === 'postgres' && !pg ? PG_SKIP : false }, () => {
    test('runs one compiled query with new parameters each time', async () => {
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
        // Parameters used in another order than they are given, with a constant in between.
        const q = compiledQuery(db, (param: Param<{ high: string; low: string }>) =>
          db
            .selectFrom('users')
            .select('name')
            .where('name_key', '>=', param('low'))
            .where('enabled', '=', 1)
            .where('name_key', '<=', param('high'))
            .orderBy('name_key'),
        );
        assert.deepEqual(await q.all({ high: 'zzz', low: 'a' }), [{ name: 'ana' }, { name: 'caio' }]);
        assert.deepEqual(await q.all({ high: 'bz', low: 'a' }), [{ name: 'ana' }]);
        assert.deepEqual(await q.first({ high: 'zzz', low: 'b' }), { name: 'caio' });
        assert.equal(await q.first({ high: 'a', low: 'b' }), undefined);
        assert.deepEqual(
          await db.transaction().execute((trx) => q.all({ high: 'zzz', low: 'a' }, trx)),
          [{ name: 'ana' }, { name: 'caio' }],
          'runs in a transaction too',
        );
        // A row as its values, in the order selected, and made back into an object of one shape;
        // the shared statement answers objects again afterwards.
        const values = await q.firstValues({ high: 'zzz', low: 'b' });
        assert.deepEqual(values, ['caio']);
        assert.deepEqual(rowOfValues<{ name: string }>(['name'])(values!), { name: 'caio' });
        assert.deepEqual(
          await q.first({ high: 'zzz', low: 'b' }),
          { name: 'caio' },
          'objects again after values',
        );
        assert.deepEqual(
          await db.transaction().execute((trx) => q.firstValues({ high: 'zzz', low: 'a' }, trx)),
          ['ana'],
          'values in a transaction too',
        );
        assert.equal(await q.firstValues({ high: 'a', low: 'b' }), undefined);
        const two = rowOfValues<{ a: unknown; 'b"c': unknown }>(['a', 'b"c'], 1);
        assert.deepEqual(two([0, 1, 2]), { a: 1, 'b"c': 2 }, 'from an offset; any column name');
        // The new row's id without RETURNING: SQLite's, on the database and in a transaction.
        const add = compiledQuery(db, (param: Param<{ event: string }>) =>
          db.insertInto('audit').values({ at: 1, event: param('event'), detail: null }),
        );
        if (backend === 'sqlite') {
          const first = await add.insertId({ event: 'x' });
          const second = await db.transaction().execute((trx) => add.insertId({ event: 'y' }, trx));
          const rows = await db.selectFrom('audit').select(['id', 'event']).orderBy('id').execute();
          assert.deepEqual(rows, [
            { id: first, event: 'x' },
            { id: second, event: 'y' },
          ]);
        } else {
          await assert.rejects(add.insertId({ event: 'x' }), /reported no id/);
        }
        const unused = compiledQuery(db, (param: Param<{ name: string; other: string }>) =>
          db.selectFrom('users').select('name').where('name', '=', param('name')),
        );
        await assert.rejects(unused.all({ name: 'ana', other: 'x' }), /parameter other is not used/);
      } finally {
        await close();
        await database?.drop();
        await rm(dir, { recursive: true, force: true });
      }
    });

    test('binds each parameter by its name, wherever and however often it stands', async () => {
      const dir = await mkdtemp(path.join(tmpdir(), 'remessa-compiled-'));
      const database = backend === 'postgres' ? await createTempDatabase() : null;
      const { db, close } = await openDatabase({ dataDir: dir, databaseUrl: database?.url ?? null });
      try {
        for (const [at, event] of [
          [1, 'login'],
          [2, 'upload'],
          [3, 'download'],
          [4, 'upload'],
          [5, 'logout'],
        ] as const)
          await db.insertInto('audit').values({ at, event, detail: null }).execute();
        // Two numbers of one type, `from` and `to`: given in either order, each binds where it is named.
        const between = compiledQuery(db, (param: Param<{ from: number; to: number }>) =>
          db
            .selectFrom('audit')
            .select('at')
            .where('at', '>=', param('from'))
            .where('at', '<=', param('to'))
            .orderBy('at'),
        );
        const ats = async (rows: Promise<{ at: number }[]>) => (await rows).map((r) => Number(r.at));
        assert.deepEqual(await ats(between.all({ from: 2, to: 4 })), [2, 3, 4]);
        assert.deepEqual(
          await ats(between.all({ to: 4, from: 2 })),
          [2, 3, 4],
          'the order of the keys does not matter',
        );
        assert.deepEqual(await ats(between.all({ from: 4, to: 2 })), [], 'swapped values are swapped bounds');
        // One name in two places, and a list of exactly three values.
        const around = compiledQuery(db, (param: Param<{ at: number; events: string[] }>) =>
          db
            .selectFrom('audit')
            .select('at')
            .where((eb) => eb.or([eb('at', '=', param('at')), eb(eb('at', '-', 1), '=', param('at'))]))
            .where('event', 'in', param.list('events', 3))
            .orderBy('at'),
        );
        assert.deepEqual(await ats(around.all({ events: ['upload', 'download', 'x'], at: 2 })), [2, 3]);
        assert.deepEqual(await ats(around.all({ at: 4, events: ['logout', 'x', 'y'] })), [5]);
        await assert.rejects(around.all({ at: 4, events: ['logout'] }), /events must have 3 values/);
        // Names the type does not allow fail to compile (checked by the build); a name left out
        // anyway fails the query's first run.
        const typeChecks = () => [
          // @ts-expect-error a misspelt name
          between.all({ from: 2, too: 4 }),
          // @ts-expect-error a name left out
          between.all({ from: 2 }),
          // @ts-expect-error a name the query does not have
          between.all({ from: 2, to: 4, at: 3 }),
          // @ts-expect-error a value of another type
          between.all({ from: 2, to: '4' }),
          compiledQuery(db, (param: Param<{ from: number }>) =>
            // @ts-expect-error a parameter the query does not declare
            db.selectFrom('audit').where('at', '=', param('to')),
          ),
        ];
        void typeChecks;
        const fresh = compiledQuery(db, (param: Param<{ from: number; to: number }>) =>
          db.selectFrom('audit').select('at').where('at', '>=', param('from')).where('at', '<=', param('to')),
        );
        await assert.rejects(
          fresh.all({ from: 2 } as { from: number; to: number }),
          /parameter to not given/,
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
describe('compiledQuery (sqlite): run without Kysely where safe', () => {
  test('reads never see a transaction still open; writes in one commit or roll back with it', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'remessa-compiled-'));
    const { db, close } = await openDatabase({ dataDir: dir, databaseUrl: null });
    try {
      const count = compiledQuery(db, (param: Param<{ event: string }>) =>
        db
          .selectFrom('audit')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('event', '=', param('event')),
      );
      const insert = compiledQuery(db, (param: Param<{ event: string }>) =>
        db
          .insertInto('audit')
          .values({ at: 1, event: param('event'), detail: null })
          .returning('id'),
      );
      // A transaction writes, stays open while a read from outside runs, then rolls back: the read
      // must not have seen the row (it shares the one connection, so running it at once would).
      let seenOutside: number | undefined;
      let seenInside: number | undefined;
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const open = db.transaction().execute(async (trx) => {
        await insert.first({ event: 'download' }, trx);
        seenInside = (await count.first({ event: 'download' }, trx))?.n;
        await gate;
        throw new Error('roll back');
      });
      await new Promise((resolve) => setImmediate(resolve));
      const outside = count.first({ event: 'download' }).then((r) => (seenOutside = r?.n));
      release();
      await assert.rejects(open, /roll back/);
      await outside;
      assert.equal(seenInside, 1, 'a transaction sees its own write');
      assert.equal(seenOutside, 0, 'the outside read did not see the uncommitted row');

      await assert.rejects(
        db.transaction().execute(async (trx) => {
          await insert.first({ event: 'upload' }, trx);
          throw new Error('abandon');
        }),
        /abandon/,
      );
      assert.equal((await count.first({ event: 'upload' }))?.n, 0, 'a rolled-back prepared write is gone');

      // Reads asked in one turn share one read transaction, run when the turn is over: a
      // transaction that began meanwhile and is still open must not be seen by them either.
      let release2!: () => void;
      const gate2 = new Promise<void>((resolve) => (release2 = resolve));
      const queued = [count.first({ event: 'download' }), count.first({ event: 'login' })];
      let inserted!: () => void;
      const rowInserted = new Promise<void>((resolve) => (inserted = resolve));
      const open2 = db.transaction().execute(async (trx) => {
        await insert.first({ event: 'login' }, trx);
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
      const byAt = compiledQuery(db, (param: Param<{ at: number }>) =>
        db.selectFrom('audit').select('detail').where('at', '=', param('at')),
      );
      const results = await Promise.all([
        byAt.first({ at: 0 }),
        byAt.first({ at: 3 }),
        // better-sqlite3 cannot bind an object: this read fails, the others are answered.
        byAt.first({ at: {} as unknown as number }).then(
          () => 'answered',
          (err: Error) => err.constructor.name,
        ),
        byAt.first({ at: 4 }),
        byAt.first({ at: 99 }),
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
      assert.deepEqual(await byAt.first({ at: 9 }), { detail: 'after' });
    } finally {
      await close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

// compiledQuery is the one way to prepare a query: how one is compiled and run stays in the SQL layer.
test('nothing outside src/platform/sql/ compiles a query or prepares a statement itself', async () => {
  const src = path.join(ROOT, 'src');
  const sqlLayer = path.join('platform', 'sql') + path.sep;
  const ways = /\.compile\(\)|executeQuery\b|CompiledQuery\b|\.prepare\(|better-sqlite3/;
  const offenders: string[] = [];
  for (const file of await readdir(src, { recursive: true })) {
    if (!file.endsWith('.ts') || file.startsWith(sqlLayer)) continue;
    const m = ways.exec(await readFile(path.join(src, file), 'utf8'));
    if (m) offenders.push(`${file}: ${m[0]}`);
  }
  assert.deepEqual(offenders, []);
  assert.ok(ways.test('const q = db.selectFrom("users").compile();'), 'the check sees a compile()');
});
