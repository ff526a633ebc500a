// The page of an upload request's link in Debian's Chromium, on a 360 px phone: an outsider with
// only an e-mail opens the invitation's link through a proxy that cuts the connection once in the
// middle of an upload, asks for a code, types the PIN from the second e-mail and sends three files;
// the requester finds them in their area with their origin and gets one message naming them. A
// closed request's page says so (in Spanish), an unknown link too, and a file over the request's
// limit is refused in the page before any byte is sent. Every state: axe, CSP, no sideways scroll.
// Screenshots go to test-results/portal/request-*.png.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
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
import { CutProxy } from './helpers/cut-proxy.js';
import { blobFiles, listArea, rowCount } from './helpers/files.js';
import { MailSink } from './helpers/peers.js';
import { makeRequest } from './helpers/requests.js';
import { basic, call, closeAll, startTestServer, type TestServer } from './helpers/server.js';
import { writeBigFile } from './helpers/tus.js';

const MiB = 1024 * 1024;
const ANA = basic('ana', 'ana-password-1');

describe('the page of an upload request (Chromium, phone)', { skip: browserSkip() }, () => {
  let t: TestServer;
  let mail: MailSink;
  let browser: Browser;
  let dir: string;
  const opened: OpenedPage[] = [];
  const proxies: CutProxy[] = [];

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'remessa-request-page-'));
    mail = await MailSink.start();
    t = await startTestServer({
      env: { REMESSA_SMTP_URL: mail.url, REMESSA_INLINE_MAX_SIZE: '0' },
      startWorkers: false,
    });
    await t.createUser('ana', 'ana-password-1', { email: 'ana@example.com', lang: 'en' });
    browser = await launchBrowser();
  });
  after(async () => {
    for (const o of opened) await o.close().catch(() => {});
    for (const p of proxies) await p.close().catch(() => {});
    await closeAll(browser, t, mail);
    await rm(dir, { recursive: true, force: true });
  });

  const batches = () => t.server.workers.get('request-batches')!.runOnce();
  const deliver = async () => {
    for (const channel of ['email', 'sms']) await t.server.workers.get(`outbox-${channel}`)?.runOnce();
  };
  const phone = async (url: string, locale = 'en-US') => {
    const o = await openPage(browser, { viewport: PHONE, locale });
    opened.push(o);
    await o.page.goto(url);
    return o;
  };
  /** Every state of the page: no serious axe finding, no CSP violation, no sideways scroll. */
  const checkState = async (o: OpenedPage, name: string) => {
    await screenshot(o.page, `request-${name}`);
    assert.deepEqual(await seriousAxeViolations(o.page), [], name);
    assert.equal(await scrollsSideways(o.page), false, `${name} scrolls sideways`);
    assert.deepEqual(o.cspViolations, [], name);
    // The browser logs every answer that is not a success (a 410, a tus 409 while resuming): those
    // are the page's business; anything else is a fault.
    const faults = o.consoleErrors.filter((e) => !e.startsWith('Failed to load resource'));
    assert.deepEqual(faults, [], name);
  };

  test('an invited outsider on a phone: code, three files through a cut, received; one message', async () => {
    const made = await makeRequest(t, ANA, {
      title: 'Tax papers 2024',
      message: 'Please send <b>everything</b> you have.',
      emails: ['bob@example.com'],
      maxFiles: 5,
    });
    await deliver();
    const invite = await mail.take('bob@example.com');
    const link = /(http\S+\/request\?t=[\w-]+)/.exec(invite.text ?? '')?.[1];
    assert.equal(link, made.links[0]!.url);

    const big = path.join(dir, 'scan.bin');
    const digest = await writeBigFile(big, 5);
    const small = [path.join(dir, 'invoice-01.pdf'), path.join(dir, 'invoice-02.pdf')];
    await writeFile(small[0]!, 'first invoice');
    await writeFile(small[1]!, 'second invoice, a bit longer');
    // The network drops once, 2 MiB into what the page sends (all in the big file's body).
    const proxy = await CutProxy.start({
      target: { host: '127.0.0.1', port: Number(new URL(t.origin).port) },
      everyBytes: 2 * MiB,
      onCut: (p) => {
        p.everyBytes = 0;
      },
    });
    proxies.push(proxy);
    const o = await phone(link!.replace(t.origin, proxy.origin));
    const page = o.page;
    await page.getByRole('heading', { name: 'Tax papers 2024' }).waitFor();
    await page.getByText('Please send <b>everything</b> you have.').waitFor();
    assert.equal(await page.locator('dd', { hasText: 'ana' }).count(), 1);
    assert.equal(await page.locator('dd', { hasText: '5 of 5 left' }).count(), 1);
    await checkState(o, 'invited');

    await page.getByRole('button', { name: 'Send code' }).click();
    await page.getByText('Code sent. It may take a minute to arrive.').waitFor();
    await deliver();
    const pinMail = await mail.take('bob@example.com');
    const pin = /\b(\d{6})\b/.exec(pinMail.text ?? '')![1]!;
    await checkState(o, 'code-sent');

    // A wrong code: said in words, nothing stored, the files stay chosen for the next Send.
    const uploads = await rowCount(t, 'uploads');
    await page.getByLabel('Code', { exact: true }).fill(pin === '000000' ? '111111' : '000000');
    await page.getByLabel('Choose files').setInputFiles([small[0]!, big, small[1]!]);
    await page.getByText('3 file(s) chosen: invoice-01.pdf, scan.bin, invoice-02.pdf').waitFor();
    await page.getByRole('button', { name: 'Send files' }).click();
    await page
      .getByRole('alert')
      .filter({
        hasText:
          'Wrong code. Check it, or ask for a new one. 3 file(s) were not sent. Correct what is said above and send them again.',
      })
      .waitFor();
    assert.equal(await rowCount(t, 'uploads'), uploads);
    await checkState(o, 'wrong-code');

    await page.getByLabel('Code', { exact: true }).fill(pin);
    await page.getByRole('button', { name: 'Send files' }).click();
    await page
      .getByRole('heading', { name: 'Received', exact: true })
      .waitFor({ timeout: 60_000 })
      .catch(async (err) => {
        throw new Error(`${err}\n--- page:\n${await page.locator('main').innerText()}`);
      });
    await page.getByText('Received: 3 file(s). ana will be told. You can close this page.').waitFor();
    assert.equal(await page.locator('.uploads li', { hasText: 'Received' }).count(), 3);
    assert.equal(proxy.cuts, 1, 'the connection was cut once, mid-upload');
    await checkState(o, 'received');

    // In the requester's area, with their origin; the big one byte-identical.
    const files = (await listArea(t, 'ana', 'ana-password-1')).filter(
      (f) => (f as { origin?: { request: string } }).origin?.request === made.id,
    );
    assert.deepEqual(files.map((f) => f.name).sort(), ['invoice-01.pdf', 'invoice-02.pdf', 'scan.bin']);
    for (const f of files)
      assert.deepEqual((f as { origin?: unknown }).origin, { request: made.id, from: 'bob@example.com' });
    const scan = files.find((f) => f.name === 'scan.bin')!;
    assert.equal(scan.length, 5 * MiB);
    const res = await fetch(scan.linkURL);
    assert.equal(res.status, 200);
    assert.equal(
      createHash('sha256')
        .update(Buffer.from(await res.arrayBuffer()))
        .digest('hex'),
      digest,
    );

    // One message for the visit, once it is quiet (the clock moves; nobody sleeps).
    await batches();
    await t.advanceClock(21_000);
    await batches();
    await deliver();
    const m = await mail.take('ana@example.com');
    assert.match(m.subject ?? '', /3 file\(s\) arrived for Tax papers 2024/);
    for (const name of ['invoice-01.pdf', 'scan.bin', 'invoice-02.pdf'])
      assert.ok((m.text ?? '').includes(name), name);
    await t.advanceClock(21_000);
    await batches();
    await deliver();
    const more = mail.messages.filter((x) => JSON.stringify(x.to).includes('ana@example.com'));
    assert.equal(more.length, 0, 'exactly one message');
  });

  test("the page is served with the portal's strict headers, without sign-in", async () => {
    const res = await fetch(`${t.origin}/request?t=anything&lang=es`, { headers: { Accept: 'text/html' } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    const csp = res.headers.get('content-security-policy') ?? '';
    assert.match(csp, /script-src 'self'/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    assert.equal(res.headers.get('cache-control'), 'no-cache');
    assert.equal(res.headers.get('x-frame-options'), 'DENY');
    const body = await res.text();
    assert.match(body, /<body data-page="request">/);
    assert.match(body, /<html lang="es"/);
    assert.doesNotMatch(body, /<script>|<style|style=/, 'no inline script or style');
  });

  test('a closed request says so, in Spanish; an unknown link too', async () => {
    const made = await makeRequest(t, ANA, { title: 'Cerrada' });
    const closed = await call(`${t.base}/requests/${made.id}/close`, {
      method: 'POST',
      headers: { Authorization: ANA },
    });
    assert.equal(closed.status, 200);
    const o = await phone(`${t.origin}/request?t=${made.token}`, 'es-ES');
    await o.page.getByRole('heading', { name: 'Solicitud cerrada' }).waitFor();
    await o.page
      .getByText(
        'Esta solicitud está cerrada o ha caducado: ya no recibe archivos. Si aún necesita enviar algo, pida un enlace nuevo a quien le envió este.',
      )
      .waitFor();
    assert.equal(await o.page.getByRole('button', { name: 'Enviar archivos' }).count(), 0);
    await checkState(o, 'closed-es');

    const unknown = await phone(`${t.origin}/request?t=no-such-token&lang=en`);
    await unknown.page.getByRole('heading', { name: 'Link not valid' }).waitFor();
    await unknown.page
      .getByText(
        'This link is not valid. Check that the whole address was copied, or ask the person who sent it for a new one.',
      )
      .waitFor();
    await checkState(unknown, 'unknown');
  });

  test('a file over the limit is refused in the page before any byte is sent', async () => {
    const made = await makeRequest(t, ANA, { title: 'Small things', maxFileBytes: 1024, maxFiles: 2 });
    const file = path.join(dir, 'too-big.bin');
    await writeFile(file, Buffer.alloc(2048, 1));
    const uploads = await rowCount(t, 'uploads');
    const blobs = (await blobFiles(t)).length;
    const o = await phone(`${t.origin}/request?t=${made.token}`);
    const sent: string[] = [];
    o.page.on('request', (r) => {
      if (r.url().includes('/uploads')) sent.push(`${r.method()} ${r.url()}`);
    });
    await o.page.getByRole('heading', { name: 'Small things' }).waitFor();
    assert.equal(await o.page.getByLabel('Code', { exact: true }).count(), 0, 'an open link needs no code');
    await o.page.getByLabel('Choose files').setInputFiles(file);
    await o.page.getByRole('button', { name: 'Send files' }).click();
    await o.page
      .getByRole('alert')
      .filter({ hasText: 'too-big.bin is 2 KiB: this request takes files of at most 1 KiB.' })
      .waitFor();
    await checkState(o, 'over-limit');
    assert.deepEqual(sent, []);
    assert.equal(await rowCount(t, 'uploads'), uploads);
    assert.equal((await blobFiles(t)).length, blobs);
  });
});
