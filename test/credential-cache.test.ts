// The verified-credential cache for Basic auth: a second request with the same name and
// password skips argon2, and a password change, disable, removal or lock ends that at once, also
// when it happens on another instance (or in the CLI) sharing the database. Run against two
// instances on one SQLite file and two instances on one PostgreSQL database. Logouts likewise.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CredentialCache } from '../src/features/auth/credential-cache.js';
import { OffsetClock } from '../src/platform/clock.js';
import type { UserRow } from '../src/platform/sql/schema.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';
import { basic, call, closeAll, startTestServer, type TestServer } from './helpers/server.js';

const pg = await postgresAvailable();
if (!pg && PG_REQUIRED) throw new Error(PG_SKIP);

type Backend = {
  name: string;
  skip: string | false;
  start(): Promise<[TestServer, TestServer, () => Promise<void>]>;
};

const backends: Backend[] = [
  {
    name: 'SQLite (two instances on one database file)',
    skip: false,
    async start() {
      const a = await startTestServer({ startWorkers: false });
      const b = await startTestServer({
        dataDir: a.dataDir,
        env: { REMESSA_BASE_URL: a.base },
        startWorkers: false,
      });
      // b first: a owns (and removes) the data dir.
      return [a, b, () => closeAll(b, a)];
    },
  },
  {
    name: 'PostgreSQL (two instances on one database)',
    skip: pg ? false : PG_SKIP,
    async start() {
      const database = await createTempDatabase();
      const env = { REMESSA_DATABASE_URL: database.url };
      const a = await startTestServer({ env, startWorkers: false });
      const b = await startTestServer({ env: { ...env, REMESSA_BASE_URL: a.base }, startWorkers: false });
      return [a, b, () => closeAll(a, b, () => database.drop())];
    },
  },
];

for (const backend of backends) {
  describe(`credential cache: ${backend.name}`, { skip: backend.skip }, () => {
    let a: TestServer;
    let b: TestServer;
    let stop: () => Promise<void>;
    before(async () => {
      [a, b, stop] = await backend.start();
    });
    after(() => stop?.());

    /** A Basic-authenticated request (the area listing) to instance `t`: its status. */
    const list = async (t: TestServer, name: string, password: string) =>
      (
        await call(`${t.server.address}/v1/download/list?page=1`, {
          headers: { Authorization: basic(name, password) },
        })
      ).status;
    const cached = (t: TestServer) => t.server.services.auth.cachedCredentials;

    /** Signs `name` in on B twice: the second time from B's cache. */
    const warm = async (name: string, password: string) => {
      assert.equal(await list(b, name, password), 200);
      const size = cached(b);
      assert.equal(await list(b, name, password), 200);
      assert.equal(cached(b), size, 'the second request is a hit, not a new entry');
    };

    test('a verified credential is remembered; a failure never is', async () => {
      await a.createUser('hitter', 'hitter-password');
      const before = cached(b);
      assert.equal(await list(b, 'hitter', 'wrong-password'), 401);
      assert.equal(await list(b, 'nobody-here', 'hitter-password'), 401);
      assert.equal(cached(b), before, 'failures are not cached');
      assert.equal(await list(b, 'hitter', 'hitter-password'), 200);
      assert.equal(cached(b), before + 1);
      assert.equal(await list(b, 'HITTER', 'hitter-password'), 200, 'names match case-insensitively');
      assert.equal(cached(b), before + 1);
      assert.equal(await list(b, 'hitter', 'hitter-password '), 401, 'a different password misses');
      assert.equal(await list(b, 'hitter', 'hitter-password'), 200);
    });

    test('a password change on A ends the cached credential on B at once', async () => {
      await a.createUser('changer', 'changer-password-1');
      await warm('changer', 'changer-password-1');
      const { users } = a.server.services;
      await users.setPassword(await users.get('changer'), 'changer-password-2', 'test');
      assert.equal(await list(b, 'changer', 'changer-password-1'), 401);
      assert.equal(await list(b, 'changer', 'changer-password-2'), 200);
    });

    test('disabling on A ends the cached credential on B at once', async () => {
      await a.createUser('disabled', 'disabled-password');
      await warm('disabled', 'disabled-password');
      await a.server.services.users.setEnabled('disabled', false);
      assert.equal(await list(b, 'disabled', 'disabled-password'), 401);
      await a.server.services.users.setEnabled('disabled', true);
      assert.equal(await list(b, 'disabled', 'disabled-password'), 200);
    });

    test('removal on A ends the cached credential on B at once', async () => {
      await a.createUser('removed', 'removed-password');
      await warm('removed', 'removed-password');
      await a.server.services.users.remove('removed');
      assert.equal(await list(b, 'removed', 'removed-password'), 401);
      // A new account of that name is a new credential, verified afresh.
      await a.createUser('removed', 'other-password');
      assert.equal(await list(b, 'removed', 'removed-password'), 401);
      assert.equal(await list(b, 'removed', 'other-password'), 200);
    });

    test('a lock from wrong passwords on A ends the cached credential on B at once', async () => {
      await a.createUser('lockme', 'lockme-password');
      await warm('lockme', 'lockme-password');
      for (let i = 0; i < 5; i++) assert.equal(await list(a, 'lockme', 'wrong-password'), 401);
      const user = await b.server.services.users.find('lockme');
      assert.ok(user!.locked_until > b.clock.now(), 'locked');
      assert.equal(await list(b, 'lockme', 'lockme-password'), 401);
      assert.equal(await list(a, 'lockme', 'lockme-password'), 401);
      const audit = await a.server.services.audit.query({ user: 'lockme', event: 'login.failed' });
      assert.equal(audit.at(-1)?.detail, 'locked', 'the refusal on B is audited as a locked sign-in');
    });

    test('a bearer token logged out on A is refused on B at once, and the other way round', async () => {
      await a.createUser('leaver', 'leaver-password');
      const login = async (t: TestServer) => {
        const r = await call(`${t.server.address}/v1/auth/login`, {
          method: 'POST',
          headers: { Authorization: basic('leaver', 'leaver-password') },
        });
        assert.equal(r.status, 200);
        return String(r.body['bearer']);
      };
      const useOn = async (t: TestServer, token: string, path = '/download/list?page=1') =>
        (
          await call(`${t.server.address}/v1${path}`, {
            method: path === '/auth/logout' ? 'POST' : 'GET',
            headers: { Authorization: `Bearer ${token}` },
          })
        ).status;
      for (const [from, to] of [
        [a, b],
        [b, a],
      ] as const) {
        const token = await login(from);
        assert.equal(await useOn(to, token), 200);
        assert.equal(await useOn(from, token, '/auth/logout'), 200);
        assert.equal(await useOn(to, token), 401);
        assert.equal(await useOn(from, token), 401);
      }
    });
  });
}

