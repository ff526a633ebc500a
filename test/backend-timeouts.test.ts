// PostgreSQL and S3 that stop answering (packets dropped, not refused), through a proxy that goes
// silent: a request gets the same 503 envelope with Retry-After as with a refused backend, within
// seconds rather than the whole outage, and the next request works once the backend answers again;
// `remessa serve` says what it waits for and gives up with a non-zero exit instead of hanging.
// The bounds are set to a second here (REMESSA_CONNECT_TIMEOUT_SECONDS, REMESSA_BACKEND_TIMEOUT_SECONDS).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { BlackholeProxy } from './helpers/blackhole-proxy.js';
import { bytes, type FileEntry, uploadFile, uploadRaw } from './helpers/files.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';
import { createTestBucket, S3_SKIP, s3Available } from './helpers/s3.js';
import {
  basic,
  call,
  closeAll,
  closeWith,
  closing,
  ERROR_KEYS,
  errorKeys,
  freePort,
  startTestServer,
} from './helpers/server.js';

const hasPg = await postgresAvailable();
const hasS3 = await s3Available();
if (!hasPg && PG_REQUIRED) {
  test('PostgreSQL is required here (REMESSA_TEST_REQUIRE_PG=1)', () => {
    assert.fail(`REMESSA_TEST_REQUIRE_PG=1 but PostgreSQL is not reachable. ${PG_SKIP}`);
  });
}

const FAST = { REMESSA_CONNECT_TIMEOUT_SECONDS: '1', REMESSA_BACKEND_TIMEOUT_SECONDS: '1' };
/** Generous: the bound is a few seconds (S3: three attempts of a second each), the outage endless. */
const WITHIN_MS = 15_000;

/** Runs `fn`, asserting its answer is a 503 envelope with Retry-After that came within WITHIN_MS. */
async function unavailableWithinBound(
  what: string,
  fn: () => Promise<{ status: number; headers: Headers; body: Record<string, unknown> }>,
): Promise<void> {
  const started = Date.now();
  const r = await fn();
  const ms = Date.now() - started;
  assert.equal(r.status, 503, `${what}: ${JSON.stringify(r.body)}`);
  assert.equal(r.headers.get('retry-after'), '5', what);
  assert.deepEqual(errorKeys(r.body), ERROR_KEYS, what);
  assert.ok(ms < WITHIN_MS, `${what} answered after ${ms} ms`);
}

describe('PostgreSQL that stops answering', { skip: hasPg ? false : PG_SKIP }, () => {
  test('requests answer 503 with Retry-After within seconds, and work again once it answers', async (ctx) => {
    const db = await createTempDatabase();
    const { proxy, url } = await BlackholeProxy.for(db.url);
    const t = await startTestServer({
      env: { REMESSA_DATABASE_URL: url, ...FAST },
      startWorkers: false,
    }).catch(closing(proxy, () => db.drop()));
    closeWith(ctx, t, proxy, () => db.drop());
    await t.createUser('pgsilent', 'pgsilent-password');
    const auth = basic('pgsilent', 'pgsilent-password');
    const list = () => call(`${t.base}/download/list?page=1`, { headers: { Authorization: auth } });
    assert.equal((await list()).status, 200);

    proxy.silence();
    await unavailableWithinBound('list', list);
    await unavailableWithinBound('upload', () => uploadRaw(t, auth, bytes(1000), { file: 'during.bin' }));

    proxy.restore();
    assert.equal((await uploadRaw(t, auth, bytes(1000), { file: 'after.bin' })).status, 200);
    const files = (await list()).body['files'] as FileEntry[];
    assert.deepEqual(
      files.map((f) => f.name),
      ['after.bin'],
    );
  });
});

describe('S3 that stops answering', { skip: hasS3 ? false : S3_SKIP }, () => {
  test('uploads and downloads answer 503 with Retry-After within seconds, and work again once it answers', async (ctx) => {
    const bucket = await createTestBucket('files/');
    const { proxy, url } = await BlackholeProxy.for(bucket.env['REMESSA_S3_ENDPOINT']!);
    const t = await startTestServer({
      env: { ...bucket.env, REMESSA_S3_ENDPOINT: url, REMESSA_INLINE_MAX_SIZE: '0', ...FAST },
      startWorkers: false,
    }).catch(closing(proxy, () => bucket.drop()));
    closeWith(ctx, t, proxy, () => bucket.drop());
    await t.createUser('s3silent', 's3silent-password');
    const auth = basic('s3silent', 's3silent-password');
    const link = (await uploadFile(t, auth, 'before.bin', bytes(300_000))).linkURL;

    proxy.silence();
    await unavailableWithinBound('upload', () => uploadRaw(t, auth, bytes(300_000), { file: 'during.bin' }));
    await unavailableWithinBound('download', () => call(link));

    proxy.restore();
    assert.equal((await uploadRaw(t, auth, bytes(300_000), { file: 'after.bin' })).status, 200);
    const again = await fetch(link);
    assert.equal(again.status, 200);
    assert.equal((await again.arrayBuffer()).byteLength, 300_000);
  });
});

