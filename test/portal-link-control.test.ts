// Taking back what was sent, in Debian's Chromium against the real server: on My files the sender
// revokes one recipient's link (it answers as expired from Node, the other still serves), sets a
// download limit of one on the other (one complete download, then expired), changes the file's
// expiry and deletes the file (the owner's link then answers as expired). In the admin console an
// admin deletes a file from the transfers list and from a timeline; an auditor sees no Delete.
// axe, the CSP and no sideways scrolling on a phone.
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
import { downloadStatus, recipientToken, sendTo } from './helpers/links.js';
import { eventually } from './helpers/peers.js';
import { call, closeAll, startTestServer, type TestServer } from './helpers/server.js';

const EXPIRED = 'invalid or expired download link';
const ANA = 'ana@example.com';
const BOB = 'bob@example.com';

describe('portal: control over sent links and files', { skip: browserSkip() }, () => {
  let t: TestServer;
  let browser: Browser;
  const opened: OpenedPage[] = [];

  before(async () => {
    t = await startTestServer({ env: { REMESSA_RECIPIENT_PIN: 'false' }, startWorkers: false });
    await t.createUser('alice', 'alice-password-1', { lang: 'en' });
    await t.createUser('root', 'root-password-1', { lang: 'en', role: 'admin' });
    await t.createUser('audra', 'audra-password-1', { lang: 'en', role: 'auditor' });
    browser = await launchBrowser();
  });
  after(async () => {
    for (const o of opened) await o.close().catch(() => {});
    await closeAll(browser, t);
  });

  async function open(url: string, user: string, password: string): Promise<OpenedPage> {
    const o = await openPage(browser, { locale: 'en-US' });
    opened.push(o);
    await o.page.goto(url);
    await signInWithPassword(o.page, user, password);
    return o;
  }

  /** axe on desktop and phone, no sideways scrolling, no CSP violation, screenshots. */
  const check = (o: OpenedPage, name: string) => assertPageChecks(o, `link-control-${name}`);

  const refusedAsExpired = async (token: string) => {
    const r = await call(`${t.base}/download/file?k=${encodeURIComponent(token)}`);
    assert.deepEqual([r.status, r.body['detail']], [401, EXPIRED]);
  };

  /** The line of one recipient under report.pdf. */
  const line = (page: Page, address: string) =>
    page
      .getByRole('list', { name: 'Who was told about report.pdf' })
      .getByRole('listitem')
      .filter({ hasText: address });

  /** The complete downloads the database has counted on `email`'s link of file `id`. */
  const counted = async (id: number, email: string) =>
    Number(
      (
        await t.server.services.db
          .selectFrom('links')
          .select('downloads')
          .where('file_id', '=', id)
          .where('recipient_email', '=', email)
          .executeTakeFirstOrThrow()
      ).downloads,
    );

  test('the sender revokes a link, limits another, changes the expiry and deletes the file', async () => {
    const sent = await sendTo(t, [ANA, BOB]);
    const ana = await recipientToken(t, sent.id, ANA);
    const bob = await recipientToken(t, sent.id, BOB);
    const o = await open(`${t.origin}/?lang=en`, 'alice', 'alice-password-1');
    const { page } = o;
    await page.getByRole('navigation').getByRole('link', { name: 'My files' }).click();
    const anaLine = line(page, 'a***@example.com (e-mail)');
    const bobLine = line(page, 'b***@example.com (e-mail)');
    await anaLine.waitFor();

    await anaLine.getByRole('button', { name: 'Revoke link of a***@example.com' }).click();
    await page.getByText('Revoke the link of a***@example.com? It stops working at once').waitFor();
    await check(o, 'revoke-confirm');
    await page.getByRole('button', { name: 'Revoke now' }).click();
    await page.getByText('The link of a***@example.com was revoked.').waitFor();
    await anaLine.getByText('Link revoked').waitFor();
    assert.equal(await anaLine.getByRole('button').count(), 0, 'nothing more to do with a revoked link');
    await refusedAsExpired(ana);
    // The other link serves; a part of the file is not a complete download, so it does not count.
    assert.equal(await downloadStatus(t, bob, { Range: 'bytes=0-99' }), 206);

    await bobLine.getByRole('button', { name: 'Link limits of b***@example.com' }).click();
    const form = page.getByRole('form', { name: 'Link limits of b***@example.com' });
    await form.getByLabel('Download limit').fill('lots');
    await form.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Type a whole number from 1 to 1000000, or leave it empty.').waitFor();
    assert.equal(await form.getByLabel('Download limit').getAttribute('aria-invalid'), 'true');
    await form.getByLabel('Download limit').fill('1');
    await check(o, 'limits-form');
    await form.getByRole('button', { name: 'Save' }).click();
    await page.getByText('The link of b***@example.com was changed.').waitFor();
    await bobLine.getByText('0 of 1 downloads').waitFor();
    assert.equal(await downloadStatus(t, bob), 200);
    // The download is counted as its response ends.
    await eventually(async () => (await counted(sent.id, BOB)) === 1);
    await refusedAsExpired(bob);
    await page.reload();
    await bobLine.getByText('Download limit reached (1 of 1)').waitFor();

    await page.getByRole('button', { name: 'Change expiry of report.pdf' }).click();
    const day = new Date(Date.now() + 3 * 86_400_000);
    const value = `${day.getFullYear()}-${String(day.getMonth() + 1).padStart(2, '0')}-${String(day.getDate()).padStart(2, '0')}`;
    await page.getByLabel('Available until (the end of that day)').fill(value);
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText(/^report\.pdf is now available until /).waitFor();
    const file = await t.server.services.db
      .selectFrom('files')
      .select('expires_at')
      .where('id', '=', sent.id)
      .executeTakeFirstOrThrow();
    const expires = Number(file.expires_at);
    assert.ok(expires > Date.now() + 2 * 86_400_000 && expires < Date.now() + 5 * 86_400_000, `${expires}`);
    await check(o, 'list');
    // In Portuguese, the same controls and states in its words.
    await page.goto(`${t.origin}/?lang=pt#/received`);
    await page.getByRole('button', { name: 'Excluir report.pdf' }).waitFor();
    await page.getByText('Limite de downloads atingido (1 de 1)').waitFor();
    await page.getByText('Link revogado').waitFor();
    await page.goto(`${t.origin}/?lang=en#/received`);

    await page.getByRole('button', { name: 'Delete report.pdf' }).click();
    await page.getByRole('button', { name: 'Delete now' }).click();
    await page.getByText('report.pdf was deleted.').waitFor();
    await page.getByText('No files here.').waitFor();
    await refusedAsExpired(sent.k);
    assert.deepEqual(o.consoleErrors, []);
  });

  test('an admin deletes files in the console; an auditor sees no Delete', async () => {
    const listed = await sendTo(t, [ANA], 'listed.pdf');
    const story = await sendTo(t, [BOB], 'story.pdf');
    const bobStory = await recipientToken(t, story.id, BOB);
    const auditor = await open(`${t.origin}/admin?lang=en#/transfers`, 'audra', 'audra-password-1');
    await auditor.page.getByRole('link', { name: 'Timeline of listed.pdf' }).waitFor();
    assert.equal(await auditor.page.getByRole('button', { name: /^Delete / }).count(), 0);
    await auditor.page.goto(`${t.origin}/admin?lang=en#/transfers/${story.id}`);
    await auditor.page.getByRole('heading', { name: 'Timeline of story.pdf' }).waitFor();
    assert.equal(await auditor.page.getByRole('button', { name: /^Delete / }).count(), 0);

    const o = await open(`${t.origin}/admin?lang=en#/transfers`, 'root', 'root-password-1');
    const { page } = o;
    await page.getByRole('button', { name: 'Delete listed.pdf' }).click();
    await page.getByText('Delete listed.pdf of alice now?').waitFor();
    await check(o, 'console-confirm');
    await page.getByRole('button', { name: 'Delete now' }).click();
    await page.getByText('listed.pdf was deleted.').waitFor();
    await refusedAsExpired(listed.k);
    assert.equal(await page.getByRole('link', { name: 'Timeline of listed.pdf' }).count(), 0);

    await page.getByRole('link', { name: 'Timeline of story.pdf' }).click();
    await page.getByRole('button', { name: 'Delete story.pdf' }).click();
    await page.getByRole('button', { name: 'Delete now' }).click();
    await page.getByText('story.pdf was deleted.').waitFor();
    await page.getByRole('heading', { name: 'Transfers', level: 1 }).waitFor();
    await refusedAsExpired(story.k);
    await refusedAsExpired(bobStory);
    assert.deepEqual(o.consoleErrors, []);
  });
});
