// The admin console at {portal}admin in Debian's Chromium against the real server and admin API:
// an admin signs in there, creates an account without a password (first access by e-mail, which
// the new user completes), finds that user's upload in the transfers, reads its timeline with a
// message that failed for good, retries it from the outbox, exports an audit search as CSV and
// reads the dashboard's SVG charts against the statistics; an auditor reads without change
// buttons; a plain user gets a refusal (role="alert"). axe and the CSP on every page.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import type { ParsedMail } from 'mailparser';
import type { Browser } from 'playwright-core';
import {
  assertPageChecks,
  browserSkip,
  launchBrowser,
  type OpenedPage,
  openPage,
  signInWithPassword,
} from './helpers/browser.js';
import { eventually, HttpPeer, MailSink } from './helpers/peers.js';
import { basic, call, closeAll, startTestServer, type TestServer } from './helpers/server.js';

const ZONE = 'America/Sao_Paulo';
const ROOT = { Authorization: basic('root', 'root-password') };

/** RFC 4180: quoted cells with doubled quotes, CRLF line ends. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else cell += c;
  }
  if (cell || row.length) rows.push([...row, cell]);
  return rows;
}

const mailText = (m: ParsedMail) => m.text ?? '';

describe('admin console', { skip: browserSkip() }, () => {
  let t: TestServer;
  let mail: MailSink;
  let sms: HttpPeer;
  let browser: Browser;
  const opened: OpenedPage[] = [];
  let admin: OpenedPage;
  let fileId = 0;

  before(async () => {
    mail = await MailSink.start();
    sms = await HttpPeer.start();
    t = await startTestServer({
      env: {
        REMESSA_SMTP_URL: mail.url,
        REMESSA_SMS_PROVIDER: 'webhook',
        REMESSA_SMS_URL: `${sms.url}/sms`,
        REMESSA_NOTIFY_MAX_ATTEMPTS: '2',
        REMESSA_NOTIFY_RETRY_SECONDS: '10',
      },
      startWorkers: false,
    });
    await t.createUser('root', 'root-password', { lang: 'en', role: 'admin' });
    await t.createUser('mere', 'mere-password', { lang: 'en' });
    await t.createUser('audra', 'audra-password', { lang: 'en', role: 'auditor' });
    browser = await launchBrowser();
    admin = await open();
  });
  after(async () => {
    for (const o of opened) await o.close().catch(() => {});
    await closeAll(browser, t, mail, sms);
  });

  async function open(): Promise<OpenedPage> {
    const o = await openPage(browser, { locale: 'en-US', timezoneId: ZONE });
    opened.push(o);
    return o;
  }

  /** axe on desktop and phone, no sideways scrolling, no CSP violation, screenshots. */
  const check = (o: OpenedPage, name: string) => assertPageChecks(o, `admin-${name}`);

  test('a plain user signed in gets a refusal with role="alert", nothing else', async () => {
    const o = await open();
    await o.page.goto(`${t.origin}/admin?lang=en`);
    await signInWithPassword(o.page, 'mere', 'mere-password');
    const alert = o.page.getByRole('alert');
    await alert.getByText('The administration console is for administrators and auditors').waitFor();
    assert.match(await alert.innerText(), /\(mere\)/);
    assert.equal(await o.page.locator('main table, main form').count(), 0);
    await check(o, 'refused');
  });

  test('an admin signs in at /admin and creates a user without a password', async () => {
    const { page } = admin;
    await page.goto(`${t.origin}/admin?lang=en#/users`);
    // Not signed in: the sign-in form, then back to the page asked for.
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await signInWithPassword(page, 'root', 'root-password');
    await page.getByRole('heading', { name: 'Users' }).waitFor();
    await page.getByRole('cell', { name: 'mere', exact: true }).waitFor();
    await check(admin, 'users');

    await page.getByRole('link', { name: 'New user' }).click();
    await page.getByRole('heading', { name: 'Create user' }).waitFor();
    await check(admin, 'create-user');
    await page.getByLabel('Username').fill('nina');
    await page.getByLabel('E-mail').fill('nina@example.com');
    await page.getByLabel('Mobile').fill('+5511999990000');
    await page.getByLabel('Language').last().selectOption('en');
    await page.getByRole('button', { name: 'Create user' }).click();
    await page.getByRole('heading', { name: 'User nina' }).waitFor();
    await page.getByText('User nina created. The first-access e-mail is on its way.').waitFor();
    await page.getByText('Awaiting first access').waitFor();
    await check(admin, 'user-detail');
    const nina = await t.server.services.users.get('nina');
    assert.equal(nina.first_access, 1);
    assert.equal(nina.password_hash, null);
  });

  test('the new user completes first access from the e-mail, then uploads a file', async () => {
    await t.server.services.notify.deliverDue();
    const m = await mail.take('nina@example.com');
    const pin = /PIN\): (\d{6})/.exec(mailText(m))![1]!;
    const link = /(http\S+\/auth\/change\?\S+)/.exec(mailText(m))![1]!;
    const o = await open();
    await o.page.goto(link);
    await o.page.getByLabel('Code').fill(pin);
    await o.page.getByLabel('New password').fill('nina-password');
    await o.page.getByLabel('Confirm password').fill('nina-password');
    await o.page.getByRole('button', { name: 'Change password' }).click();
    await o.page.getByText('Your password', { exact: false }).first().waitFor();
    assert.equal((await t.server.services.users.get('nina')).first_access, 0);

    // An upload announced by SMS to a provider that refuses it: tried, retried, failed for good.
    sms.status = 500;
    const fd = new FormData();
    fd.append('file', new Blob([new Uint8Array(Buffer.alloc(3000, 7))]), 'quarterly.pdf');
    const up = await call(`${t.base}/upload?c=%2B5511988887777`, {
      method: 'POST',
      headers: { Authorization: basic('nina', 'nina-password') },
      body: fd,
    });
    assert.equal(up.status, 200);
    await t.server.services.notify.deliverDue();
    await t.advanceClock(11_000);
    await t.server.services.notify.deliverDue();
    const [failed] = await t.server.services.notify.list({ status: 'failed' });
    assert.equal(failed?.recipient, '+5511988887777');
    fileId = Number(failed!.fileId);
    assert.ok(fileId > 0);
  });

  test('the admin finds the upload in transfers, reads its timeline and retries the failed message', async () => {
    const { page } = admin;
    await page.getByRole('navigation').getByRole('link', { name: 'Transfers' }).click();
    await page.getByLabel('User').fill('nina');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('link', { name: 'Timeline of quarterly.pdf' }).click();
    await page.getByRole('heading', { name: `Timeline of file ${fileId}` }).waitFor();
    const timeline = page.locator('ol.timeline');
    await timeline.getByText('upload', { exact: true }).first().waitFor();
    const failedEntry = timeline.locator('li.failed');
    await failedEntry.getByText('Failed').waitFor();
    assert.match(await failedEntry.innerText(), /\+5511988887777|2 attempt/);
    // Times in the viewer's zone.
    const time = timeline.locator('time').first();
    const iso = (await time.getAttribute('datetime'))!;
    const inZone = new Intl.DateTimeFormat('en-US', {
      dateStyle: 'short',
      timeStyle: 'medium',
      timeZone: ZONE,
    });
    const norm = (s: string) => s.replace(/\s+/gu, ' ');
    assert.equal(norm(await time.innerText()), norm(inZone.format(new Date(iso))));
    await check(admin, 'timeline');

    await page.getByRole('link', { name: 'See failed messages in the outbox' }).click();
    await page.getByRole('heading', { name: 'Outbox' }).waitFor();
    const [failed] = await t.server.services.notify.list({ status: 'failed' });
    await check(admin, 'outbox');
    sms.status = 201;
    const tried = sms.requests.length;
    await page.getByRole('button', { name: `Retry message ${failed!.id} to +5511988887777` }).click();
    await page.getByText(`Message ${failed!.id} will be sent again.`).waitFor();
    await t.server.services.notify.deliverDue();
    await eventually(async () => sms.requests.length > tried);
    assert.equal(JSON.parse(sms.requests.at(-1)!.body).to, '+5511988887777');
    const sent = await t.server.services.notify.list({ status: 'sent' });
    assert.ok(sent.some((m) => m.id === failed!.id));
  });

  test('an audit search is exported as CSV', async () => {
    const { page } = admin;
    await page.getByRole('navigation').getByRole('link', { name: 'Audit' }).click();
    await page.getByLabel('User').fill('nina');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.locator('table.grid').getByText('upload', { exact: true }).first().waitFor();
    await check(admin, 'audit');
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export CSV' }).click(),
    ]);
    assert.equal(download.suggestedFilename(), 'audit.csv');
    const rows = parseCsv(await readFile((await download.path())!, 'utf8'));
    assert.deepEqual(rows[0], ['id', 'time', 'event', 'user', 'actor', 'remote', 'file_id', 'detail']);
    const api = await call(`${t.base}/admin/audit?user=nina&limit=500`, { headers: ROOT });
    const entries = api.body['entries'] as { id: number; event: string }[];
    assert.deepEqual(
      rows.slice(1).map((r) => Number(r[0])),
      entries.map((e) => e.id),
    );
    for (const r of rows.slice(1)) assert.ok(r[3] === 'nina' || r[4] === 'nina', r.join(','));
    const upload = rows.find((r) => r[2] === 'upload');
    assert.equal(upload?.[6], String(fileId));
    await page.getByText('The CSV file was downloaded.').waitFor();
  });

  test("the dashboard's charts draw the statistics", async () => {
    const { page } = admin;
    await page.getByRole('navigation').getByRole('link', { name: 'Dashboard' }).click();
    await page.getByRole('img', { name: 'Uploads and downloads per day' }).waitFor();
    const stats = (await call(`${t.base}/admin/stats?bucket=day`, { headers: ROOT })).body as {
      series: { uploads: number; downloads: number; uploadBytes: number; notificationFailures: number }[];
      totals: { users: number };
    };
    const marks = (chart: string, series: string) =>
      page
        .getByRole('img', { name: chart })
        .locator(`[data-series="${series}"]`)
        .evaluateAll((els) =>
          els.map((e) => ({
            value: Number(e.getAttribute('data-value')),
            height: Number(e.getAttribute('height') ?? 'NaN'),
            cy: Number(e.getAttribute('cy') ?? 'NaN'),
            top: Number(e.closest('svg')!.getAttribute('data-top')),
          })),
        );
    const uploads = await marks('Uploads and downloads per day', 'Uploads');
    assert.deepEqual(
      uploads.map((b) => b.value),
      stats.series.map((b) => b.uploads),
    );
    assert.ok(
      uploads.some((b) => b.value > 0),
      'the upload is counted',
    );
    const plot = 240 - 12 - 28;
    for (const b of uploads)
      assert.ok(Math.abs(b.height - (b.value / b.top) * plot) < 0.02, JSON.stringify(b));
    const bytes = await marks('Bytes uploaded and downloaded per day', 'Uploaded');
    assert.deepEqual(
      bytes.map((p) => p.value),
      stats.series.map((b) => b.uploadBytes),
    );
    assert.ok(bytes.some((p) => p.value >= 3000));
    const failures = await marks('Failures per day', 'Undelivered messages');
    assert.deepEqual(
      failures.map((b) => b.value),
      stats.series.map((b) => b.notificationFailures),
    );
    assert.ok(
      failures.some((b) => b.value >= 1 && b.height > 0),
      'the failed message is counted',
    );
    const users = await page.locator('[data-total="users"] dd').innerText();
    assert.equal(users, String(stats.totals.users));
    await check(admin, 'dashboard');
  });

  test('an admin removes an account after confirming', async () => {
    await t.createUser('temp', 'temp-password');
    const { page } = admin;
    await page.goto(`${t.origin}/admin?lang=en#/users/temp`);
    await page.getByRole('heading', { name: 'User temp' }).waitFor();
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByText('Account disabled; its sessions have ended.').waitFor();
    assert.equal((await t.server.services.users.get('temp')).enabled, 0);
    await page.getByRole('button', { name: 'Remove' }).click();
    await page.getByRole('button', { name: 'Yes, remove temp' }).click();
    await page.getByText('User temp removed.').waitFor();
    assert.equal(await t.server.services.users.find('temp'), undefined);
  });

  test('an auditor reads every page without change buttons', async () => {
    const o = await open();
    const { page } = o;
    await page.goto(`${t.origin}/admin?lang=en#/users/nina`);
    await signInWithPassword(page, 'audra', 'audra-password');
    await page.getByRole('heading', { name: 'User nina' }).waitFor();
    await page.getByText('You are signed in as an auditor').first().waitFor();
    await page.getByText('nina@example.com').waitFor();
    assert.equal(await page.locator('main button').count(), 0, 'no change buttons');
    await page.getByRole('navigation').getByRole('link', { name: 'Users' }).click();
    await page.getByRole('cell', { name: 'nina', exact: true }).waitFor();
    assert.equal(await page.getByRole('link', { name: 'New user' }).count(), 0);
    await page.getByRole('navigation').getByRole('link', { name: 'Outbox' }).click();
    await page.getByRole('cell', { name: '+5511988887777' }).first().waitFor();
    assert.equal(await page.getByRole('button', { name: /Retry/ }).count(), 0);
    await check(o, 'auditor-outbox');
  });
});