describe('S3 bounds count silence, not duration', { skip: hasS3 ? false : S3_SKIP }, () => {
  test("a download whose client stops reading for longer than the bound is not cut: the store's socket waits paused", async (ctx) => {
    const bucket = await createTestBucket('files/');
    const t = await startTestServer({
      env: { ...bucket.env, REMESSA_INLINE_MAX_SIZE: '0', ...FAST },
      startWorkers: false,
    }).catch(closing(() => bucket.drop()));
    closeWith(ctx, t, () => bucket.drop());
    await t.createUser('s3slow', 's3slow-password');
    // Larger than what the sockets' buffers hold, so a reader that stops pauses the S3 response.
    const data = bytes(32 * 1024 * 1024);
    const up = await uploadRaw(t, basic('s3slow', 's3slow-password'), data, { file: 'big.bin' });
    assert.equal(up.status, 200);
    const link = (up.body['files'] as FileEntry[])[0]!.linkURL;
    const body = await new Promise<Buffer>((resolve, reject) => {
      http
        .get(link, (res) => {
          const chunks: Buffer[] = [];
          res.once('data', () => {
            // Three times REMESSA_BACKEND_TIMEOUT_SECONDS without reading.
            res.pause();
            setTimeout(() => res.resume(), 3000);
          });
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve(Buffer.concat(chunks)));
          res.on('error', reject);
        })
        .on('error', reject);
    });
    assert.equal(body.length, data.length);
    assert.ok(body.equals(data));
  });
});

/** `remessa serve` until it exits (killed after `limitMs`: then `code` is null). */
async function serveUntilExit(
  env: Record<string, string>,
  limitMs = 60_000,
): Promise<{ code: number | null; output: string }> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'remessa-silent-'));
  const port = await freePort();
  const child = spawn(process.execPath, [path.resolve('bin/remessa.js'), 'serve'], {
    env: {
      ...process.env,
      REMESSA_DATA_DIR: dataDir,
      REMESSA_PORT: String(port),
      REMESSA_HOST: '127.0.0.1',
      REMESSA_BASE_URL: `http://127.0.0.1:${port}/v1`,
      REMESSA_SECRET: 'silent-test-secret-silent-test-secret',
      ...FAST,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const limit = setTimeout(() => child.kill('SIGKILL'), limitMs);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  clearTimeout(limit);
  await rm(dataDir, { recursive: true, force: true });
  return { code, output };
}

describe('remessa serve against a silent backend', () => {
  test('PostgreSQL: says it waits for it, then exits non-zero naming it', {
    skip: hasPg ? false : PG_SKIP,
  }, async () => {
    const db = await createTempDatabase();
    const { proxy, url } = await BlackholeProxy.for(db.url);
    try {
      proxy.silence();
      const { code, output } = await serveUntilExit({ REMESSA_DATABASE_URL: url });
      assert.ok(code !== null, `still running after a minute:\n${output}`);
      assert.notEqual(code, 0, output);
      assert.ok(output.includes(`waiting for PostgreSQL at 127.0.0.1:${proxy.port}/`), output);
      assert.match(
        output,
        new RegExp(`remessa: PostgreSQL at 127\\.0\\.0\\.1:${proxy.port}/\\w+ is not reachable`),
      );
    } finally {
      await closeAll(proxy, () => db.drop());
    }
  });

  test('S3: says it checks the bucket, then exits non-zero naming it', {
    skip: hasS3 ? false : S3_SKIP,
  }, async () => {
    const bucket = await createTestBucket();
    const { proxy, url } = await BlackholeProxy.for(bucket.env['REMESSA_S3_ENDPOINT']!);
    try {
      proxy.silence();
      const { code, output } = await serveUntilExit({ ...bucket.env, REMESSA_S3_ENDPOINT: url });
      assert.ok(code !== null, `still running after a minute:\n${output}`);
      assert.notEqual(code, 0, output);
      const name = bucket.config.bucket;
      assert.ok(output.includes(`checking the file store: s3 bucket=${name} endpoint=${url}`), output);
      assert.ok(output.includes(`remessa: S3 bucket "${name}"`), output);
      assert.match(output, /is not reachable: no answer within 2 s/);
    } finally {
      await closeAll(proxy, () => bucket.drop());
    }
  });
});
