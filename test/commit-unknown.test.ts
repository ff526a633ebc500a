// A COMMIT whose outcome is unknown: PostgreSQL's answer lost with a broken connection, or
// SQLite's WAL sync failing after the commit (db/transaction.ts, CommitUnknownError). Such a
// transaction may have committed, so its work must not run again (every row twice) and nothing it
// relied on may be undone (a blob a committed row owns). On PostgreSQL a group-commit batch learns
// what happened from its mark (db/commit-marks.ts) and answers accordingly.
import assert from 'node:assert/strict';
import { readlinkSync } from 'node:fs';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import SQLite from 'better-sqlite3';
import { type OpenDatabase, openDatabase } from '../src/platform/sql/database.js';
import { CommitUnknownError } from '../src/platform/sql/transaction.js';
import { CommitCutProxy, type CutMode } from './helpers/commit-cut.js';
import { bytes, type FileEntry, footprint, listArea, uploadRaw } from './helpers/files.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';
import { basic, serverFor, startTestServer } from './helpers/server.js';

const available = await postgresAvailable();
if (!available && PG_REQUIRED) throw new Error(PG_SKIP);

/** Units that each insert one audit row tagged `tag-i`, queued together (one batch). */
function units(database: OpenDatabase, tag: string, n: number) {
  return Array.from({ length: n }, (_, i) =>
    database.commits.run(async (trx) => {
      await trx
        .insertInto('audit')
        .values({ at: i, event: 'download', detail: `${tag}-${i}` })
        .execute();
      return i;
    }),
  );
}

async function rowsTagged(database: OpenDatabase, tag: string): Promise<string[]> {
  const rows = await database.db
    .selectFrom('audit')
    .select('detail')
    .where('detail', 'like', `${tag}-%`)
    .orderBy('id')
    .execute();
  return rows.map((r) => r.detail!);
}

/** Runs `fn` with PostgreSQL reached through a proxy that can lose a COMMIT's answer. */
async function throughProxy(fn: (url: string, proxy: CommitCutProxy) => Promise<void>): Promise<void> {
  const temp = await createTempDatabase();
  const direct = new URL(temp.url);
  const proxy = await CommitCutProxy.start({ host: direct.hostname, port: Number(direct.port || 5432) });
  try {
    await fn(proxy.urlFor(temp.url), proxy);
  } finally {
    await proxy.close();
    await temp.drop();
  }
}

describe('PostgreSQL: a COMMIT whose answer was lost', { skip: available ? false : PG_SKIP }, () => {
  const batches: [CutMode, string, string][] = [
    ['after-commit', 'landed', 'a batch that committed: every unit answered with its result, each row once'],
    ['before-commit', 'lost', 'a batch that did not commit: its units run again, each row once'],
  ];
  for (const [mode, tag, name] of batches) {
    test(name, async () => {
      await throughProxy(async (url, proxy) => {
        const database = await openDatabase({ dataDir: '/nonexistent', databaseUrl: url });
        try {
          proxy.arm(mode, new RegExp(`${tag}-`));
          const results = await Promise.all(units(database, tag, 5));
          assert.equal(proxy.cuts, 1);
          assert.deepEqual(results, [0, 1, 2, 3, 4]);
          assert.deepEqual(
            (await rowsTagged(database, tag)).sort(),
            [0, 1, 2, 3, 4].map((i) => `${tag}-${i}`),
          );
        } finally {
          await database.close();
        }
      });
    });
  }

  test('an upload whose commit landed is answered 200, stored once, with its contents', async () => {
    await throughProxy(async (url, proxy) => {
      const t = await startTestServer({ env: { REMESSA_DATABASE_URL: url }, startWorkers: false });
      try {
        await t.createUser('cut', 'cut-password');
        const auth = basic('cut', 'cut-password');
        const data = bytes(2 * 1024 * 1024);
        proxy.arm('after-commit', /insert into "files"/);
        const up = await uploadRaw(t, auth, data, { file: 'landed.bin' });
        assert.equal(proxy.cuts, 1);
        assert.equal(up.status, 200, JSON.stringify(up.body));
        const listed = await listArea(t, 'cut', 'cut-password');
        assert.deepEqual(
          listed.map((e) => e.name),
          ['landed.bin'],
        );
        const res = await fetch((up.body['files'] as FileEntry[])[0]!.linkURL);
        assert.equal(res.status, 200);
        assert.ok(Buffer.from(await res.arrayBuffer()).equals(data));
        assert.deepEqual(await footprint(t), { blobs: 1, temps: 0, files: 1, links: 1 });
      } finally {
        await t.close();
      }
    });
  });

  test('an upload whose commit did not land fails and leaves nothing', async () => {
    await throughProxy(async (url, proxy) => {
      const t = await startTestServer({ env: { REMESSA_DATABASE_URL: url }, startWorkers: false });
      try {
        await t.createUser('cut', 'cut-password');
        proxy.arm('before-commit', /insert into "files"/);
        const up = await uploadRaw(t, basic('cut', 'cut-password'), bytes(2 * 1024 * 1024), {
          file: 'lost.bin',
        });
        assert.equal(proxy.cuts, 1);
        assert.equal(up.status, 500);
        assert.deepEqual(await footprint(t), { blobs: 0, temps: 0, files: 0, links: 0 });
      } finally {
        await t.close();
      }
    });
  });
});

