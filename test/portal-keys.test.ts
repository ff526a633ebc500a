// API keys in Debian's Chromium against the real server: a user makes an upload key with an
// expiry on the portal's API-keys page, reads it from the page (shown once), uses it from Node
// (uploads pass, the file list is refused), sees its last use, revokes it in the page and the key
// stops; the page in Spanish; in the admin console an admin makes a key for another account and
// revokes it, and an auditor reads the keys without Revoke or Create. axe, the CSP and no
// sideways scrolling on a phone on every page.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import {
  assertPageChecks,
  browserSkip,
  launchBrowser,
  type OpenedPage,
  openPage,
  signInWithPassword,
} from './helpers/browser.js';
import { makeKey, uploadStatus } from './helpers/keys.js';
import { eventually } from './helpers/peers.js';
import { basic, call, closeAll, startTestServer, type TestServer } from './helpers/server.js';

const KEY = /^rmk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/;

interface ListedKey {
  name: string;
  lastUsed: string | null;
  expires: string | null;
  scopes: string[] | null;
  revoked: string | null;
}

describe('API keys in the portal and the admin console', { skip: browserSkip() }, () => {
  let t: TestServer;
  let browser: Browser;
  const opened: OpenedPage[] = [];

  before(async () => {
    t = await startTestServer({ startWorkers: false });
    await t.createUser('alice', 'alice-password', { lang: 'en' });
    await t.createUser('pedro', 'pedro-password', { lang: 'es' });
    await t.createUser('root', 'root-password', { lang: 'en', role: 'admin' });
    await t.createUser('audra', 'audra-password', { lang: 'en', role: 'auditor' });
    browser = await launchBrowser();
  });
  after(async () => {
    for (const o of opened) await o.close().catch(() => {});
    await closeAll(browser, t);
  });

  async function open(url: string, locale = 'en-US'): Promise<OpenedPage> {
    const o = await openPage(browser, { locale });
    opened.push(o);
    await o.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: t.origin });
    await o.page.goto(url);
    return o;
  }
  /** axe on desktop and phone, no sideways scrolling, no CSP violation, screenshots. */
  const check = (o: OpenedPage, name: string) => assertPageChecks(o, `keys-${name}`);
  async function keysOf(name: string): Promise<ListedKey[]> {
    const r = await call(`${t.base}/admin/keys?user=${name}`, {
      headers: { Authorization: basic('root', 'root-password') },
    });
    assert.equal(r.status, 200);
    return r.body['keys'] as ListedKey[];
  }
  /** The key a page shows once, after checking the warning and the example. */
  async function shownKey(page: Page, user: string, name: string, path: string): Promise<string> {
    await page
      .getByText(
        'Copy this key now: it will not be shown again. If it is lost, revoke it and create a new one.',
      )
      .waitFor();
    const field = page.getByLabel(`Key “${name}”`);
    assert.equal(await field.getAttribute('readonly'), '');
    const key = await field.inputValue();
    assert.match(key, KEY);
    const example = await page.locator('pre.example').innerText();
    assert.ok(example.startsWith(`curl -u '${user}:${key}'`), example);
    assert.ok(example.includes(`'${t.base}${path}'`), example);
    return key;
  }
  const row = (page: Page, name: string) =>
    page.locator('table.grid tr', { has: page.getByRole('cell', { name, exact: true }) });
  const cell = (page: Page, name: string, column: string) =>
    row(page, name).locator(`td[data-label="${column}"]`);

  test('a user makes an upload key with an expiry, uses it, sees its last use and revokes it', async () => {
    const o = await open(`${t.origin}/?lang=en`);
    const { page } = o;
    await signInWithPassword(page, 'alice', 'alice-password');
    await page.getByRole('navigation').getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    await page.getByText('No API keys yet.').waitFor();
    // A plain user is offered the scopes a plain user can use.
    assert.deepEqual(await page.locator('fieldset.rights label').allInnerTexts(), [
      'Upload files (upload)',
      'List files (download)',
      'Manage webhooks (webhooks)',
    ]);
    await check(o, 'empty');

    const day = await page.evaluate(() => {
      const d = new Date();
      d.setDate(d.getDate() + 30);
      const p = (n: number) => String(n).padStart(2, '0');
      return {
        value: `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}`,
        start: new Date(d.getFullYear(), d.getMonth(), d.getDate()).toISOString(),
      };
    });
    await page.getByLabel('Name').fill('nightly upload');
    await page.getByLabel('Expires on').fill(day.value);
    await page.getByLabel('Upload files').check();
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = await shownKey(page, 'alice', 'nightly upload', '/upload?file=report.pdf');
    await page.getByRole('button', { name: 'Copy key' }).click();
    await page.getByText('Key copied.').waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), key);
    assert.equal(await page.getByLabel('Name').inputValue(), '', 'the form is empty again');
    await cell(page, 'nightly upload', 'State').getByText('Active').waitFor();
    assert.equal(await cell(page, 'nightly upload', 'Rights').innerText(), 'Upload files');
    assert.equal(await cell(page, 'nightly upload', 'Last used').innerText(), 'Never');
    assert.equal(
      await cell(page, 'nightly upload', 'Expires').locator('time').getAttribute('datetime'),
      day.start,
    );
    await check(o, 'created');

    // The key from a script: an upload passes, the file list is outside its scope.
    const auth = basic('alice', key);
    assert.equal(await uploadStatus(t, auth), 200);
    const list = await call(`${t.base}/download/list?page=1`, { headers: { Authorization: auth } });
    assert.equal(list.status, 403);
    const [listed] = await eventually(async () => {
      const keys = await keysOf('alice');
      return keys[0]?.lastUsed ? keys : undefined;
    });
    assert.deepEqual([listed!.scopes, listed!.expires], [['upload'], day.start]);

    // Shown once: after a reload the list has the last use and the key is nowhere on the page.
    await page.reload();
    await cell(page, 'nightly upload', 'Last used').locator('time').waitFor();
    assert.equal(
      await cell(page, 'nightly upload', 'Last used').locator('time').getAttribute('datetime'),
      listed!.lastUsed,
    );
    assert.ok(!(await page.content()).includes(key.slice(21)), 'the key is not shown again');

    await page.getByRole('button', { name: 'Revoke key nightly upload' }).click();
    await page
      .getByText('Revoke the key “nightly upload”? Every program using it stops working at once.')
      .waitFor();
    await page.getByRole('button', { name: 'Yes, revoke nightly upload' }).click();
    await page.getByText('Key nightly upload revoked.').waitFor();
    await cell(page, 'nightly upload', 'State').getByText('Revoked').waitFor();
    assert.equal(await page.getByRole('button', { name: /^Revoke key/ }).count(), 0);
    assert.equal(await uploadStatus(t, auth), 401);
    await check(o, 'revoked');
  });

  test('es: the page in Spanish', async () => {
    const { page } = await open(`${t.origin}/?lang=es#/keys`, 'es-ES');
    await signInWithPassword(page, 'pedro', 'pedro-password', ['Usuario', 'Contraseña', 'Iniciar sesión']);
    await page.getByRole('navigation').getByRole('link', { name: 'Claves de API' }).click();
    await page.getByRole('heading', { name: 'Claves de API', level: 1 }).waitFor();
    await page.getByText('Todavía no hay claves de API.').waitFor();
  });

  test('an admin makes a key for another account in the console and revokes it', async () => {
    const o = await open(`${t.origin}/admin?lang=en#/users/alice`);
    const { page } = o;
    await signInWithPassword(page, 'root', 'root-password');
    await page.getByRole('heading', { name: 'User alice' }).waitFor();
    await cell(page, 'nightly upload', 'State').getByText('Revoked').waitFor();
    const form = page.getByRole('region', { name: 'Create key for this user' });
    // The account's role decides what may be offered: alice is a plain user.
    assert.equal(await form.getByRole('checkbox').count(), 3);
    await form.getByLabel('Name').fill('erp export');
    await form.getByRole('button', { name: 'Create key' }).click();
    const key = await shownKey(page, 'alice', 'erp export', '/upload?file=report.pdf');
    await cell(page, 'erp export', 'Rights').getByText("All the account's rights").waitFor();
    await check(o, 'admin-created');
    const made = (await keysOf('alice')).find((k) => k.name === 'erp export');
    assert.deepEqual([made?.scopes, made?.revoked, made?.expires], [null, null, null]);
    assert.equal(await uploadStatus(t, basic('alice', key)), 200);

    await page.getByRole('button', { name: 'Revoke key erp export' }).click();
    await page.getByRole('button', { name: 'Yes, revoke erp export' }).click();
    await page.getByText('Key erp export revoked.').waitFor();
    await cell(page, 'erp export', 'State').getByText('Revoked').waitFor();
    assert.equal(await uploadStatus(t, basic('alice', key)), 401);
  });

  test('an auditor reads the keys without Revoke or Create', async () => {
    await makeKey(t, basic('alice', 'alice-password'), { name: 'still active' });
    const o = await open(`${t.origin}/admin?lang=en#/users/alice`);
    const { page } = o;
    await signInWithPassword(page, 'audra', 'audra-password');
    await page.getByRole('heading', { name: 'User alice' }).waitFor();
    await cell(page, 'erp export', 'State').getByText('Revoked').waitFor();
    await cell(page, 'nightly upload', 'Rights').getByText('Upload files').waitFor();
    await cell(page, 'still active', 'State').getByText('Active').waitFor();
    assert.equal(await page.locator('main button').count(), 0, 'no change buttons');
    assert.equal(await page.getByRole('heading', { name: 'Create key for this user' }).count(), 0);
    await check(o, 'auditor');
  });
});
