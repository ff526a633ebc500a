// Probes: /healthz answers while the process runs; /readyz answers 200 while the
// database and the blob store answer, and 503 naming the part that does not. PostgreSQL and the
// S3 gateway are shared by every test, so they are taken away from one server only, behind a TCP
// proxy the test stops and starts again.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eventually, TcpProxy } from './helpers/peers.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';
import { createTestBucket, S3_SKIP, s3Available, type TestBucket } from './helpers/s3.js';
import {
  APIVER,
  call,
  closeAll,
  freePort,
  GO_TIME,
  startTestServer,
  type TestServer,
} from './helpers/server.js';

const hasPg = await postgresAvailable();
if (!hasPg && PG_REQUIRED) throw new Error(`REMESSA_TEST_REQUIRE_PG=1 but ${PG_SKIP}`);
const hasS3 = await s3Available();

describe('health and readiness probes', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer();
  });
  after(() => closeAll(t));

  test('GET /healthz: the envelope, never cached', async () => {
    const r = await call(`${t.base}/healthz`);
    assert.equal(r.status, 200);
    assert.deepEqual(Object.keys(r.body), ['status', 'description', 'apiver', 'time']);
    assert.equal(r.body['status'], 0);
    assert.equal(r.body['description'], 'handlerHealth:succsessfully');
    assert.match(String(r.body['apiver']), APIVER);
    assert.match(String(r.body['time']), GO_TIME);
    assert.equal(r.headers.get('cache-control'), 'no-store');
  });

  test('GET /readyz: 200 naming each part it checked', async () => {
    const r = await call(`${t.base}/readyz`);
    assert.equal(r.status, 200);
    assert.deepEqual(Object.keys(r.body), ['status', 'description', 'apiver', 'time', 'checks', 'outbox']);
    assert.deepEqual(r.body['checks'], { database: 'ok', storage: 'ok' });
    assert.deepEqual(r.body['outbox'], { pending: 0, oldestPendingSeconds: 0 });
  });

  test('no authentication, no audit row, no rate limit, no access-log line at info level', async () => {
    const before = await t.server.services.db.selectFrom('audit').select('id').execute();
    const logLines = t.logs.length;
    // Above the 60-a-minute limit of the anonymous endpoints.
    for (let i = 0; i < 80; i++) {
      const path = i % 2 ? 'healthz' : 'readyz';
      const res = await fetch(`${t.base}/${path}`);
      assert.equal(res.status, 200, `${path} #${i}`);
      await res.arrayBuffer();
    }
    const afterRows = await t.server.services.db.selectFrom('audit').select('id').execute();
    assert.equal(afterRows.length, before.length);
    const probeLines = t.logs.slice(logLines).filter((l) => /healthz|readyz/.test(l));
    assert.deepEqual(probeLines, []);
  });

  test('POST /readyz: 405 with Allow', async () => {
    const r = await call(`${t.base}/readyz`, { method: 'POST' });
    assert.equal(r.status, 405);
    assert.equal(r.headers.get('allow'), 'GET, HEAD');
  });
});

/** Waits until /readyz answers `status`, and returns that answer. */
async function readyz(t: TestServer, status: number) {
  return eventually(async () => {
    const r = await call(`${t.base}/readyz`);
    return r.status === status ? r : undefined;
  }, 30_000);
}

describe('readiness follows PostgreSQL', { skip: hasPg ? false : PG_SKIP }, () => {
  let t: TestServer;
  let metricsPort: number;
  let proxy: TcpProxy;
  let database: Awaited<ReturnType<typeof createTempDatabase>>;
  before(async () => {
    database = await createTempDatabase();
    const url = new URL(database.url);
    proxy = new TcpProxy(url.hostname, Number(url.port || 5432));
    await proxy.start();
    url.host = proxy.address;
    metricsPort = await freePort();
    t = await startTestServer({
      env: { REMESSA_DATABASE_URL: url.toString(), REMESSA_METRICS_PORT: String(metricsPort) },
    });
  });
  after(() => closeAll(t, proxy, () => database.drop()));

  test('200 → 503 naming the database while it is away → 200 again', async () => {
    await readyz(t, 200);
    await proxy.stop();
    const down = await readyz(t, 503);
    assert.deepEqual(Object.keys(down.body), ['status', 'description', 'apiver', 'time', 'detail']);
    assert.equal(down.body['status'], 503);
    assert.equal(down.body['description'], 'Service Unavailable');
    assert.match(String(down.body['detail']), /^not ready: database (failed|no answer within 1000 ms)$/);
    assert.ok(t.logs.some((l) => l.includes('"msg":"not ready"')));
    // /healthz does not depend on the database.
    assert.equal((await call(`${t.base}/healthz`)).status, 200);
    await proxy.start();
    const up = await readyz(t, 200);
    assert.deepEqual(up.body['checks'], { database: 'ok', storage: 'ok' });
  });

  test('the PostgreSQL pool is in the metrics', async () => {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const total = /^remessa_db_pool_connections\{state="total"\} (\d+)$/m.exec(text);
    assert.ok(total && Number(total[1]) >= 1, text.slice(0, 200));
    assert.match(text, /^remessa_db_pool_connections\{state="waiting"\} \d+$/m);
  });
});

describe('readiness follows the S3 store', { skip: hasS3 ? false : S3_SKIP }, () => {
  let t: TestServer;
  let proxy: TcpProxy;
  let bucket: TestBucket;
  before(async () => {
    bucket = await createTestBucket('readyz/');
    const endpoint = new URL(bucket.env['REMESSA_S3_ENDPOINT']!);
    proxy = new TcpProxy(endpoint.hostname, Number(endpoint.port || 80));
    await proxy.start();
    endpoint.host = proxy.address;
    t = await startTestServer({
      env: { ...bucket.env, REMESSA_S3_ENDPOINT: endpoint.toString().replace(/\/$/, '') },
    });
  });
  after(() => closeAll(t, proxy, () => bucket.drop()));

  test('200 → 503 naming the storage while it is away → 200 again', async () => {
    await readyz(t, 200);
    await proxy.stop();
    const down = await readyz(t, 503);
    assert.match(String(down.body['detail']), /^not ready: storage (failed|no answer within 1000 ms)$/);
    await proxy.start();
    const up = await readyz(t, 200);
    assert.deepEqual(up.body['checks'], { database: 'ok', storage: 'ok' });
  });
});