/**
 * Makes the next fdatasync of a SQLite WAL file (in this process) for which `when()` holds fail
 * with EIO, as a failing disk would after the commit was written. Returns a function that undoes it.
 */
async function failNextWalSync(dir: string, when: () => boolean = () => true): Promise<() => void> {
  const probe = await open(path.join(dir, 'probe'), 'w');
  const proto = Object.getPrototypeOf(probe) as { datasync(this: { fd: number }): Promise<void> };
  await probe.close();
  const original = proto.datasync;
  let armed = true;
  proto.datasync = async function (this: { fd: number }) {
    if (armed && readlinkSync(`/proc/self/fd/${this.fd}`).endsWith('-wal') && when()) {
      armed = false;
      throw Object.assign(new Error('EIO: i/o error, fdatasync'), {
        code: 'EIO',
        errno: -5,
        syscall: 'fdatasync',
      });
    }
    return original.call(this);
  };
  return () => {
    proto.datasync = original;
  };
}

describe('SQLite: a WAL sync that fails after the commit', () => {
  test('the batch fails with CommitUnknownError and runs no unit again', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'remessa-unknown-'));
    const database = await openDatabase({ dataDir: dir, databaseUrl: null });
    const restore = await failNextWalSync(dir);
    try {
      const outcomes = await Promise.allSettled(units(database, 'unsynced', 5));
      for (const o of outcomes) {
        assert.equal(o.status, 'rejected');
        assert.ok((o as PromiseRejectedResult).reason instanceof CommitUnknownError);
      }
      // Committed (SQLite's commit is in this process) but not known durable: each row once.
      assert.equal((await rowsTagged(database, 'unsynced')).length, 5);
    } finally {
      restore();
      await database.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('an upload whose commit was not synced fails, and its blob stays with the committed row', async (ctx) => {
    const t = await serverFor(ctx);
    await t.createUser('eio', 'eio-password');
    const data = bytes(2 * 1024 * 1024);
    // The sync after the file's row was committed (not the one of its blob's intent, before).
    const reader = new SQLite(path.join(t.dataDir, 'remessa.db'), { readonly: true });
    const rowWritten = () =>
      reader.prepare("select 1 from files where name = 'unsynced.bin'").get() !== undefined;
    const restore = await failNextWalSync(t.dataDir, rowWritten);
    let status: number;
    try {
      status = (await uploadRaw(t, basic('eio', 'eio-password'), data, { file: 'unsynced.bin' })).status;
    } finally {
      restore();
      reader.close();
    }
    assert.equal(status, 500);
    // The row is there (the commit was written), so its contents must be too.
    const listed = await listArea(t, 'eio', 'eio-password');
    assert.deepEqual(
      listed.map((e) => e.name),
      ['unsynced.bin'],
    );
    const res = await fetch(listed[0]!.linkURL);
    assert.equal(res.status, 200);
    assert.ok(Buffer.from(await res.arrayBuffer()).equals(data));
  });
});
