// Resumable uploads across two stateless instances on PostgreSQL + S3: tus-js-client
// sends 300 MiB through a proxy that drops the connection every 50 MiB and sends each new
// connection to the other instance, so every resumption continues on an instance that did not
// take the bytes before it.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CutProxy } from './helpers/cut-proxy.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';
import { createTestBucket, S3_REQUIRED, S3_SKIP, s3Available, type TestBucket } from './helpers/s3.js';
import { basic, call, closeAll, startTestServer, type TestServer } from './helpers/server.js';
import { tusUpload, writeBigFile } from './helpers/tus.js';

const pg = await postgresAvailable();
if (!pg && PG_REQUIRED) throw new Error(PG_SKIP);
const s3 = await s3Available();
if (!s3 && S3_REQUIRED) throw new Error(S3_SKIP);
const skip = !pg ? PG_SKIP : !s3 ? S3_SKIP : false;
const MiB = 1024 * 1024;

describe('tus across two instances on PostgreSQL + S3', { skip }, () => {
  let database: Awaited<ReturnType<typeof createTempDatabase>>;
  let bucket: TestBucket;
  let a: TestServer;
  let b: TestServer;
  let dir: string;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'remessa-tus-s3-'));
    database = await createTempDatabase();
    bucket = await createTestBucket('tus/');
    const env = { REMESSA_DATABASE_URL: database.url, ...bucket.env };
    a = await startTestServer({ env, startWorkers: false });
    b = await startTestServer({ env: { ...env, REMESSA_BASE_URL: a.base }, startWorkers: false });
    await a.createUser('fleet', 'fleet-password');
  });
  after(() =>
    closeAll(
      a,
      b,
      () => database?.drop(),
      () => bucket?.drop(),
      () => rm(dir, { recursive: true, force: true }),
    ),
  );

  test('300 MiB, a cut every 50 MiB, each resumption on the other instance: byte-identical, told once', async () => {
    const file = path.join(dir, 'big.bin');
    const digest = await writeBigFile(file, 300);
    const port = (t: TestServer) => Number(new URL(t.server.address).port);
    const proxy = await CutProxy.start({
      target: [
        { host: '127.0.0.1', port: port(a) },
        { host: '127.0.0.1', port: port(b) },
      ],
      everyBytes: 50 * MiB,
    });
    const auth = basic('fleet', 'fleet-password');
    try {
      const url = await tusUpload(file, {
        endpoint: `${proxy.origin}/v1/uploads`,
        auth,
        metadata: { filename: 'big.bin', m: 'dora@example.com' },
      });
      assert.ok(proxy.cuts >= 5, `only ${proxy.cuts} cuts`);
      assert.ok((proxy.perTarget[0] ?? 0) >= 3 && (proxy.perTarget[1] ?? 0) >= 3, String(proxy.perTarget));
      const id = url.split('/').pop()!;
      const g = await call(`${b.server.address}/v1/uploads/${id}`, { headers: { Authorization: auth } });
      assert.equal(g.status, 200, JSON.stringify(g.body));
      const [entry] = g.body['files'] as Record<string, unknown>[];
      assert.equal(entry!['length'], 300 * MiB);
      assert.equal(entry!['sha256'], digest);
      // Downloaded from the bucket by the other instance: the bytes themselves, not only the row.
      const link = String(entry!['linkURL']).replace(a.base, `${a.server.address}/v1`);
      const res = await fetch(link);
      assert.equal(res.status, 200);
      const h = createHash('sha256');
      for await (const c of res.body as unknown as AsyncIterable<Buffer>) h.update(c);
      assert.equal(h.digest('hex'), digest);
      const outbox = await a.server.services.db
        .selectFrom('outbox')
        .select(['recipient', 'kind'])
        .where('file_id', '=', Number(entry!['id']))
        .where('channel', '=', 'email')
        .execute();
      assert.deepEqual(outbox, [{ recipient: 'dora@example.com', kind: 'file-link' }]);
      // Nothing staged is left in the bucket: one object, the file's.
      const keys: string[] = [];
      for await (const o of a.server.services.blobs.list()) keys.push(o.key);
      assert.equal(keys.length, 1);
      const partial: string[] = [];
      for await (const p of a.server.services.blobs.listPartial()) partial.push(p.key);
      assert.deepEqual(partial, []);
    } finally {
      await proxy.close();
    }
  });
});
