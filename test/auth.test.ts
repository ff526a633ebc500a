// Token endpoint, login, logout, envelope shape, lockout and revocation over real HTTP.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ResourceOwnerPassword } from 'simple-oauth2';
import {
  APIVER,
  basic,
  call,
  closeWith,
  ERROR_KEYS,
  errorKeys,
  GO_TIME,
  serverFor,
  startTestServer,
  type TestServer,
} from './helpers/server.js';

const FORM = { Content_type: 'application/x-www-form-urlencoded' };
const form = (o: Record<string, string>) => new URLSearchParams(o).toString();

describe('auth endpoints', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer();
    await t.createUser('USER1', 'correct-horse');
    await t.createUser('locky', 'locky-password');
    await t.createUser('gone', 'gone-password');
  });
  after(() => t.close());

  const token = (body: string, headers: Record<string, string> = FORM) =>
    call(`${t.base}/oauth2/token`, { method: 'POST', headers, body });

  test('token endpoint issues a bearer token exactly as interface §2.1', async () => {
    const r = await token(form({ grant_type: 'password', username: 'USER1', password: 'correct-horse' }));
    assert.equal(r.status, 200);
    assert.deepEqual(Object.keys(r.body), ['access_token', 'token_type', 'expires_in', 'scope']);
    assert.equal(r.body['token_type'], 'Bearer');
    assert.equal(r.body['expires_in'], 3600);
    assert.equal(r.body['scope'], t.base);
    assert.equal(typeof r.body['access_token'], 'string');
    assert.equal(r.headers.get('cache-control'), 'no-store');
    assert.equal(r.headers.get('pragma'), 'no-cache');
  });

  test('user names match case-insensitively', async () => {
    const r = await token(form({ grant_type: 'password', username: 'user1', password: 'correct-horse' }));
    assert.equal(r.status, 200);
  });

  const oauthErrorCases: [string, string, Record<string, string> | undefined, number][] = [
    ['missing grant_type', form({ username: 'USER1', password: 'correct-horse' }), undefined, 400],
    [
      'unsupported grant_type',
      form({ grant_type: 'client_credentials', username: 'USER1', password: 'x' }),
      undefined,
      400,
    ],
    ['missing username', form({ grant_type: 'password', password: 'correct-horse' }), undefined, 400],
    ['missing password', form({ grant_type: 'password', username: 'USER1' }), undefined, 400],
    [
      'JSON instead of a form',
      JSON.stringify({ grant_type: 'password', username: 'USER1', password: 'correct-horse' }),
      { 'Content-Type': 'application/json' },
      400,
    ],
    [
      'unknown user',
      form({ grant_type: 'password', username: 'nobody', password: 'whatever1' }),
      undefined,
      401,
    ],
    [
      'wrong password',
      form({ grant_type: 'password', username: 'USER1', password: 'wrong-one' }),
      undefined,
      401,
    ],
  ];
  for (const [name, body, headers, status] of oauthErrorCases) {
    test(`token endpoint: ${name} → ${status} OAuth error object`, async () => {
      const r = await token(body, headers ?? FORM);
      assert.equal(r.status, status);
      assert.deepEqual(r.body, {
        error: status,
        error_description: status === 400 ? 'Bad Request' : 'Unauthorized',
        error_uri: t.base,
      });
    });
  }

  test('a real OAuth2 client library (simple-oauth2) gets a token with the password grant', async () => {
    const client = new ResourceOwnerPassword({
      client: { id: 'remessa-test', secret: 'unused' },
      auth: { tokenHost: t.origin, tokenPath: `${new URL(t.base).pathname}/oauth2/token` },
      options: { authorizationMethod: 'body' },
    });
    const accessToken = await client.getToken({ username: 'USER1', password: 'correct-horse' });
    assert.equal(accessToken.token['token_type'], 'Bearer');
    assert.equal(accessToken.token['scope'], t.base);
    assert.equal(typeof accessToken.token['access_token'], 'string');
    // The bearer from the library works on an endpoint that requires Bearer.
    const out = await call(`${t.base}/auth/logout`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${String(accessToken.token['access_token'])}` },
    });
    assert.equal(out.status, 200);
    await assert.rejects(
      client.getToken({ username: 'USER1', password: 'bad-password' }),
      /Unauthorized|401/,
    );
  });

  test('login with Basic returns the envelope with user and a working bearer', async () => {
    const r = await call(`${t.base}/auth/login`, {
      method: 'POST',
      headers: { Authorization: basic('USER1', 'correct-horse'), Content_type: 'application/json' },
    });
    assert.equal(r.status, 200);
    assert.deepEqual(Object.keys(r.body), ['status', 'description', 'apiver', 'time', 'user', 'bearer']);
    assert.equal(r.body['status'], 0);
    assert.equal(r.body['description'], 'handlerAuthLogin:succsessfully');
    assert.match(String(r.body['apiver']), APIVER);
    assert.match(String(r.body['time']), GO_TIME);
    assert.equal(r.body['user'], 'USER1');
    const bearer = String(r.body['bearer']);
    const out = await call(`${t.base}/auth/logout`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${bearer}` },
    });
    assert.equal(out.status, 200);
    assert.deepEqual(Object.keys(out.body), ['status', 'description', 'apiver', 'time', 'user']);
    assert.equal(out.body['description'], 'handlerAuthLogout:succsessfully');
    // Logged out: the same token is refused.
    const again = await call(`${t.base}/auth/logout`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${bearer}` },
    });
    assert.equal(again.status, 401);
    assert.deepEqual(errorKeys(again.body), ERROR_KEYS);
  });

  test('login: missing Authorization → 401 with WWW-Authenticate; malformed Basic → 400; wrong → 401', async () => {
    const missing = await call(`${t.base}/auth/login`, {
      method: 'POST',
      headers: { Content_type: 'application/json' },
    });
    assert.equal(missing.status, 401);
    assert.match(missing.headers.get('www-authenticate') ?? '', /^Basic /);
    assert.equal(missing.body['description'], 'Unauthorized');
    assert.equal(missing.body['status'], 401);
    assert.equal(missing.body['user'], undefined);
    assert.deepEqual(errorKeys(missing.body), ERROR_KEYS);

    const malformed = await call(`${t.base}/auth/login`, {
      method: 'POST',
      headers: { Authorization: 'Basic !!!not-base64' },
    });
    assert.equal(malformed.status, 400);
    assert.equal(malformed.body['description'], 'Bad Request');
    const noColon = await call(`${t.base}/auth/login`, {
      method: 'POST',
      headers: { Authorization: `Basic ${Buffer.from('justaname').toString('base64')}` },
    });
    assert.equal(noColon.status, 400);

    const wrong = await call(`${t.base}/auth/login`, {
      method: 'POST',
      headers: { Authorization: basic('USER1', 'nope-nope') },
    });
    assert.equal(wrong.status, 401);
    assert.match(String(wrong.body['time']), GO_TIME);
  });

  test('unknown paths and wrong methods are answered in the envelope', async () => {
    const nf = await call(`${t.base}/no/such/path`);
    assert.equal(nf.status, 404);
    assert.equal(nf.body['description'], 'Not Found');
    assert.deepEqual(errorKeys(nf.body), ERROR_KEYS);
    const na = await call(`${t.base}/auth/login`);
    assert.equal(na.status, 405);
    assert.equal(na.body['description'], 'Method Not Allowed');
    assert.match(na.headers.get('allow') ?? '', /POST/);
  });

  test('security headers are on every response', async () => {
    const r = await call(`${t.base}/nothing`);
    assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(r.headers.get('referrer-policy'), 'no-referrer');
    assert.match(r.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
  });

  test('five wrong passwords lock the account for 15 minutes, even against the right password', async () => {
    for (let i = 0; i < 5; i++) {
      const r = await call(`${t.base}/auth/login`, {
        method: 'POST',
        headers: { Authorization: basic('locky', 'wrong-password') },
      });
      assert.equal(r.status, 401);
    }
    const locked = await call(`${t.base}/auth/login`, {
      method: 'POST',
      headers: { Authorization: basic('locky', 'locky-password') },
    });
    assert.equal(locked.status, 401);
    const viaToken = await token(
      form({ grant_type: 'password', username: 'locky', password: 'locky-password' }),
    );
    assert.equal(viaToken.status, 401);
    assert.equal(viaToken.body['error'], 401);
    const events = await t.server.services.audit.query({ user: 'locky' });
    assert.ok(events.some((e) => e.event === 'user.locked'));
    assert.equal(events.filter((e) => e.event === 'login.failed').length, 7);

    await t.advanceClock(15 * 60 * 1000 + 1000);
    const unlocked = await call(`${t.base}/auth/login`, {
      method: 'POST',
      headers: { Authorization: basic('locky', 'locky-password') },
    });
    assert.equal(unlocked.status, 200);
  });

  test('a success resets the failure count', async () => {
    await t.createUser('resetter', 'resetter-pass');
    const attempt = (pw: string) =>
      call(`${t.base}/auth/login`, { method: 'POST', headers: { Authorization: basic('resetter', pw) } });
    for (let i = 0; i < 4; i++) assert.equal((await attempt('bad-password')).status, 401);
    assert.equal((await attempt('resetter-pass')).status, 200);
    for (let i = 0; i < 4; i++) assert.equal((await attempt('bad-password')).status, 401);
    assert.equal((await attempt('resetter-pass')).status, 200);
  });

  test('password change, disable and removal revoke earlier tokens', async () => {
    const { users } = t.server.services;
    const issue = async (name: string, pw: string) =>
      String(
        (await token(form({ grant_type: 'password', username: name, password: pw }))).body['access_token'],
      );
    const works = async (bearer: string) =>
      (
        await call(`${t.base}/auth/logout`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${bearer}` },
        })
      ).status;

    await t.createUser('rev', 'rev-password-1');
    const before1 = await issue('rev', 'rev-password-1');
    await users.setPassword(await users.get('rev'), 'rev-password-2', 'test');
    assert.equal(await works(before1), 401);
    const after1 = await issue('rev', 'rev-password-2');
    assert.equal(await works(after1), 200);

    const before2 = await issue('rev', 'rev-password-2');
    await users.setEnabled('rev', false);
    assert.equal(await works(before2), 401);
    const disabled = await token(
      form({ grant_type: 'password', username: 'rev', password: 'rev-password-2' }),
    );
    assert.equal(disabled.status, 401);
    await users.setEnabled('rev', true);
    assert.equal(await works(before2), 401, 're-enabling does not resurrect old tokens');

    const before3 = await issue('gone', 'gone-password');
    await users.remove('gone');
    assert.equal(await works(before3), 401);
    // A new account with the same name does not inherit the old one's tokens.
    await t.createUser('gone', 'gone-password');
    assert.equal(await works(before3), 401);
  });

  test('tampered, foreign and expired bearer tokens are refused', async () => {
    const good = String(
      (await token(form({ grant_type: 'password', username: 'USER1', password: 'correct-horse' }))).body[
        'access_token'
      ],
    );
    const parts = good.split('.');
    const tampered = `${parts[0]}.${parts[1]}.${parts[2]!.slice(0, -2)}AA`;
    for (const bad of [tampered, 'not.a.jwt', 'x']) {
      const r = await call(`${t.base}/auth/logout`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${bad}` },
      });
      assert.equal(r.status, 401, bad);
    }
    await t.advanceClock(3601 * 1000);
    const expired = await call(`${t.base}/auth/logout`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${good}` },
    });
    assert.equal(expired.status, 401);
  });

  test('auth events are audited and secrets never reach the log', async () => {
    const events = (await t.server.services.audit.query({})).map((e) => e.event);
    for (const e of ['token.issued', 'login', 'login.failed', 'logout', 'user.locked'])
      assert.ok(events.includes(e), e);
    const all = t.logs.join('\n');
    for (const secret of ['correct-horse', 'locky-password', 'rev-password'])
      assert.ok(!all.includes(secret), secret);
    assert.ok(!/eyJhbGciOi/.test(all), 'no bearer token in logs');
  });
});

