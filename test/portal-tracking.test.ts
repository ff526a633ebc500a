// Delivery tracking in the portal, in Debian's Chromium: on the sender's My files list a
// recipient goes from waiting to sent to downloaded, a failed SMS shows why, and "Resend" sends it
// again successfully. Real SMTP and SMS peers; screenshots under test-results/portal/.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import {
  browserSkip,
  launchBrowser,
  type OpenedPage,
  openPage,
  PHONE,
  screenshot,
  scrollsSideways,
  seriousAxeViolations,
} from './helpers/browser.js';
import { finishedDownloads } from './helpers/files.js';
import { eventually, HttpPeer, MailSink } from './helpers/peers.js';
import { basic, call, closeAll, startTestServer, type TestServer } from './helpers/server.js';

describe('portal: delivery tracking on the sender’s list', { skip: browserSkip() }, () => {
  let t: TestServer;
  let mail: MailSink;
  let sms: HttpPeer;
  let browser: Browser;
  const opened: OpenedPage[] = [];

  before(async () => {
    mail = await MailSink.start();
    sms = await HttpPeer.start();
    sms.status = 500;
    t = await startTestServer({
      env: {
        REMESSA_SMTP_URL: mail.url,
        REMESSA_SMS_PROVIDER: 'webhook',
        REMESSA_SMS_URL: `${sms.url}/sms`,
        REMESSA_NOTIFY_MAX_ATTEMPTS: '1',
        REMESSA_RECIPIENT_PIN: 'false',
      },
      startWorkers: false,
    });
    await t.createUser('alice', 'alice-password', { lang: 'en' });
    browser = await launchBrowser();
  });
  after(async () => {
    for (const o of opened) await o.close().catch(() => {});
    await closeAll(browser, t, mail, sms);
  });

  /** The line of one recipient under the file. */
  const line = (page: Page, address: string) =>
    page
      .getByRole('list', { name: 'Who was told about report.pdf' })
      .getByRole('listitem')
      .filter({ hasText: address });

  test('pending → sent → downloaded; a failed SMS is resent and goes out', async () => {
    const fd = new FormData();
    fd.append('file', new Blob([new Uint8Array(Buffer.alloc(2048, 3))]), 'report.pdf');
    const up = await call(`${t.base}/upload?m=bob@example.com&c=%2B5511999990000`, {
      method: 'POST',
      headers: { Authorization: basic('alice', 'alice-password') },
      body: fd,
    });
    assert.equal(up.status, 200);

    const o = await openPage(browser, { locale: 'en-US' });
    opened.push(o);
    const { page } = o;
    await page.goto(`${t.origin}/?lang=en`);
    await page.getByLabel('Username').fill('alice');
    await page.getByLabel('Password', { exact: true }).fill('alice-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation').getByRole('link', { name: 'My files' }).click();

    const bob = line(page, 'b***@example.com (e-mail)');
    const phone = line(page, '+55*******0000 (SMS)');
    await bob.getByText('Waiting to be sent').waitFor();
    await bob.getByText('Not downloaded yet').waitFor();
    await phone.getByText('Waiting to be sent').waitFor();
    assert.equal(
      await bob.getByRole('button', { name: /^Resend/ }).count(),
      0,
      'no resend while the message is on its way',
    );

    await t.server.services.notify.deliverDue();
    const link = /(https?:\/\/\S+\/download\/file\?lang=en&k=[A-Za-z0-9_-]+)/.exec(
      (await mail.take('bob@example.com')).text ?? '',
    )![1]!;
    await page.reload();
    await bob.getByText('Sent', { exact: true }).waitFor();
    // In the page's words; the transport's own answer only as a tooltip.
    await phone.getByText('Not sent: the SMS service did not accept the message').waitFor();
    assert.equal(await phone.locator('.message').getAttribute('title'), 'SMS webhook answered HTTP 500');

    const got = await fetch(link);
    assert.equal(got.status, 200);
    await got.arrayBuffer();
    // The download's audit row, which tracking reads, gets its outcome as the response ends.
    await eventually(async () => (await finishedDownloads(t)).length === 1);
    await page.reload();
    await bob.getByText(/^Downloaded \(1×, last .+\)$/).waitFor();
    await screenshot(page, 'tracking-list-desktop');
    assert.deepEqual(await seriousAxeViolations(page), []);

    sms.status = 201;
    await phone.getByRole('button', { name: 'Resend to +55*******0000' }).click();
    await page.getByText('The message to +55*******0000 is on its way again.').waitFor();
    await t.server.services.notify.deliverDue();
    assert.equal(JSON.parse(sms.requests.at(-1)!.body).to, '+5511999990000');
    await page.reload();
    await phone.getByText('Sent', { exact: true }).waitFor();
    await bob.getByText(/^Downloaded \(1×/).waitFor();

    await page.setViewportSize(PHONE);
    assert.equal(await scrollsSideways(page), false);
    await screenshot(page, 'tracking-list-phone');
    assert.deepEqual(o.cspViolations, []);
    assert.deepEqual(o.consoleErrors, []);
  });
});
