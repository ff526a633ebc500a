// The file domain on PostgreSQL: name de-duplication, lists, downloads, and two instances sweeping
// the same database at once (each file retired and purged exactly once).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { bytes, type FileEntry, footprint, listArea, uploadMultipart, uploadRaw } from './helpers/files.js';
import { eventually } from './helpers/peers.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';
import { basic, closeAll, startTestServer, type TestServer } from './helpers/server.js';

const available = await postgresAvailable();
if (!available && PG_REQUIRED) throw new Error(PG_SKIP);

const DAY = 24 * 3600 * 1000;
const ENV = { REMESSA_LINK_DAYS: '1', REMESSA_BACKUP_DAYS: '1' };

describe('files on PostgreSQL', { skip: available ? false : PG_SKIP }, () => {
  let database: { url: string; drop(): Promise<void> };
  let a: TestServer;
  let b: TestServer;
  const auth = basic('pgfiles', 'pgfiles-password');

  before(async () => {
    database = await createTempDatabase();
    const env = { ...ENV, REMESSA_DATABASE_URL: database.url };
    a = await startTestServer({ env, startWorkers: false });
    // A second instance: its own process state, the same database and the same blob directory.
    b = await startTestServer({ env, dataDir: a.dataDir, startWorkers: false });
    await a.createUser('pgfiles', 'pgfiles-password');
  });
  after(async () => {
    await closeAll(b, a, () => database?.drop());
  });

  test('uploads through either instance share one area, with " (n)" names and byte-identical downloads', async () => {
    assert.equal(a.server.services.dialect, 'postgres');
    const data = bytes(100_000);
    const first = await uploadRaw(a, auth, data, { file: 'doc_50%.txt' });
    const second = await uploadMultipart(b, auth, [
      { filename: 'doc_50%.txt', data },
      { filename: 'doc_50%.txt', data },
    ]);
    assert.equal(first.status, 200);
    assert.equal(second.status, 200, JSON.stringify(second.body));
    const names = (await listArea(b, 'pgfiles', 'pgfiles-password')).map((e) => e.name);
    assert.deepEqual(names, ['doc_50%.txt', 'doc_50% (1).txt', 'doc_50% (2).txt']);
    const link = (first.body['files'] as FileEntry[])[0]!.linkURL;
    const res = await fetch(link.replace(a.origin, b.origin));
    assert.equal(res.status, 200);
    assert.ok(Buffer.from(await res.arrayBuffer()).equals(data));
  });

  test('concurrent uploads of the same name get distinct names', async () => {
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => uploadRaw(i % 2 ? a : b, auth, bytes(1000), { file: 'race.bin' })),
    );
    for (const r of results) assert.equal(r.status, 200, JSON.stringify(r.body));
    const names = (await listArea(a, 'pgfiles', 'pgfiles-password'))
      .map((e) => e.name)
      .filter((n) => n.startsWith('race'));
    assert.equal(new Set(names).size, 6);
  });

  test('concurrent downloads of several links: every one counted and its audit row finished', async () => {
    const uploads = await Promise.all(
      ['count-a.bin', 'count-b.bin', 'count-c.bin'].map((file) => uploadRaw(a, auth, bytes(2000), { file })),
    );
    const links = uploads.map((u) => (u.body['files'] as FileEntry[])[0]!.linkURL);
    // Interleaved, so one batch of outcomes holds several links (one statement for their counts).
    const downloads = links.flatMap((link) => Array.from({ length: 5 }, () => link));
    const results = await Promise.all(downloads.map(async (link) => (await fetch(link)).arrayBuffer()));
    assert.equal(results.length, 15);
    const { db } = a.server.services;
    // The outcomes commit after the responses: wait until all 15 are counted.
    const counts = () =>
      db
        .selectFrom('links')
        .innerJoin('files', 'files.id', 'links.file_id')
        .select(['files.name', 'links.downloads'])
        .where('files.name', 'like', 'count-%')
        .orderBy('files.name')
        .execute();
    const names = await eventually(async () => {
      const rows = await counts();
      return rows.reduce((sum, r) => sum + r.downloads, 0) >= 15 ? rows : false;
    });
    assert.deepEqual(
      names.map((r) => [r.name, r.downloads]),
      [
        ['count-a.bin', 5],
        ['count-b.bin', 5],
        ['count-c.bin', 5],
      ],
    );
    const rows = await db.selectFrom('audit').select('detail').where('event', '=', 'download').execute();
    const finished = rows.filter((r) => /"complete":true/.test(r.detail ?? ''));
    assert.ok(finished.length >= 15, `${finished.length} finished download rows`);
    assert.ok(!rows.some((r) => /"outcome":"unknown"/.test(r.detail ?? '')), 'no row left unknown');
  });

  test('two instances sweeping at once retire and purge every file exactly once', async () => {
    const before = (await footprint(a)).files;
    for (const s of [a, b]) await s.advanceClock(DAY + 1);
    await Promise.all([
      a.server.workers.get('file-sweeper')!.runOnce(),
      b.server.workers.get('file-sweeper')!.runOnce(),
    ]);
    const retired = await a.server.services.audit.query({ event: 'file.retired' });
    assert.equal(retired.length, before);
    assert.equal((await listArea(b, 'pgfiles', 'pgfiles-password', 1, true)).length, before);
    for (const s of [a, b]) await s.advanceClock(DAY + 1);
    await Promise.all([
      a.server.workers.get('file-sweeper')!.runOnce(),
      b.server.workers.get('file-sweeper')!.runOnce(),
    ]);
    assert.equal((await a.server.services.audit.query({ event: 'file.purged' })).length, before);
    assert.deepEqual(await footprint(a), { blobs: 0, temps: 0, files: 0, links: 0 });
  });
});

describe('two instances uploading into the same areas at once', { skip: available ? false : PG_SKIP }, () => {
  test('no deadlock: every upload commits with its batch, each name once per area', async () => {
    const database = await createTempDatabase();
    const env = { ...ENV, REMESSA_DATABASE_URL: database.url };
    const a = await startTestServer({ env, startWorkers: false });
    const b = await startTestServer({ env, dataDir: a.dataDir, startWorkers: false });
    try {
      await a.createUser('sender', 'sender-password');
      const areas = ['area-1', 'area-2', 'area-3'];
      for (const name of areas) await a.createUser(name, `${name}-password`);
      const auth = basic('sender', 'sender-password');
      // Each instance's batches hold uploads into several areas, queued in opposite orders on the
      // two instances; each area's name choice takes its lock. Taken as the units ran, two
      // batches could each hold one area and wait for the other's (PostgreSQL then fails one).
      const uploads: Promise<{ status: number }>[] = [];
      for (let round = 0; round < 16; round++) {
        for (const [i, area] of areas.entries()) {
          uploads.push(uploadRaw(a, auth, bytes(500), { file: 'same.bin', d: area }));
          uploads.push(uploadRaw(b, auth, bytes(500), { file: 'same.bin', d: areas[areas.length - 1 - i]! }));
        }
      }
      for (const r of await Promise.all(uploads)) assert.equal(r.status, 200, JSON.stringify(r));
      for (const area of areas) {
        const names = (await listArea(a, area, `${area}-password`)).map((e) => e.name);
        assert.equal(names.length, 32);
        assert.equal(new Set(names).size, 32);
      }
    } finally {
      await closeAll(b, a);
    }
    try {
      assert.equal(await database.deadlocks(), 0);
    } finally {
      await database.drop();
    }
  });
});
