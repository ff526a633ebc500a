// Single sign-on in Chromium, end to end, against a real OpenID provider (oidc-provider): a person
// clicks "Sign in with <name>", fills the provider's login form, lands in the portal as the mapped
// user with the mapped role, sends a file, signs out, and the provider's session ends with it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { browserSkip, launchBrowser, type OpenedPage, openPage } from './helpers/browser.js';
import { type IdentityProvider, issuerOnFreePort, startIdentityProvider } from './helpers/oidc-provider.js';
import { closeAll, startTestServer, type TestServer } from './helpers/server.js';
import { sendFromPortal, signInThroughProvider, ssoEnv } from './helpers/sso.js';

describe('single sign-on in the browser', { skip: browserSkip() }, () => {
  let t: TestServer;
  let idp: IdentityProvider;
  let browser: Browser;
  let o: OpenedPage | undefined;

  before(async () => {
    const issuer = await issuerOnFreePort();
    t = await startTestServer({
      env: ssoEnv(issuer, { REMESSA_OIDC_CREATE_USERS: 'true' }),
    });
    idp = await startIdentityProvider(issuer, t.base);
    browser = await launchBrowser();
  });
  after(async () => {
    await o?.close().catch(() => {});
    await closeAll(browser, idp, t);
  });

  test('sign in through the provider, send a file, sign out of both', async () => {
    await t.createUser('bob', 'bob-password', { lang: 'en' });
    idp.people.set('sub-zoe', {
      preferred_username: 'zoe',
      email: 'zoe@corp.example',
      locale: 'en-GB',
      groups: ['remessa-admins'],
    });
    o = await openPage(browser, { locale: 'en-US' });
    const { page } = o;
    await page.goto(`${t.origin}/?lang=en`);
    await signInThroughProvider(page, 'sub-zoe');
    // The one-time code is gone from the address.
    assert.equal(new URL(page.url()).hash, '#/send');
    const token = await page.evaluate(() => sessionStorage.getItem('remessa.token'));
    assert.ok(token);
    const zoe = await t.server.services.users.get('zoe');
    assert.deepEqual(
      [zoe.role, zoe.sso_subject, zoe.email, zoe.lang],
      ['admin', 'sub-zoe', 'zoe@corp.example', 'en'],
    );
    const admin = await fetch(`${t.base}/admin/users/zoe`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(admin.status, 200);
    assert.equal(((await admin.json()) as { account: { role: string } }).account.role, 'admin');

    await sendFromPortal(page, 'sso.txt', 'bob');
    const upload = await t.server.services.db
      .selectFrom('audit')
      .select('user_name')
      .where('event', '=', 'upload')
      .executeTakeFirst();
    assert.equal(upload?.user_name, 'zoe');

    // Signing out ends the portal's session and, through RP-initiated logout, the provider's.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Yes, sign me out' }).click();
    await page.waitForURL(`${t.origin}/`);
    const revoked = await fetch(`${t.base}/admin/users`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(revoked.status, 401);
    await page.getByRole('link', { name: 'Sign in with Test IdP' }).click();
    // Signed out at the provider too: it asks for the login again.
    await page.locator('input[name="login"]').waitFor();
  });
});
