// SQLite commits made durable off the event loop (src/platform/sql/sqlite-durable.ts): with
// synchronous=NORMAL a commit only writes the WAL, so a writer must be answered only after an
// fdatasync of the WAL that started after its commit; readers never wait for one.
import assert from 'node:assert/strict';
import { copyFile, mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type OpenDatabase, openDatabase } from '../src/platform/sql/database.js';
import { WRITES_BEFORE_CHECKPOINT_THREAD } from '../src/platform/sql/sqlite-durable.js';

describe('SQLite: durable commits off the event loop', () => {
  let dir: string;
  let database: OpenDatabase;
  const events: string[] = [];
  let restore: () => void;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'remessa-durable-'));
    // Every FileHandle's datasync is recorded (and slowed, so a missing wait would show).
    const probe = await open(path.join(dir, 'probe'), 'w');
    const proto = Object.getPrototypeOf(probe) as { datasync(): Promise<void> };
    await probe.close();
    const original = proto.datasync;
    proto.datasync = async function (this: unknown) {
      events.push('sync-start');
      await new Promise((resolve) => setTimeout(resolve, 20));
      await original.call(this);
      events.push('sync-done');
    };
    restore = () => (proto.datasync = original);
    database = await openDatabase({ dataDir: dir, databaseUrl: null });
  });
  after(async () => {
    restore();
    await database.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('runs in WAL mode with synchronous=NORMAL (the sync is ours)', async () => {
    const { db } = database;
    const { sql } = await import('kysely');
    const mode = await sql<{ journal_mode: string }>`pragma journal_mode`.execute(db);
    const sync = await sql<{ synchronous: number }>`pragma synchronous`.execute(db);
    assert.equal(mode.rows[0]?.journal_mode, 'wal');
    assert.equal(sync.rows[0]?.synchronous, 1);
  });

  test('an autocommit write, a transaction and a group commit each resolve after a WAL sync', async () => {
    const { db, commits } = database;
    const cases: [string, () => Promise<unknown>][] = [
      ['insert', () => db.insertInto('audit').values({ at: 1, event: 'download', detail: 'a' }).execute()],
      [
        'transaction',
        () =>
          db
            .transaction()
            .execute((trx) =>
              trx.insertInto('audit').values({ at: 2, event: 'download', detail: 'b' }).execute(),
            ),
      ],
      [
        'group commit',
        () =>
          commits.run((trx) =>
            trx.insertInto('audit').values({ at: 3, event: 'download', detail: 'c' }).execute(),
          ),
      ],
      // A write that returns rows (INSERT … RETURNING) is a "reader" to better-sqlite3; it writes all the same.
      [
        'insert returning',
        () =>
          db.insertInto('audit').values({ at: 4, event: 'download', detail: 'd' }).returning('id').execute(),
      ],
      [
        'group commit of an insert returning',
        () =>
          commits.run((trx) =>
            trx
              .insertInto('audit')
              .values({ at: 5, event: 'download', detail: 'e' })
              .returning('id')
              .execute(),
          ),
      ],
    ];
    for (const [name, write] of cases) {
      events.length = 0;
      await write().then(() => events.push('answered'));
      assert.deepEqual(events, ['sync-start', 'sync-done', 'answered'], name);
    }
  });

  test('many concurrent writers share few syncs; readers wait for none', async () => {
    const { db } = database;
    events.length = 0;
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        db
          .insertInto('audit')
          .values({ at: i, event: 'download', detail: `w${i}` })
          .execute(),
      ),
    );
    const syncs = events.filter((e) => e === 'sync-start').length;
    assert.ok(syncs >= 1 && syncs < 10, `${syncs} syncs for 50 writers`);
    events.length = 0;
    await db.selectFrom('audit').select('id').limit(5).execute();
    assert.deepEqual(events, [], 'a read does not sync');
  });

  test('a unit nobody waits on commits without waiting for the disk, which syncs it soon after', async () => {
    const { db, commits } = database;
    const unwaited = (detail: string) =>
      commits.run((trx) => trx.insertInto('audit').values({ at: 6, event: 'download', detail }).execute(), {
        durable: false,
      });
    events.length = 0;
    await unwaited('f').then(() => events.push('answered'));
    assert.equal(events[0], 'answered', 'answered before any sync');
    // Then a sync covers it, without anyone asking (UNWAITED_SYNC_MS, then the slowed sync).
    for (let i = 0; i < 100 && !events.includes('sync-done'); i++)
      await new Promise((resolve) => setTimeout(resolve, 10));
    assert.deepEqual(events, ['answered', 'sync-start', 'sync-done']);

    // Sharing a batch with a unit that must be durable, it waits for the sync like that one.
    events.length = 0;
    await Promise.all([
      unwaited('g').then(() => events.push('answered unwaited')),
      commits
        .run((trx) => trx.insertInto('audit').values({ at: 7, event: 'download', detail: 'h' }).execute())
        .then(() => events.push('answered durable')),
    ]);
    assert.deepEqual(events.slice(0, 2), ['sync-start', 'sync-done']);
    const rows = await db
      .selectFrom('audit')
      .select('detail')
      .where('detail', 'in', ['f', 'g', 'h'])
      .execute();
    assert.equal(rows.length, 3);
  });

  test('once writes add up, a thread of its own checkpoints: committed rows reach the database file without a checkpoint on the event loop', async () => {
    const { db } = database;
    const { sql } = await import('kysely');
    const autocheckpoint = async () =>
      (await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(db)).rows[0]
        ?.wal_autocheckpoint;
    assert.equal(await autocheckpoint(), 1000, 'SQLite checkpoints as usual while little is written');
    await db.transaction().execute(async (trx) => {
      for (let i = 0; i < WRITES_BEFORE_CHECKPOINT_THREAD; i++)
        await trx.insertInto('audit').values({ at: i, event: 'download', detail: 'filler' }).execute();
    });
    assert.equal(await autocheckpoint(), 10_000, 'then only as a backstop');
    const marker = `checkpointed-${Date.now()}`;
    await db.insertInto('audit').values({ at: 1, event: 'download', detail: marker }).execute();
    // A copy of the database file alone, without its WAL: the row shows there only once a
    // checkpoint copied it, and this connection's own would need 10,000 pages.
    const SQLite = (await import('better-sqlite3')).default;
    const fileOnly = path.join(dir, 'file-only.db');
    let found = false;
    for (let i = 0; i < 200 && !found; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      await copyFile(path.join(dir, 'remessa.db'), fileOnly);
      const reader = new SQLite(fileOnly, { readonly: true });
      try {
        // Until the first checkpoint even the tables exist only in the WAL.
        const tables = reader.prepare("select 1 from sqlite_master where name = 'audit'").get();
        found = !!tables && reader.prepare('select 1 from audit where detail = ?').get(marker) !== undefined;
      } finally {
        reader.close();
      }
    }
    assert.ok(found, 'the row reached the database file');
  });
});
