// Single sign-on when the provider's answer must not be believed, or never comes: an ID token
// signed by another key, from another issuer, for another audience, expired, carrying the nonce of
// an earlier sign-in; a token endpoint that answers nonsense or nothing; a provider that is not
// there. Each gets its page and audit row, creates nothing, and the rest of Remessa keeps serving.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  CLIENT_ID,
  type FakeMode,
  type FakeProvider,
  fakeProviderEnv,
  signInThroughFake,
  startFakeProvider,
} from './helpers/oidc-provider.js';
import { closeAll, freePort, startTestServer, type TestServer } from './helpers/server.js';
import { assertFailurePage, trade, userNames } from './helpers/sso.js';

describe('single sign-on: ID tokens that fail their checks, providers that fail', () => {
  let t: TestServer;
  let fake: FakeProvider;

  before(async () => {
    fake = await startFakeProvider();
    t = await startTestServer({ env: fakeProviderEnv(fake, { REMESSA_LANG: 'en' }) });
  });
  after(() => closeAll(t, fake));

  test('a good token signs in (PKCE S256 sent) and creates the account, as allowed', async () => {
    fake.mode = 'good';
    fake.claims = {
      sub: 'fake-1',
      preferred_username: 'fakeuser',
      email: 'fake@corp.example',
      locale: 'pt-BR',
    };
    const res = await signInThroughFake(t.base);
    assert.equal(res.status, 302);
    const { status, body } = await trade(t, res.headers.get('location')!);
    assert.equal(status, 200);
    // The provider offers no end-session endpoint: no logout URL.
    assert.deepEqual(Object.keys(body).sort(), ['apiver', 'bearer', 'description', 'status', 'time', 'user']);
    assert.ok(fake.pkceChecked);
    const user = await t.server.services.users.get('fakeuser');
    assert.deepEqual(
      [user.sso_subject, user.email, user.lang, user.role],
      ['fake-1', 'fake@corp.example', 'pt', 'user'],
    );
  });

  const refusals: [FakeMode, string][] = [
    ['other-key', 'signed by a key the provider does not publish'],
    ['other-issuer', 'from another issuer'],
    ['other-audience', 'for another client'],
    ['expired', 'expired'],
    ['stale-nonce', 'carrying the nonce of an earlier sign-in'],
  ];
  for (const [mode, what] of refusals) {
    test(`an ID token ${what} is refused (502), and nothing is created`, async () => {
      fake.mode = mode;
      fake.claims = { sub: `fake-${mode}`, preferred_username: `u-${mode}` };
      const before = await userNames(t);
      await assertFailurePage(t, await signInThroughFake(t.base), 502, 'untrusted');
      assert.deepEqual(await userNames(t), before);
    });
  }

  test('a token endpoint answering nonsense gives the 502 page', async () => {
    fake.mode = 'nonsense';
    await assertFailurePage(t, await signInThroughFake(t.base), 502, 'unreachable');
  });

  test('a token endpoint that never answers gives the 502 page (bounded, not hung)', async () => {
    fake.mode = 'hang';
    fake.claims = { sub: 'fake-hang', preferred_username: 'u-hang' };
    await assertFailurePage(t, await signInThroughFake(t.base), 502, 'unreachable');
    assert.ok(!(await userNames(t)).includes('u-hang'));
    const row = await t.server.services.db
      .selectFrom('audit')
      .select('detail')
      .where('event', '=', 'login.oidc.failed')
      .orderBy('id', 'desc')
      .executeTakeFirst();
    assert.match(row?.detail ?? '', /^unreachable: /);
  });
});

describe('single sign-on: a provider that is not there', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({
      env: {
        REMESSA_OIDC_ISSUER: `http://127.0.0.1:${await freePort()}`,
        REMESSA_OIDC_CLIENT_ID: CLIENT_ID,
        REMESSA_OIDC_NAME: 'Corp',
      },
    });
  });
  after(() => closeAll(t));

  test('starting a sign-in gives the 502 page in the browser’s language; the rest of Remessa serves', async () => {
    const res = await fetch(`${t.base}/auth/oidc/start?lang=es`, { redirect: 'manual' });
    await assertFailurePage(t, res, 502, 'unreachable', 'es');
    assert.equal(res.headers.get('set-cookie'), null);
    const row = await t.server.services.db
      .selectFrom('audit')
      .select('detail')
      .where('event', '=', 'login.oidc.failed')
      .executeTakeFirst();
    assert.match(row?.detail ?? '', /^unreachable: discovery of http:\/\/127\.0\.0\.1:\d+ failed: /);
    assert.equal((await fetch(`${t.base}/healthz`)).status, 200);
    await t.createUser('pat', 'password-123');
    const login = await fetch(`${t.base}/auth/login`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from('pat:password-123').toString('base64')}` },
    });
    assert.equal(login.status, 200);
  });

  test('without single sign-on configured the routes answer 404', async () => {
    const plain = await startTestServer();
    try {
      const res = await fetch(`${plain.base}/auth/oidc/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"code":"x"}',
      });
      assert.equal(res.status, 404);
      assert.equal(((await res.json()) as { detail: string }).detail, 'single sign-on is not configured');
    } finally {
      await plain.close();
    }
  });
});
