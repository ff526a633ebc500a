// Portal end to end against the real endpoints (files, recipients, secure links, recovery), in
// Debian's Chromium: links and codes are read from the e-mails a real SMTP server received, the
// way a person would. Adapted from the portal engineer's draft (docs/portal.md §Tests).
// Screenshots go to test-results/portal/flows-*.png.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import type { ParsedMail } from 'mailparser';
import type { Browser, Download, Page } from 'playwright-core';
import {
  browserSkip,
  launchBrowser,
  type OpenedPage,
  openPage,
  PHONE,
  screenshot,
  scrollsSideways,
} from './helpers/browser.js';
import { MailSink } from './helpers/peers.js';
import { closeAll, startTestServer, type TestServer } from './helpers/server.js';

function pinIn(mail: ParsedMail): string {
  const m = /\b(\d{6})\b/.exec(mail.text ?? '');
  assert.ok(m, `no code in mail: ${mail.text}`);
  return m[1]!;
}

function linkIn(mail: ParsedMail, path: string): string {
  const m = new RegExp(`(https?://\\S+${path.replace(/\//g, '\\/')}\\?\\S+)`).exec(mail.text ?? '');
  assert.ok(m, `no ${path} link in mail: ${mail.text}`);
  return m[1]!;
}

async function bytesOf(download: Download): Promise<Buffer> {
  const file = await download.path();
  assert.ok(file, 'the download finished');
  return readFile(file);
}

