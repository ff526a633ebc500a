// The whole way in for a company, end to end in Chromium, on two instances sharing PostgreSQL with
// password sign-in off: a person signs in through the identity provider (oidc-provider), lands in
// the portal as the mapped user with the mapped role, sends a file, makes an API key on the
// API-keys page; a script then uploads with that key over Basic and through the token endpoint,
// with no change of code, on both instances; after the key is revoked in the page the same script
// gets 401 on both.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { browserSkip, launchBrowser, type OpenedPage, openPage } from './helpers/browser.js';
import { passwordGrant, uploadStatus } from './helpers/keys.js';
import { type IdentityProvider, issuerOnFreePort, startIdentityProvider } from './helpers/oidc-provider.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';
import { basic, closeAll, startTestServer, type TestServer } from './helpers/server.js';
import { sendFromPortal, signInThroughProvider, ssoEnv } from './helpers/sso.js';

const available = await postgresAvailable();
if (!available && PG_REQUIRED) throw new Error(PG_SKIP);
const skip = browserSkip() || (available ? false : PG_SKIP);

describe('single sign-on, an API key and a script, on two instances', { skip }, () => {
  let database: Awaited<ReturnType<typeof createTempDatabase>>;
  let a: TestServer;
  let b: TestServer;
  let idp: IdentityProvider;
  let browser: Browser;
  let o: OpenedPage | undefined;

  before(async () => {
    database = await createTempDatabase();
    const issuer = await issuerOnFreePort();
    const env = ssoEnv(issuer, {
      REMESSA_DATABASE_URL: database.url,
      REMESSA_OIDC_CREATE_USERS: 'true',
      REMESSA_PASSWORD_LOGIN: 'false',
    });
    a = await startTestServer({ env });
    b = await startTestServer({ env });
    idp = await startIdentityProvider(issuer, a.base);
    browser = await launchBrowser();
  });
  after(async () => {
    await o?.close().catch(() => {});
    await closeAll(browser, idp, a, b, () => database?.drop());
  });

  /** The script: an upload with the key as Basic's password, and one with a token obtained with it. */
  async function script(t: TestServer, key: string) {
    const grant = await passwordGrant(t, 'maria', key);
    const viaToken = grant.token ? await uploadStatus(t, grant.token, 'via-token.txt') : grant.status;
    return { basic: await uploadStatus(t, basic('maria', key), 'via-basic.txt'), token: viaToken };
  }

  test('sign in, send, make a key; the script works on both instances until the key is revoked', async () => {
    await a.createUser('bob', null, { lang: 'en' });
    idp.people.set('sub-maria', {
      preferred_username: 'maria',
      email: 'maria@corp.example',
      locale: 'en-US',
      groups: ['remessa-audit'],
    });
    o = await openPage(browser, { locale: 'en-US' });
    const { page } = o;
    await page.goto(`${a.origin}/?lang=en`);
    // Password sign-in is off: the page offers only the provider.
    assert.equal(await page.getByLabel('Password', { exact: true }).count(), 0);
    await signInThroughProvider(page, 'sub-maria');
    const maria = await b.server.services.users.get('maria');
    assert.deepEqual([maria.role, maria.sso_subject], ['auditor', 'sub-maria']);

    await sendFromPortal(page, 'contract.txt', 'bob');

    await page.getByRole('navigation').getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    await page.getByLabel('Name').fill('erp export');
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = await page.getByLabel('Key “erp export”').inputValue();
    assert.match(key, /^rmk_[0-9a-f]{16}_/);

    // A person who signs in only through the provider has no password, yet a script works.
    for (const t of [a, b]) assert.deepEqual(await script(t, key), { basic: 200, token: 200 }, t.base);

    await page.getByRole('button', { name: 'Revoke key erp export' }).click();
    await page.getByRole('button', { name: 'Yes, revoke erp export' }).click();
    await page.getByText('Key erp export revoked.').waitFor();
    for (const t of [a, b]) assert.deepEqual(await script(t, key), { basic: 401, token: 401 }, t.base);
  });
});
