// Three stateless instances: one PostgreSQL database, one S3 bucket (Ceph RGW), and a data
// directory of their own each (nothing shared on disk). Whatever instance answers, the cluster
// behaves as one server: files, tokens, logouts, lockouts, rate limits, the sweeper and the
// outbox.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { STORE_IDENTITY_KEY } from '../src/platform/blobs/blob-store.js';
import { bytes, type FileEntry, listArea, uploadRaw } from './helpers/files.js';
import { MailSink } from './helpers/peers.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';
import { createTestBucket, S3_SKIP, s3Available, type TestBucket } from './helpers/s3.js';
import { basic, call, closeAll, startTestServer, type TestServer } from './helpers/server.js';

const pg = await postgresAvailable();
if (!pg && PG_REQUIRED) throw new Error(PG_SKIP);
const s3 = await s3Available();
const skip = !pg ? PG_SKIP : !s3 ? S3_SKIP : false;
const DAY = 24 * 3600 * 1000;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('three instances on PostgreSQL + S3, no shared directory', { skip }, () => {
  let database: Awaited<ReturnType<typeof createTempDatabase>>;
  let bucket: TestBucket;
  let mail: MailSink;
  let a: TestServer;
  let b: TestServer;
  let c: TestServer;
  /** Each instance's own API address (all share a's public REMESSA_BASE_URL). */
  const api = (t: TestServer) => `${t.server.address}/v1`;
  /** A link or URL as the public base names it, sent to instance `t` instead. */
  const via = (t: TestServer, url: string) => url.replace(a.base, api(t));

  before(async () => {
    database = await createTempDatabase();
    bucket = await createTestBucket('cluster/');
    mail = await MailSink.start();
    const env = {
      REMESSA_DATABASE_URL: database.url,
      REMESSA_SMTP_URL: mail.url,
      REMESSA_LINK_DAYS: '1',
      REMESSA_BACKUP_DAYS: '1',
      ...bucket.env,
    };
    a = await startTestServer({ env, startWorkers: false });
    b = await startTestServer({ env: { ...env, REMESSA_BASE_URL: a.base }, startWorkers: false });
    c = await startTestServer({ env: { ...env, REMESSA_BASE_URL: a.base }, startWorkers: false });
    await a.createUser('fleet', 'fleet-password');
  });
  after(() =>
    closeAll(
      a,
      b,
      c,
      mail,
      () => database?.drop(),
      () => bucket?.drop(),
    ),
  );

  test('no instance keeps file contents on its own disk', () => {
    const dirs = new Set([a, b, c].map((t) => t.dataDir));
    assert.equal(dirs.size, 3);
    for (const t of [a, b, c]) assert.match(t.server.services.blobs.description, /^s3 bucket=remessa-test-/);
  });

  test('upload on A, Range download on B, list on C', async () => {
    const data = bytes(5 * 1024 * 1024 + 3);
    const up = await uploadRaw(a, basic('fleet', 'fleet-password'), data, { file: 'shared.bin' });
    assert.equal(up.status, 200);
    const entry = (up.body['files'] as FileEntry[])[0]!;
    const res = await fetch(via(b, entry.linkURL), { headers: { Range: 'bytes=-1000' } });
    assert.equal(res.status, 206);
    assert.ok(Buffer.from(await res.arrayBuffer()).equals(data.subarray(data.length - 1000)));
    const full = Buffer.from(await (await fetch(via(c, entry.linkURL))).arrayBuffer());
    assert.equal(sha(full), entry.sha256);
    const listed = await call(`${api(c)}/download/list?page=1`, {
      headers: { Authorization: basic('fleet', 'fleet-password') },
    });
    assert.deepEqual(
      (listed.body['files'] as FileEntry[]).map((e) => [e.id, e.name, e.sha256]),
      [[entry.id, 'shared.bin', sha(data)]],
    );
  });

  test('a token from A works on B; a logout on C is honoured by A and B', async () => {
    const login = await call(`${api(a)}/auth/login`, {
      method: 'POST',
      headers: { Authorization: basic('fleet', 'fleet-password') },
    });
    const bearer = String(login.body['bearer']);
    const logout = (t: TestServer) =>
      call(`${api(t)}/auth/logout`, { method: 'POST', headers: { Authorization: `Bearer ${bearer}` } });
    const list = (t: TestServer) =>
      call(`${api(t)}/download/list?page=1`, { headers: { Authorization: `Bearer ${bearer}` } });
    assert.equal((await list(b)).status, 200);
    assert.equal((await logout(c)).status, 200);
    assert.equal((await list(a)).status, 401);
    assert.equal((await list(b)).status, 401);
  });

  test('failed sign-ins on A, B and C add up to one lockout', async () => {
    await a.createUser('locked', 'locked-password');
    const login = (t: TestServer, password: string) =>
      call(`${api(t)}/auth/login`, { method: 'POST', headers: { Authorization: basic('locked', password) } });
    for (const t of [a, b, c, a, b]) assert.equal((await login(t, 'wrong-password')).status, 401);
    for (const t of [a, b, c])
      assert.equal((await login(t, 'locked-password')).status, 401, 'locked everywhere');
  });

  test('the credential rate limit counts for the cluster, not per instance', async () => {
    // 30 a minute per client address on the token endpoint, whatever the outcome: ten on each
    // instance use it up. (Right passwords, so the separate budget of failed checks is not what trips.)
    const token = (t: TestServer) =>
      call(`${api(t)}/oauth2/token`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=password&username=fleet&password=fleet-password',
      });
    for (let i = 0; i < 10; i++)
      for (const t of [a, b, c]) assert.notEqual((await token(t)).status, 429, `request ${3 * i + 1}`);
    for (const t of [a, b, c]) assert.equal((await token(t)).status, 429);
  });

  test('a notification is sent exactly once when every instance runs its outbox', async () => {
    const up = await uploadRaw(a, basic('fleet', 'fleet-password'), bytes(1000), {
      file: 'announced.txt',
      m: 'dest@example.com',
    });
    assert.equal(up.status, 200);
    await Promise.all([a, b, c].map((t) => t.server.services.notify.deliverDue()));
    await Promise.all([a, b, c].map((t) => t.server.services.notify.deliverDue()));
    const to = mail.messages.filter((m) => m.to && JSON.stringify(m.to).includes('dest@example.com'));
    assert.equal(to.length, 1);
  });

  test('the sweeper on all three retires and purges each file exactly once, objects included', async () => {
    const files = await a.server.services.db.selectFrom('files').select(['id', 'blob_key']).execute();
    assert.ok(files.length >= 2);
    const sweepAll = () => Promise.all([a, b, c].map((t) => t.server.workers.get('file-sweeper')!.runOnce()));
    for (const t of [a, b, c]) await t.advanceClock(DAY + 1000);
    await sweepAll();
    assert.equal((await a.server.services.audit.query({ event: 'file.retired' })).length, files.length);
    assert.equal((await listArea(b, 'fleet', 'fleet-password', 1, true)).length, files.length);
    for (const t of [a, b, c]) await t.advanceClock(DAY + 1000);
    await sweepAll();
    assert.equal((await a.server.services.audit.query({ event: 'file.purged' })).length, files.length);
    assert.deepEqual(
      await bucket.keys(),
      [`cluster/${STORE_IDENTITY_KEY}`],
      'nothing but the store identity marker left',
    );
    const report = await c.server.services.reconciler.check(false);
    assert.deepEqual([report.rows, report.objects, report.missing, report.orphans], [0, 0, [], []]);
  });
});