describe('configuration', () => {
  test('REMESSA_TOKEN_SECONDS sets expires_in for the token endpoint', async (ctx) => {
    const t = await serverFor(ctx, { env: { REMESSA_TOKEN_SECONDS: '120' } });
    await t.createUser('short', 'short-password');
    const r = await call(`${t.base}/oauth2/token`, {
      method: 'POST',
      headers: FORM,
      body: form({ grant_type: 'password', username: 'short', password: 'short-password' }),
    });
    assert.equal(r.body['expires_in'], 120);
  });

  test('the API is mounted at the path of REMESSA_BASE_URL', async (ctx) => {
    const t = await serverFor(ctx, { apiPath: '/directlink/v1' });
    await t.createUser('deep', 'deep-password');
    assert.equal(t.base.endsWith('/directlink/v1'), true);
    const r = await call(`${t.base}/oauth2/token`, {
      method: 'POST',
      headers: FORM,
      body: form({ grant_type: 'password', username: 'deep', password: 'deep-password' }),
    });
    assert.equal(r.status, 200);
    assert.equal(r.body['scope'], t.base);
    const bad = await call(`${t.base}/oauth2/token`, { method: 'POST', headers: FORM, body: '' });
    assert.equal(bad.body['error_uri'], t.base);
  });
});

describe('internal failures', () => {
  test('a broken database → 500 OAuth error object on the token endpoint, 500 envelope elsewhere', async (ctx) => {
    const t = await startTestServer();
    closeWith(ctx, () => t.close().catch(() => {}));
    await t.createUser('broken', 'broken-password');
    // Pull the database out from under the running server.
    await t.server.services.db.destroy();
    const r = await call(`${t.base}/oauth2/token`, {
      method: 'POST',
      headers: FORM,
      body: form({ grant_type: 'password', username: 'broken', password: 'broken-password' }),
    });
    assert.equal(r.status, 500);
    assert.deepEqual(r.body, { error: 500, error_description: 'Internal server error', error_uri: t.base });
    const login = await call(`${t.base}/auth/login`, {
      method: 'POST',
      headers: { Authorization: basic('broken', 'broken-password') },
    });
    assert.equal(login.status, 500);
    assert.equal(login.body['description'], 'Internal Server Error');
    assert.deepEqual(errorKeys(login.body), ERROR_KEYS);
    assert.ok(!JSON.stringify(login.body).includes('driver'), 'no internals in the answer');
  });
});
