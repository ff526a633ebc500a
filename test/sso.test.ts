// Single sign-on against a real OpenID provider (oidc-provider), driven over HTTP without a
// browser: the account rules (bound to `sub`, the role re-read at every sign-in, no take-over by
// name or e-mail, no account made unless allowed) and the callback's refusals (replayed state,
// tampered callback, another browser, a person who declines), each with its page and audit row.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  type IdentityProvider,
  issuerOnFreePort,
  signInAtProvider,
  startIdentityProvider,
} from './helpers/oidc-provider.js';
import { closeAll, GO_TIME, startTestServer, type TestServer } from './helpers/server.js';
import { assertFailurePage, ssoEnv, trade, userNames } from './helpers/sso.js';

describe('single sign-on with a real OpenID provider', () => {
  let t: TestServer;
  let idp: IdentityProvider;

  before(async () => {
    const issuer = await issuerOnFreePort();
    t = await startTestServer({
      env: ssoEnv(issuer, { REMESSA_LANG: 'en' }),
    });
    idp = await startIdentityProvider(issuer, t.base);
  });
  after(() => closeAll(idp, t));

  const callback = (url: string, cookie: string | null) =>
    fetch(url, { redirect: 'manual', headers: cookie ? { cookie } : {} });

  test('an existing account is bound to the subject at its first sign-in and gets the mapped role', async () => {
    await t.createUser('alice', null, { email: 'old@example.com', lang: 'pt' });
    idp.people.set('sub-alice', {
      preferred_username: 'alice',
      email: 'alice@corp.example',
      locale: 'es-ES',
      groups: ['staff', 'remessa-admins'],
    });
    const { callback: url, cookie } = await signInAtProvider(t.base, 'sub-alice');
    const res = await callback(url, cookie);
    assert.equal(res.status, 302);
    const location = res.headers.get('location')!;
    assert.match(location, new RegExp(`^${t.origin}/#/sso/[A-Za-z0-9_-]{43}$`));
    assert.match(
      res.headers.get('set-cookie') ?? '',
      /^remessa_sso=; Path=\/v1\/auth\/oidc\/callback; Max-Age=0; HttpOnly; SameSite=Lax$/,
    );
    const { status, body } = await trade(t, location);
    assert.equal(status, 200);
    assert.deepEqual(Object.keys(body).sort(), [
      'apiver',
      'bearer',
      'description',
      'logoutUrl',
      'status',
      'time',
      'user',
    ]);
    assert.equal(body['description'], 'handlerAuthSso:succsessfully');
    assert.equal(body['user'], 'alice');
    assert.match(String(body['time']), GO_TIME);
    const logout = new URL(String(body['logoutUrl']));
    assert.equal(`${logout.origin}${logout.pathname}`, `${idp.issuer}/session/end`);
    assert.equal(logout.searchParams.get('post_logout_redirect_uri'), `${t.origin}/`);
    assert.ok(logout.searchParams.get('id_token_hint'));
    // The bearer token works, as the admin the provider's group made the account.
    const users = await fetch(`${t.base}/admin/users`, {
      headers: { authorization: `Bearer ${body['bearer']}` },
    });
    assert.equal(users.status, 200);
    const row = await t.server.services.users.get('alice');
    assert.equal(row.sso_subject, 'sub-alice');
    assert.equal(row.role, 'admin');
    assert.equal(row.email, 'alice@corp.example');
    assert.equal(row.lang, 'es');
    const events = await t.server.services.db
      .selectFrom('audit')
      .select(['event', 'detail'])
      .where('user_name', '=', 'alice')
      .orderBy('id')
      .execute();
    assert.deepEqual(
      events.map((e) => e.event),
      ['user.created', 'user.updated', 'user.updated', 'login.oidc'],
    );
    assert.equal(events[1]!.detail, 'sso_subject; sso');
    assert.equal(events[2]!.detail, 'email,lang,role=admin; sso');
    // The code works once.
    const again = await trade(t, location);
    assert.equal(again.status, 401);
    assert.equal(again.body['detail'], 'unknown, used or expired sign-in code');
    // The token is never in a URL or a log line.
    assert.ok(!t.logs.some((l) => l.includes(String(body['bearer']))));
    assert.ok(!t.logs.some((l) => l.includes(location.split('/sso/')[1]!)));
  });

  test('a group removed at the provider demotes the account at the next sign-in (even the last admin)', async () => {
    idp.people.set('sub-alice', { ...idp.people.get('sub-alice'), groups: ['staff'] });
    const { callback: url, cookie } = await signInAtProvider(t.base, 'sub-alice');
    const res = await callback(url, cookie);
    assert.equal(res.status, 302);
    assert.equal((await trade(t, res.headers.get('location')!)).status, 200);
    assert.equal((await t.server.services.users.get('alice')).role, 'user');
    const last = await t.server.services.db
      .selectFrom('audit')
      .select(['event', 'detail'])
      .where('event', '=', 'user.updated')
      .orderBy('id', 'desc')
      .executeTakeFirst();
    assert.equal(last?.detail, 'role=user; sso');
  });

  test('a replayed callback fails: the state was used', async () => {
    const { callback: url, cookie } = await signInAtProvider(t.base, 'sub-alice', { lang: 'pt' });
    assert.equal((await callback(url, cookie)).status, 302);
    await assertFailurePage(t, await callback(url, cookie), 400, 'expired');
  });

  test('a callback in another browser (no cookie) is refused, in the language the sign-in started with', async () => {
    const { callback: url } = await signInAtProvider(t.base, 'sub-alice', { lang: 'pt' });
    await assertFailurePage(t, await callback(url, null), 403, 'other-browser', 'pt');
    // …and its state cannot be used afterwards either.
    await assertFailurePage(t, await callback(url, null), 400, 'expired');
  });

  test('a tampered callback fails: another code, another state', async () => {
    const first = await signInAtProvider(t.base, 'sub-alice');
    const url = new URL(first.callback);
    url.searchParams.set('code', `${url.searchParams.get('code')}x`);
    await assertFailurePage(t, await callback(url.toString(), first.cookie), 400, 'rejected');
    const second = await signInAtProvider(t.base, 'sub-alice');
    const other = new URL(second.callback);
    other.searchParams.set('state', 'A'.repeat(43));
    const res = await fetch(other, {
      redirect: 'manual',
      headers: { cookie: second.cookie, 'accept-language': 'es-ES,es;q=0.9' },
    });
    await assertFailurePage(t, res, 400, 'expired', 'es');
  });

  test('a person who declines at the provider gets a page, and nothing is created', async () => {
    idp.people.set('sub-dora', { preferred_username: 'dora' });
    const { callback: url, cookie } = await signInAtProvider(t.base, 'sub-dora', { abort: true });
    await assertFailurePage(t, await callback(url, cookie), 403, 'denied');
    assert.ok(!(await userNames(t)).includes('dora'));
  });

  test('without REMESSA_OIDC_CREATE_USERS an unknown person is refused and no account is made', async () => {
    idp.people.set('sub-nobody', { preferred_username: 'nobody', email: 'nobody@corp.example' });
    const before = await userNames(t);
    const { callback: url, cookie } = await signInAtProvider(t.base, 'sub-nobody');
    await assertFailurePage(t, await callback(url, cookie), 403, 'no-account');
    assert.deepEqual(await userNames(t), before);
  });

  test('another subject claiming a bound name is refused', async () => {
    idp.people.set('sub-mallory', { preferred_username: 'alice', groups: ['remessa-admins'] });
    const { callback: url, cookie } = await signInAtProvider(t.base, 'sub-mallory');
    await assertFailurePage(t, await callback(url, cookie), 403, 'name-taken');
    assert.equal((await t.server.services.users.get('alice')).sso_subject, 'sub-alice');
  });

  test('a changed e-mail cannot take over another account; the bound account follows its own', async () => {
    await t.createUser('carol@corp.example', null, { email: 'carol@corp.example' });
    idp.people.set('sub-carol', { email: 'carol@corp.example' });
    let flow = await signInAtProvider(t.base, 'sub-carol');
    assert.equal((await callback(flow.callback, flow.cookie)).status, 302);
    // Eve changes her e-mail (and so, without preferred_username, her user name) to Carol's.
    idp.people.set('sub-eve', { email: 'carol@corp.example' });
    flow = await signInAtProvider(t.base, 'sub-eve');
    await assertFailurePage(t, await callback(flow.callback, flow.cookie), 403, 'name-taken');
    // Carol's new address does not move her to another account.
    idp.people.set('sub-carol', { email: 'carol.new@corp.example' });
    flow = await signInAtProvider(t.base, 'sub-carol');
    const res = await callback(flow.callback, flow.cookie);
    assert.equal((await trade(t, res.headers.get('location')!)).body['user'], 'carol@corp.example');
    const carol = await t.server.services.users.get('carol@corp.example');
    assert.equal(carol.sso_subject, 'sub-carol');
    assert.equal(carol.email, 'carol.new@corp.example');
  });

  test('a disabled account is refused', async () => {
    await t.server.services.users.setEnabled('alice', false);
    const { callback: url, cookie } = await signInAtProvider(t.base, 'sub-alice');
    await assertFailurePage(t, await callback(url, cookie), 403, 'disabled');
    await t.server.services.users.setEnabled('alice', true);
  });

  test('a user name Remessa does not accept is refused', async () => {
    idp.people.set('sub-odd', { preferred_username: 'has spaces/slash' });
    const { callback: url, cookie } = await signInAtProvider(t.base, 'sub-odd');
    await assertFailurePage(t, await callback(url, cookie), 403, 'bad-name');
  });

  test('the admin console signs in through the provider too', async () => {
    const { callback: url, cookie } = await signInAtProvider(t.base, 'sub-alice', { to: 'admin' });
    const res = await callback(url, cookie);
    assert.match(res.headers.get('location')!, new RegExp(`^${t.origin}/admin#/sso/`));
  });
});
