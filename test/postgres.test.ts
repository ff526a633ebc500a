// The key auth flows against PostgreSQL (REMESSA_DATABASE_URL), and two server instances sharing
// one database as they would behind a load balancer. Without a reachable PostgreSQL this file
// skips with PG_SKIP, unless REMESSA_TEST_REQUIRE_PG=1 (CI), where that is a failure.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { rowCount } from './helpers/files.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';
import {
  APIVER,
  basic,
  call,
  closeAll,
  ERROR_KEYS,
  errorKeys,
  GO_TIME,
  startTestServer,
  type TestServer,
} from './helpers/server.js';

const available = await postgresAvailable();

if (!available && PG_REQUIRED) {
  test('PostgreSQL is required here (REMESSA_TEST_REQUIRE_PG=1)', () => {
    assert.fail(`REMESSA_TEST_REQUIRE_PG=1 but PostgreSQL is not reachable. ${PG_SKIP}`);
  });
}

const skip = available ? false : PG_SKIP;

const FORM = { Content_type: 'application/x-www-form-urlencoded' };

function token(base: string, username: string, password: string) {
  return call(`${base}/oauth2/token`, {
    method: 'POST',
    headers: FORM,
    body: new URLSearchParams({ grant_type: 'password', username, password }).toString(),
  });
}

function login(base: string, name: string, password: string) {
  return call(`${base}/auth/login`, {
    method: 'POST',
    headers: { Authorization: basic(name, password), Content_type: 'application/json' },
  });
}

function logout(base: string, bearer: string) {
  return call(`${base}/auth/logout`, { method: 'POST', headers: { Authorization: `Bearer ${bearer}` } });
}

async function bearerFrom(base: string, name: string, password: string): Promise<string> {
  const r = await token(base, name, password);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return String(r.body['access_token']);
}

describe('auth flows on PostgreSQL', { skip }, () => {
  let db: { url: string; drop(): Promise<void> };
  let t: TestServer;
  before(async () => {
    db = await createTempDatabase();
    t = await startTestServer({ env: { REMESSA_DATABASE_URL: db.url } });
    await t.createUser('USER1', 'correct-horse');
  });
  after(async () => {
    await closeAll(t, () => db?.drop());
  });

  test('the server really uses PostgreSQL: no SQLite file in the data dir', () => {
    assert.equal(t.server.services.dialect, 'postgres');
    assert.equal(existsSync(path.join(t.dataDir, 'remessa.db')), false);
  });

  test('forgetParameters by e-mail address finds the account whatever the case (lower() in SQL)', async () => {
    await t.createUser('mixed', 'mixed-password', { email: 'Mixed.Case@Example.com' });
    const before = await rowCount(t, 'outbox');
    const r = await call(`${t.base}/auth/forgetParameters?u=mixed.case%40example.COM`);
    assert.equal(r.status, 401);
    assert.equal(await rowCount(t, 'outbox'), before + 1, 'the PIN e-mail was queued');
  });

  test('token endpoint: 200 token object, 401 and 400 OAuth error objects', async () => {
    const r = await token(t.base, 'user1', 'correct-horse');
    assert.equal(r.status, 200);
    assert.deepEqual(Object.keys(r.body), ['access_token', 'token_type', 'expires_in', 'scope']);
    assert.equal(r.body['token_type'], 'Bearer');
    assert.equal(r.body['expires_in'], 3600);
    assert.equal(r.body['scope'], t.base);
    assert.equal(r.headers.get('cache-control'), 'no-store');

    const wrong = await token(t.base, 'USER1', 'wrong-horse');
    assert.equal(wrong.status, 401);
    assert.deepEqual(wrong.body, { error: 401, error_description: 'Unauthorized', error_uri: t.base });
    const unknown = await token(t.base, 'nobody', 'whatever-1');
    assert.deepEqual(unknown.body, { error: 401, error_description: 'Unauthorized', error_uri: t.base });
    const bad = await call(`${t.base}/oauth2/token`, {
      method: 'POST',
      headers: FORM,
      body: 'grant_type=password',
    });
    assert.deepEqual(bad.body, { error: 400, error_description: 'Bad Request', error_uri: t.base });
  });

  test('login returns the envelope; logout revokes that token only', async () => {
    const r = await login(t.base, 'USER1', 'correct-horse');
    assert.equal(r.status, 200);
    assert.deepEqual(Object.keys(r.body), ['status', 'description', 'apiver', 'time', 'user', 'bearer']);
    assert.equal(r.body['status'], 0);
    assert.equal(r.body['description'], 'handlerAuthLogin:succsessfully');
    assert.match(String(r.body['apiver']), APIVER);
    assert.match(String(r.body['time']), GO_TIME);
    assert.equal(r.body['user'], 'USER1');
    const bearer = String(r.body['bearer']);
    const other = await bearerFrom(t.base, 'USER1', 'correct-horse');

    const out = await logout(t.base, bearer);
    assert.equal(out.status, 200);
    assert.deepEqual(Object.keys(out.body), ['status', 'description', 'apiver', 'time', 'user']);
    assert.equal(out.body['description'], 'handlerAuthLogout:succsessfully');
    const again = await logout(t.base, bearer);
    assert.equal(again.status, 401);
    assert.deepEqual(errorKeys(again.body), ERROR_KEYS);
    assert.equal(again.body['description'], 'Unauthorized');
    assert.equal((await logout(t.base, other)).status, 200, 'another token of the same user still works');
  });

  test('five wrong passwords lock the account; the lock ends after 15 minutes', async () => {
    await t.createUser('locky', 'locky-password');
    for (let i = 0; i < 5; i++) assert.equal((await login(t.base, 'locky', 'wrong-password')).status, 401);
    assert.equal((await login(t.base, 'locky', 'locky-password')).status, 401);
    assert.equal((await token(t.base, 'locky', 'locky-password')).status, 401);
    const events = await t.server.services.audit.query({ user: 'locky' });
    assert.equal(events.filter((e) => e.event === 'user.locked').length, 1);
    assert.equal(events.filter((e) => e.event === 'login.failed').length, 7);
    await t.advanceClock(15 * 60 * 1000 + 1000);
    assert.equal((await login(t.base, 'locky', 'locky-password')).status, 200);
  });

  test('a password change, disable and removal revoke earlier tokens', async () => {
    const { users } = t.server.services;
    await t.createUser('rev', 'rev-password-1');
    const before1 = await bearerFrom(t.base, 'rev', 'rev-password-1');
    await users.setPassword(await users.get('rev'), 'rev-password-2', 'test');
    assert.equal((await logout(t.base, before1)).status, 401);
    assert.equal((await token(t.base, 'rev', 'rev-password-1')).status, 401);
    const before2 = await bearerFrom(t.base, 'rev', 'rev-password-2');

    await users.setEnabled('rev', false);
    assert.equal((await logout(t.base, before2)).status, 401);
    assert.equal((await token(t.base, 'rev', 'rev-password-2')).status, 401);
    await users.setEnabled('rev', true);
    const before3 = await bearerFrom(t.base, 'rev', 'rev-password-2');

    await users.remove('rev');
    assert.equal((await logout(t.base, before3)).status, 401);
  });

  test('a duplicate user name is refused case-insensitively (unique violation on PostgreSQL)', async () => {
    await assert.rejects(t.createUser('user1', 'another-password'), /already exists/);
  });
});