describe('credential cache bounds', () => {
  const user = (id: number): UserRow => ({
    id,
    name: `u${id}`,
    name_key: `u${id}`,
    email: null,
    mobile: null,
    lang: 'en',
    enabled: 1,
    first_access: 0,
    password_hash: `hash-${id}`,
    token_generation: 0,
    failed_logins: 0,
    locked_until: 0,
    created_at: 0,
    updated_at: 0,
    recovery_failures: 0,
    recovery_window_end: 0,
    recovery_locked_until: 0,
    recovery_locks: 0,
    role: 'user',
    last_sign_in_at: null,
    sso_subject: null,
    quota_bytes: null,
    max_file_bytes: null,
    usage_bytes: 0,
    quota_warned: 0,
  });

  test('holds at most maxEntries, forgetting the least recently used', () => {
    const cache = new CredentialCache(new OffsetClock(), { maxEntries: 2, ttlMs: 60_000 });
    cache.remember('k1', user(1));
    cache.remember('k2', user(2));
    assert.ok(cache.hit('k1', user(1))); // k1 is now the most recent
    cache.remember('k3', user(3));
    assert.equal(cache.size, 2);
    assert.ok(!cache.hit('k2', user(2)), 'the least recently used went');
    assert.ok(cache.hit('k1', user(1)));
    assert.ok(cache.hit('k3', user(3)));
  });

  test('an entry expires after ttlMs and is verified afresh', () => {
    // A clock that stands still between steps: no real time may leak into the TTL.
    let now = 1_000_000;
    const cache = new CredentialCache({ now: () => now }, { maxEntries: 10, ttlMs: 60_000 });
    cache.remember('k1', user(1));
    now += 59_000;
    assert.ok(cache.hit('k1', user(1)));
    now += 1_000;
    assert.ok(!cache.hit('k1', user(1)));
    assert.equal(cache.size, 0);
  });

  test('an entry never answers for another account or a changed one', () => {
    const cache = new CredentialCache(new OffsetClock());
    cache.remember('k1', user(1));
    assert.ok(!cache.hit('k1', user(2)), 'another id');
    cache.remember('k1', user(1));
    assert.ok(!cache.hit('k1', { ...user(1), token_generation: 1 }), 'a new generation');
    cache.remember('k1', user(1));
    assert.ok(!cache.hit('k1', undefined), 'no account');
  });
});
