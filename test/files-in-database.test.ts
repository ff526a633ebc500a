// Small uploads kept in the database (docs/decisions.md, "Small files in the database"):
// contents whose Content-Length is at most REMESSA_INLINE_MAX_SIZE commit with their row, in one
// transaction, instead of a blob file. Every download feature works on them as on blobs, nothing
// is left behind by a failure or a purge, and damage is still detected. SQLite and PostgreSQL.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { FileStore } from '../src/features/files/file-store.js';
import {
  blobFiles,
  bytes,
  type FileEntry,
  footprint,
  uploadFile,
  uploadMultipart,
  uploadRaw,
} from './helpers/files.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';
import { httpHead, rawRequest } from './helpers/raw.js';
import { basic, call, serverFor, startTestServer, type TestServer } from './helpers/server.js';

const pg = await postgresAvailable();
if (!pg && PG_REQUIRED) throw new Error(PG_SKIP);

const DAY = 24 * 3600 * 1000;
const auth = basic('small', 'small-password');

async function rowOf(t: TestServer, id: number) {
  return (await t.server.services.files.store.byId(id))!;
}

/** A raw upload sent chunked: no Content-Length, so its size is not known before reading. */
function uploadChunked(t: TestServer, data: Buffer, name: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const req = request(`${t.base}/upload?file=${name}`, {
      method: 'POST',
      headers: {
        Authorization: auth,
        'Content-Type': 'application/octet-stream',
        'Transfer-Encoding': 'chunked',
      },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown>));
    });
    req.on('error', reject);
    req.write(data.subarray(0, 10));
    req.end(data.subarray(10));
  });
}

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`small files in the database (${backend})`, {
    skip: backend === 'postgres' && !pg ? PG_SKIP : false,
  }, () => {
    let t: TestServer;
    let database: Awaited<ReturnType<typeof createTempDatabase>> | null = null;

    before(async () => {
      database = backend === 'postgres' ? await createTempDatabase() : null;
      t = await startTestServer({
        env: {
          REMESSA_INLINE_MAX_SIZE: '8KiB',
          REMESSA_MAX_FILE_SIZE: '1MiB',
          REMESSA_LINK_DAYS: '1',
          REMESSA_BACKUP_DAYS: '0',
          ...(database ? { REMESSA_DATABASE_URL: database.url } : {}),
        },
        startWorkers: false,
      });
      await t.createUser('small', 'small-password');
    });
    after(async () => {
      await t.close();
      await database?.drop();
    });

    test('a raw upload within the limit: row and contents in one commit, no blob, served whole, by range and HEAD', async () => {
      const data = bytes(8 * 1024);
      const f = await uploadFile(t, auth, 'invoice.edi', data);
      const row = await rowOf(t, f.id);
      assert.equal(row.contents_in_db, 1);
      assert.deepEqual(await t.server.services.files.store.contents(row.id), data);
      assert.deepEqual(await blobFiles(t), [], 'no blob file was written');
      assert.equal((await t.server.services.db.selectFrom('blob_intents').selectAll().execute()).length, 0);

      const res = await fetch(f.linkURL);
      assert.equal(res.status, 200);
      assert.ok(Buffer.from(await res.arrayBuffer()).equals(data));
      assert.equal(res.headers.get('content-length'), String(data.length));
      const etag = res.headers.get('etag')!;
      assert.ok(etag);

      const part = await fetch(f.linkURL, { headers: { Range: 'bytes=100-199' } });
      assert.equal(part.status, 206);
      assert.equal(part.headers.get('content-range'), `bytes 100-199/${data.length}`);
      assert.ok(Buffer.from(await part.arrayBuffer()).equals(data.subarray(100, 200)));

      const head = await fetch(f.linkURL, { method: 'HEAD' });
      assert.equal(head.status, 200);
      assert.equal(head.headers.get('content-length'), String(data.length));
      const again = await fetch(f.linkURL, { headers: { 'If-None-Match': etag } });
      assert.equal(again.status, 304);
    });

    test('multipart parts are bounded by the whole body: all small parts go in the database', async () => {
      const a = bytes(1000);
      const b = bytes(2000);
      const up = await uploadMultipart(t, auth, [
        { filename: 'a.bin', data: a },
        { filename: 'b.bin', data: b },
      ]);
      assert.equal(up.status, 200);
      for (const [i, f] of (up.body['files'] as FileEntry[]).entries()) {
        assert.equal((await rowOf(t, f.id)).contents_in_db, 1);
        const res = await fetch(f.linkURL);
        assert.ok(Buffer.from(await res.arrayBuffer()).equals(i === 0 ? a : b));
      }
    });

    test('over the limit, or of unknown size (chunked), the contents go to the blob store', async () => {
      const before = (await blobFiles(t)).length;
      const big = bytes(8 * 1024 + 1);
      const f = await uploadFile(t, auth, 'big.bin', big);
      assert.equal((await rowOf(t, f.id)).contents_in_db, 0);
      assert.equal(await t.server.services.files.store.contents(f.id), undefined);

      const small = bytes(100);
      const chunked = await uploadChunked(t, small, 'chunked.bin');
      const g = (chunked['files'] as FileEntry[])[0]!;
      assert.equal((await rowOf(t, g.id)).contents_in_db, 0);
      assert.equal((await blobFiles(t)).length, before + 2);
      for (const [entry, data] of [
        [f, big],
        [g, small],
      ] as const) {
        const res = await fetch(entry.linkURL);
        assert.ok(Buffer.from(await res.arrayBuffer()).equals(data));
      }
      // The storage check looks at the blob store only: no row kept in the database is "missing".
      const report = await t.server.services.reconciler.check(false);
      assert.deepEqual(report.missing, []);
      assert.deepEqual(report.orphans, []);
    });

    test('a body that ends before its Content-Length: 400, nothing stored', async () => {
      const before = await footprint(t);
      const origin = new URL(t.base).origin;
      const answer = await rawRequest(
        origin,
        httpHead('POST', '/v1/upload?file=cut.bin', new URL(t.base).host, [
          `Authorization: ${auth}`,
          'Content-Type: application/octet-stream',
          'Content-Length: 4000',
        ]),
        bytes(1000),
      );
      assert.equal(answer.status, 400);
      assert.deepEqual(await footprint(t), before);
    });

    test('missing contents are detected: 500 and a file.corrupt audit row', async () => {
      const f = await uploadFile(t, auth, 'damaged.bin', bytes(3000));
      const row = await rowOf(t, f.id);
      await t.server.services.db.deleteFrom('file_contents').where('file_id', '=', row.id).execute();
      const r = await call(f.linkURL);
      assert.equal(r.status, 500);
      const events = await t.server.services.audit.query({ event: 'file.corrupt' });
      assert.ok(events.some((e) => e.file_id === f.id && /contents missing/.test(e.detail ?? '')));
    });

    test('the purge removes the contents with the row', async () => {
      await t.advanceClock(DAY + 1);
      await t.server.workers.get('file-sweeper')!.runOnce();
      assert.deepEqual(await footprint(t), { blobs: 0, temps: 0, files: 0, links: 0 });
    });
  });
}