describe('portal end-to-end flows (files + recipients + recovery)', { skip: browserSkip() }, () => {
  let t: TestServer;
  let mail: MailSink;
  let browser: Browser;
  const opened: OpenedPage[] = [];
  const hello = Buffer.from('hello');
  const binary = randomBytes(300 * 1024 + 3);

  before(async () => {
    mail = await MailSink.start();
    t = await startTestServer({ env: { REMESSA_SMTP_URL: mail.url } });
    await t.createUser('alice', 'alice-password', { lang: 'en' });
    await t.createUser('bob', 'bob-password', { lang: 'en' });
    await t.createUser('dave', 'dave-password', { lang: 'en', email: 'dave@example.com' });
    browser = await launchBrowser();
  });
  after(async () => {
    for (const o of opened) await o.close().catch(() => {});
    await closeAll(browser, t, mail);
  });

  const open = async (url: string, viewport?: { width: number; height: number }) => {
    const o = await openPage(browser, { locale: 'en-US', ...(viewport ? { viewport } : {}) });
    opened.push(o);
    await o.page.goto(url);
    return o;
  };
  const signIn = async (page: Page, user: string, password: string) => {
    await page.getByLabel('Username').fill(user);
    await page.getByLabel('Password', { exact: true }).fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
  };

  /** Carol's side: the landing page of her link, a code by e-mail, the download. */
  async function recipientDownload(link: string, name: string, viewport?: { width: number; height: number }) {
    const o = await open(link, viewport);
    const page = o.page;
    await page.getByRole('heading', { name: 'Download a file' }).waitFor();
    await page.getByText(name, { exact: true }).waitFor();
    await page.getByText('For you').waitFor();
    await page.getByText('alice', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Send code' }).click();
    await page.getByText('Code sent.').waitFor();
    const pin = pinIn(await mail.take('carol@example.com'));
    // A wrong code is explained on the page (HEAD check), not shown as a JSON error.
    const wrong = String((Number(pin) + 1) % 1_000_000).padStart(6, '0');
    await page.getByLabel('Code').fill(wrong);
    await page.getByRole('button', { name: 'Download' }).click();
    await page.getByText('Wrong or expired code.').waitFor();
    await page.getByLabel('Code').fill(pin);
    const got = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Download' }).click();
    const download = await got;
    assert.equal(download.suggestedFilename(), name);
    return { o, download };
  }

  test('send two files to a recipient with a message; recipient downloads each with a code', async () => {
    const { page: alice } = await open(`${t.origin}/?lang=en`);
    await signIn(alice, 'alice', 'alice-password');
    await alice.getByRole('heading', { name: 'Send files' }).waitFor();
    await alice.getByLabel('Files').setInputFiles([
      { name: 'hello.txt', mimeType: 'text/plain', buffer: hello },
      { name: 'data.bin', mimeType: 'application/octet-stream', buffer: binary },
    ]);
    await alice.getByLabel('Destination user').fill('bob');
    await alice.getByLabel('E-mail recipients').fill('carol@example.com');
    await alice.getByLabel('Message').fill('For you');
    await alice.getByRole('button', { name: 'Send', exact: true }).click();
    // Both progress bars finish and each file shows its link.
    for (const name of ['hello.txt', 'data.bin']) {
      const bar = alice.getByRole('progressbar', { name: `Upload of ${name}` });
      await alice.waitForFunction(
        (el) => el instanceof HTMLProgressElement && el.value === el.max,
        await bar.elementHandle(),
      );
      await alice.getByLabel(`Link for ${name}`).waitFor();
    }
    assert.equal(await alice.getByRole('button', { name: 'Copy link' }).count(), 2);
    await screenshot(alice, 'flows-send-done');

    // bob (the destination) finds both in My files and downloads without any code.
    const { page: bob } = await open(`${t.origin}/?lang=en`);
    await signIn(bob, 'bob', 'bob-password');
    await bob.getByRole('navigation').getByRole('link', { name: 'My files' }).click();
    const dl = bob.waitForEvent('download');
    await bob.getByRole('link', { name: /^Download hello\.txt/ }).click();
    assert.deepEqual(await bytesOf(await dl), hello);

    // carol got one e-mail per file, each with her own link.
    const mails = [await mail.take('carol@example.com'), await mail.take('carol@example.com')];
    const bySubject = new Map(mails.map((m) => [m.subject ?? '', linkIn(m, '/download/file')]));
    const helloLink = bySubject.get('alice sent you a file: hello.txt');
    const binLink = bySubject.get('alice sent you a file: data.bin');
    assert.ok(helloLink && binLink, `subjects: ${[...bySubject.keys()].join(' | ')}`);
    assert.notEqual(new URL(helloLink).searchParams.get('k'), new URL(binLink).searchParams.get('k'));

    // A fresh browser (no session) opens the link from the e-mail: landing page, code, download.
    const first = await recipientDownload(helloLink, 'hello.txt');
    assert.deepEqual(await bytesOf(first.download), hello);
    await screenshot(first.o.page, 'flows-landing-desktop');
    assert.deepEqual(first.o.cspViolations, []);

    // The other file on a phone: no sideways scrolling, byte-identical download.
    const phone = await recipientDownload(binLink, 'data.bin', PHONE);
    assert.deepEqual(await bytesOf(phone.download), binary);
    assert.equal(await scrollsSideways(phone.o.page), false);
    await screenshot(phone.o.page, 'flows-landing-phone');
    assert.deepEqual(phone.o.cspViolations, []);
  });

  test('forgot password by e-mail address → link and code from the e-mail → new password → sign in', async () => {
    const { page } = await open(`${t.origin}/?lang=en#/forgot`);
    // By the account's e-mail address; the page answers as it would for any name.
    await page.getByLabel('Username or e-mail address').fill('dave@example.com');
    await page.getByRole('button', { name: 'Send me a link' }).click();
    await page
      .getByRole('status')
      .getByText('If an account exists for this name or e-mail address')
      .waitFor();
    const m = await mail.take('dave@example.com');
    // Follow the link in the e-mail, as dave would.
    await page.goto(linkIn(m, '/auth/change'));
    await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();
    await page.getByLabel('Code').fill(pinIn(m));
    await page.getByLabel('New password').fill('brand-new-password');
    await page.getByLabel('Confirm password').fill('brand-new-password');
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByRole('link', { name: 'Go to sign in' }).click();
    await signIn(page, 'dave', 'brand-new-password');
    await page.getByRole('heading', { name: 'Send files' }).waitFor();
    await screenshot(page, 'flows-after-password-change');
  });
});
