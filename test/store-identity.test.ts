// Instances that share a database must share a store: a second instance on the same PostgreSQL
// database with a local store of its own refuses to start and says how to fix it (before, it
// started and answered "stored file is damaged" for every file the first one stored), and a store
// swapped under a running instance makes it unready.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { STORE_IDENTITY_KEY } from '../src/platform/blobs/store-identity.js';
import { ROOT, run } from './helpers/cli.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';
import { call, closeAll, startTestServer } from './helpers/server.js';

const available = await postgresAvailable();
if (!available && PG_REQUIRED) {
  test('PostgreSQL is required here (REMESSA_TEST_REQUIRE_PG=1)', () => {
    assert.fail(`REMESSA_TEST_REQUIRE_PG=1 but PostgreSQL is not reachable. ${PG_SKIP}`);
  });
}

const FIX = /Every instance sharing a database must share one store: use REMESSA_STORAGE=s3/;

describe('one database, one store', { skip: available ? false : PG_SKIP }, () => {
  test('a second instance with a local store of its own refuses to start, saying how to fix it', async (t) => {
    const db = await createTempDatabase();
    const dirA = await mkdtemp(path.join(tmpdir(), 'remessa-store-a-'));
    const dirB = await mkdtemp(path.join(tmpdir(), 'remessa-store-b-'));
    const env = { REMESSA_DATABASE_URL: db.url };
    const a = await startTestServer({ env, dataDir: dirA });
    t.after(() =>
      closeAll(
        a,
        () => db.drop(),
        () => rm(dirA, { recursive: true, force: true }),
        () => rm(dirB, { recursive: true, force: true }),
      ),
    );
    await assert.rejects(startTestServer({ env, dataDir: dirB }), (err: Error) => {
      assert.match(err.message, /is not the one this database's files are in/);
      assert.match(err.message, FIX);
      return true;
    });

    // `remessa serve` says so and exits, instead of serving.
    const served = await run(process.execPath, [path.join(ROOT, 'bin/remessa.js'), 'serve'], {
      env: {
        ...env,
        REMESSA_DATA_DIR: dirB,
        REMESSA_PORT: '0',
        REMESSA_SECRET: 'another-secret-another-secret',
      },
    });
    assert.equal(served.code, 1);
    assert.match(
      served.stderr,
      /^remessa: the blob store \(local dir=.*\) is not the one this database's files are in/,
    );
    assert.match(served.stderr, FIX);
    assert.doesNotMatch(served.stderr, /\n\s+at /, 'no stack trace');

    // The same store (a shared filesystem) is fine.
    const again = await startTestServer({ env, dataDir: dirA });
    await again.close();
  });

  test('a store swapped under a running instance makes it unready', async (t) => {
    const db = await createTempDatabase();
    const s = await startTestServer({ env: { REMESSA_DATABASE_URL: db.url } });
    t.after(() => closeAll(s, () => db.drop()));
    assert.equal((await call(`${s.base}/readyz`)).status, 200);
    await s.server.services.blobs.delete(STORE_IDENTITY_KEY);
    const r = await call(`${s.base}/readyz`);
    assert.equal(r.status, 503);
    assert.equal(r.body['detail'], "not ready: storage is not the store this database's files are in");
  });
});
