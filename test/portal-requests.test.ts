// Upload requests in Debian's Chromium against the real server: a user makes a request with one
// invited address on the portal's Requests page and reads its link from the page, sees it listed,
// sees a file that arrived (sent over tus from Node with the link's token and PIN) and who sent it,
// closes it after a confirmation, and the request's page answers 410. In the admin console an
// admin lists every request and closes one; an auditor reads the list without Close. axe, the CSP
// and no sideways scrolling on a phone on every page.
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
import { MailSink } from './helpers/peers.js';
import { makeRequest, requestUpload, tokenOf } from './helpers/requests.js';
import { basic, call, closeAll, startTestServer, type TestServer } from './helpers/server.js';

describe('upload requests in the portal and the admin console', { skip: browserSkip() }, () => {
  let t: TestServer;
  let mail: MailSink;
  let browser: Browser;
  const opened: OpenedPage[] = [];

  before(async () => {
    mail = await MailSink.start();
    t = await startTestServer({ env: { REMESSA_SMTP_URL: mail.url }, startWorkers: false });
    await t.createUser('alice', 'alice-password', { lang: 'en' });
    await t.createUser('root', 'root-password', { lang: 'en', role: 'admin' });
    await t.createUser('audra', 'audra-password', { lang: 'en', role: 'auditor' });
    browser = await launchBrowser();
  });
  after(async () => {
    for (const o of opened) await o.close().catch(() => {});
    await closeAll(browser, t, mail);
  });

  async function open(url: string): Promise<OpenedPage> {
    const o = await openPage(browser, { locale: 'en-US' });
    opened.push(o);
    await o.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: t.origin });
    await o.page.goto(url);
    return o;
  }
  /** axe on desktop and phone, no sideways scrolling, no CSP violation, screenshots. */
  const check = (o: OpenedPage, name: string) => assertPageChecks(o, `requests-${name}`);
  const card = (page: Page, title: string) =>
    page.locator('article.request', { has: page.getByRole('heading', { name: title, level: 3 }) });

  test('a user asks for files, shares the link, sees what arrived and closes the request', async () => {
    const o = await open(`${t.origin}/?lang=en`);
    const { page } = o;
    await signInWithPassword(page, 'alice', 'alice-password');
    await page.getByRole('navigation').getByRole('link', { name: 'Requests' }).click();
    await page.getByRole('heading', { name: 'Upload requests', level: 1 }).waitFor();
    await page.getByText('No requests yet.').waitFor();

    await page.getByLabel('Title').fill('Tax papers');
    await page.getByLabel('Message', { exact: true }).fill('Your 2024 receipts, please.');
    await page.getByLabel('E-mail recipients').fill('bob@example.com');
    await page.getByLabel('Max files').fill('5');
    await page.getByLabel('Reusable until closed').check();
    await page.getByRole('button', { name: 'Create request' }).click();
    await page.getByText('Request “Tax papers” created. Share its link:').waitFor();
    const field = page.getByRole('textbox', { name: 'Link for bob@example.com' }).first();
    const url = await field.inputValue();
    assert.match(url, new RegExp(`^${t.origin}/request\\?t=[A-Za-z0-9_-]+$`));
    await page.getByRole('button', { name: 'Copy link: Link for bob@example.com' }).first().click();
    await page.getByText('Link copied.').first().waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), url);

    const listed = card(page, 'Tax papers Open');
    await listed.waitFor();
    await check(o, 'portal');

    // The invited address asks for its PIN and sends a file over tus from Node.
    const token = tokenOf(url);
    assert.equal((await call(`${t.base}/requests/pin?t=${token}`, { method: 'POST' })).status, 200);
    await t.server.services.notify.deliverDue();
    const pin = /\b(\d{6})\b/.exec((await mail.take('bob@example.com')).text ?? '')![1]!;
    const up = await requestUpload(t, token, 'receipts.pdf', Buffer.from('receipts of 2024'), { pin });
    assert.equal(up.status, 201, up.detail);

    await page.reload();
    await listed.getByText('1 file(s), 16 B').waitFor();
    await listed.getByText('Files received (1)').click();
    await listed.getByText('receipts.pdf').waitFor();
    await listed.getByText(/from bob@example\.com/).waitFor();

    await listed.getByRole('button', { name: 'Close Tax papers' }).click();
    await page.getByText('Close “Tax papers”? Its links stop taking files at once.').waitFor();
    await page.getByRole('button', { name: 'Close “Tax papers”' }).click();
    await page.getByText('Request “Tax papers” closed.').waitFor();
    await card(page, 'Tax papers Closed').waitFor();
    const gone = await call(`${t.base}/requests/open?t=${token}`);
    assert.equal(gone.status, 410);
    assert.equal(gone.body['detail'], 'request closed');
    await check(o, 'portal-closed');
  });

  test('the console: an admin closes any request, an auditor reads without Close', async () => {
    const made = await makeRequest(t, basic('alice', 'alice-password'), { title: 'For the console' });
    const auditor = await open(`${t.origin}/admin?lang=en#/requests`);
    await signInWithPassword(auditor.page, 'audra', 'audra-password');
    const seen = card(auditor.page, 'For the console Open');
    await seen.waitFor();
    await seen.getByText('alice', { exact: true }).waitFor();
    assert.equal(await seen.getByRole('button', { name: 'Close For the console' }).count(), 0);
    await check(auditor, 'console-auditor');

    const o = await open(`${t.origin}/admin?lang=en#/requests`);
    const { page } = o;
    await signInWithPassword(page, 'root', 'root-password');
    const listed = card(page, 'For the console Open');
    await listed.getByRole('button', { name: 'Close For the console' }).click();
    await page.getByRole('button', { name: 'Close “For the console”' }).click();
    await page.getByText('Request “For the console” closed.').waitFor();
    await card(page, 'For the console Closed').waitFor();
    const rows = await t.server.services.audit.query({ event: 'request.closed' });
    assert.ok(rows.some((r) => r.actor === 'root'));
    assert.equal((await call(`${t.base}/requests/open?t=${made.token}`)).status, 410);
    await check(o, 'console-admin');
  });
});