describe('two server instances on one PostgreSQL database', { skip }, () => {
  let db: { url: string; drop(): Promise<void> };
  let a: TestServer;
  let b: TestServer;
  /** Each instance's own address; both are configured with a's REMESSA_BASE_URL (one public URL). */
  let baseA: string;
  let baseB: string;
  before(async () => {
    db = await createTempDatabase();
    a = await startTestServer({ env: { REMESSA_DATABASE_URL: db.url } });
    b = await startTestServer({ env: { REMESSA_DATABASE_URL: db.url, REMESSA_BASE_URL: a.base } });
    baseA = a.base;
    baseB = `${b.origin}/v1`;
    await a.createUser('shared', 'shared-password');
  });
  after(async () => {
    await closeAll(a, b, () => db?.drop());
  });

  test('a user created through one instance signs in on the other', async () => {
    const r = await token(baseB, 'shared', 'shared-password');
    assert.equal(r.status, 200);
    assert.equal(r.body['scope'], baseA, 'scope is the public base URL, whichever instance answers');
  });

  test('each accepts a token issued by the other; a logout on one is seen by the other', async () => {
    const fromA = await bearerFrom(baseA, 'shared', 'shared-password');
    const fromB = String((await login(baseB, 'shared', 'shared-password')).body['bearer']);

    assert.equal((await logout(baseB, fromA)).status, 200, 'b accepts a token issued by a');
    assert.equal((await logout(baseA, fromA)).status, 401, 'a sees the logout made on b');
    assert.equal((await logout(baseA, fromB)).status, 200, 'a accepts a token issued by b');
    assert.equal((await logout(baseB, fromB)).status, 401, 'b sees the logout made on a');
  });

  test('a password change through one instance revokes tokens on the other', async () => {
    await a.createUser('mover', 'mover-password-1');
    const fromB = await bearerFrom(baseB, 'mover', 'mover-password-1');
    const { users } = a.server.services;
    await users.setPassword(await users.get('mover'), 'mover-password-2', 'test');
    assert.equal((await logout(baseB, fromB)).status, 401);
    assert.equal((await token(baseB, 'mover', 'mover-password-2')).status, 200);
  });

  test('failed attempts on both instances add up to one lockout', async () => {
    await a.createUser('split', 'split-password');
    for (const base of [baseA, baseB, baseA, baseB, baseA])
      assert.equal((await login(base, 'split', 'wrong-password')).status, 401);
    assert.equal((await login(baseB, 'split', 'split-password')).status, 401, 'locked on b too');
    assert.equal((await login(baseA, 'split', 'split-password')).status, 401, 'locked on a');
  });
});