describe('small files in the database: limits and settings', () => {
  test('a file over REMESSA_MAX_FILE_SIZE is refused (413) though within the inline limit; nothing stored', async (ctx) => {
    const t = await serverFor(ctx, {
      env: { REMESSA_MAX_FILE_SIZE: '100', REMESSA_INLINE_MAX_SIZE: '64KiB' },
    });
    await t.createUser('small', 'small-password');
    const up = await uploadRaw(t, auth, bytes(200), { file: 'x.bin' });
    assert.equal(up.status, 413);
    assert.deepEqual(await footprint(t), { blobs: 0, temps: 0, files: 0, links: 0 });
  });

  test('REMESSA_VERIFY_DOWNLOADS=always re-hashes contents kept in the database', async (ctx) => {
    const t = await serverFor(ctx, { env: { REMESSA_VERIFY_DOWNLOADS: 'always' } });
    await t.createUser('small', 'small-password');
    const f = await uploadFile(t, auth, 'rot.bin', bytes(500));
    const row = await rowOf(t, f.id);
    assert.equal(row.contents_in_db, 1);
    // Downloaded once before the damage: 'always' reads the contents anew, never a copy in memory.
    assert.equal((await call(f.linkURL)).status, 200);
    await t.server.services.db
      .updateTable('file_contents')
      .set({ data: bytes(500) })
      .where('file_id', '=', row.id)
      .execute();
    assert.equal((await call(f.linkURL)).status, 500);
  });

  test('contents read once are kept in memory under their file id until the file is deleted', async (ctx) => {
    const t = await serverFor(ctx);
    await t.createUser('small', 'small-password');
    const data = bytes(700);
    const f = await uploadFile(t, auth, 'kept.bin', data);
    const store = new FileStore(t.server.services.db, 'sqlite');
    const id = f.id;
    assert.deepEqual(await store.contents(id), data);
    // The row behind it goes (as only a purge does, with the file): the copy answers meanwhile…
    await t.server.services.db.deleteFrom('file_contents').where('file_id', '=', id).execute();
    assert.deepEqual(await store.contents(id), data);
    assert.equal(await store.contents(id, { cached: false }), undefined);
    // …and goes with the file.
    await t.server.services.db
      .updateTable('files')
      .set({ state: 'purging', purge_at: 1 })
      .where('id', '=', id)
      .execute();
    assert.ok(await store.deleteFile(id, 1));
    assert.equal(await store.contents(id), undefined);
  });

  test('REMESSA_INLINE_MAX_SIZE=0 keeps every upload in the blob store; a bad value is refused', async () => {
    const t = await startTestServer({ env: { REMESSA_INLINE_MAX_SIZE: '0' } });
    try {
      await t.createUser('small', 'small-password');
      const f = await uploadFile(t, auth, 'tiny.bin', bytes(10));
      assert.equal((await rowOf(t, f.id)).contents_in_db, 0);
      assert.equal((await blobFiles(t)).length, 1);
    } finally {
      await t.close();
    }
    await assert.rejects(
      startTestServer({ env: { REMESSA_INLINE_MAX_SIZE: '2MiB' } }),
      /REMESSA_INLINE_MAX_SIZE must be at most 1048576 bytes/,
    );
  });
});
