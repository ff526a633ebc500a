// The portal's send page (tus-js-client) in Debian's Chromium with the network failing under it:
// the cut proxy sits between the browser and the server, so the page itself, the
// sign-in and every tus request go through it. One upload is cut mid-body and must carry on by
// itself; another is interrupted by a reload and must continue from the server's offset once the
// same file is chosen again. Screenshots go to test-results/portal/resume-*.png.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { browserSkip, launchBrowser, type OpenedPage, openPage, screenshot } from './helpers/browser.js';
import { CutProxy } from './helpers/cut-proxy.js';
import { eventually, MailSink } from './helpers/peers.js';
import { basic, closeAll, startTestServer, type TestServer } from './helpers/server.js';
import { writeBigFile } from './helpers/tus.js';

const MiB = 1024 * 1024;

async function sha256Of(stream: AsyncIterable<Uint8Array>): Promise<string> {
  const h = createHash('sha256');
  for await (const c of stream) h.update(c);
  return h.digest('hex');
}

describe('portal send page over tus with the connection cut (Chromium)', { skip: browserSkip() }, () => {
  let t: TestServer;
  let mail: MailSink;
  let browser: Browser;
  let dir: string;
  const opened: OpenedPage[] = [];
  const proxies: CutProxy[] = [];
  const alice = basic('alice', 'alice-password');

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'remessa-portal-resume-'));
    mail = await MailSink.start();
    t = await startTestServer({ env: { REMESSA_SMTP_URL: mail.url } });
    await t.createUser('alice', 'alice-password', { lang: 'en' });
    browser = await launchBrowser();
  });
  after(async () => {
    for (const o of opened) await o.close().catch(() => {});
    for (const p of proxies) await p.close().catch(() => {});
    await closeAll(browser, t, mail);
    await rm(dir, { recursive: true, force: true });
  });

  const proxy = async (everyBytes: number, onCut?: (p: CutProxy) => void) => {
    const p = await CutProxy.start({
      target: { host: '127.0.0.1', port: Number(new URL(t.origin).port) },
      everyBytes,
      ...(onCut ? { onCut, cutReceiver: 'end' as const } : {}),
    });
    proxies.push(p);
    return p;
  };
  const signIn = async (page: Page) => {
    await page.getByLabel('Username').fill('alice');
    await page.getByLabel('Password', { exact: true }).fill('alice-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Send files' }).waitFor();
  };
  /** The link the page shows once the upload is committed, and what it serves (SHA-256). */
  const linkOf = async (page: Page, name: string) => {
    await page
      .getByLabel(`Link for ${name}`)
      .waitFor({ timeout: 60_000 })
      .catch(async (err) => {
        throw new Error(`${err}\n--- page:\n${await page.locator('main').innerText()}`);
      });
    const link = await page.getByLabel(`Link for ${name}`).inputValue();
    const res = await fetch(link);
    assert.equal(res.status, 200);
    return { link, sha256: await sha256Of(res.body as unknown as AsyncIterable<Uint8Array>) };
  };
  const fileRow = (name: string) =>
    t.server.services.db.selectFrom('files').select(['id', 'length']).where('name', '=', name).execute();

  test('a cut mid-upload: the page carries on by itself; byte-identical, recipient told once', async () => {
    const file = path.join(dir, 'cut.bin');
    const digest = await writeBigFile(file, 8);
    const p = await proxy(3 * MiB);
    const o = await openPage(browser);
    opened.push(o);
    const page = o.page;
    await page.goto(`${p.origin}/?lang=en`);
    await signIn(page);
    await page.getByLabel('Files').setInputFiles(file);
    await page.getByLabel('E-mail recipients').fill('carol@example.com');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    const got = await linkOf(page, 'cut.bin');
    await screenshot(page, 'resume-after-cut');
    // No connection carried more than 3 MiB, so the 8 MiB can only have arrived by resuming.
    // (More than 8 MiB went up in all: what sat in socket buffers at a cut is lost and sent again.)
    assert.ok(p.cuts >= 2, `only ${p.cuts} cuts`);
    assert.equal(got.sha256, digest);

    const rows = await fileRow('cut.bin');
    assert.equal(rows.length, 1, 'one file, however many requests');
    assert.equal(Number(rows[0]!.length), 8 * MiB);
    const outbox = await t.server.services.db
      .selectFrom('outbox')
      .select(['recipient', 'kind'])
      .where('file_id', '=', Number(rows[0]!.id))
      .execute();
    assert.deepEqual(outbox, [{ recipient: 'carol@example.com', kind: 'file-link' }]);
    const m = await mail.take('carol@example.com');
    assert.equal(m.subject, 'alice sent you a file: cut.bin');
    const chunks = await t.server.services.db.selectFrom('upload_chunks').select('upload_id').execute();
    assert.deepEqual(chunks, [], 'no staged chunk left behind');
    assert.deepEqual(o.cspViolations, []);
  });

  test('a reload mid-upload: the page offers to resume, and the same file continues from the server offset', async () => {
    const file = path.join(dir, 'reload.bin');
    const size = 6 * MiB;
    const digest = await writeBigFile(file, 6);
    // The server gets every byte forwarded before the cut (cutReceiver 'end'), so it holds a part
    // of the file to resume from, however full the socket buffers were.
    // At the one cut the whole network goes away (every open connection too, so the page's
    // retries cannot slip through a kept-alive one): the upload is stuck part-way until the reload.
    const p = await proxy(3 * MiB, (px) => {
      px.everyBytes = 0;
      px.down = true;
      setTimeout(() => px.cutAll(), 0);
    });
    const o = await openPage(browser);
    opened.push(o);
    const page = o.page;
    await page.goto(`${p.origin}/?lang=en`);
    await signIn(page);
    await page.getByLabel('Files').setInputFiles(file);
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await eventually(async () => p.cuts >= 1);

    // tus-js-client's record of the upload (localStorage) survives the reload; the server holds
    // part of the file at that address.
    const records = await page.evaluate(() =>
      Object.keys(localStorage)
        .filter((k) => k.startsWith('tus::'))
        .map((k) => JSON.parse(localStorage.getItem(k) ?? '{}') as { uploadUrl?: string }),
    );
    assert.equal(records.length, 1, JSON.stringify(records));
    const uploadPath = new URL(records[0]!.uploadUrl ?? '', p.origin).pathname;
    const head = await eventually(async () => {
      const r = await fetch(`${t.origin}${uploadPath}`, {
        method: 'HEAD',
        headers: { 'Tus-Resumable': '1.0.0', Authorization: alice },
      });
      // The durable offset: 0 (or 423) until the server has stored what the cut request brought.
      return r.status === 200 && Number(r.headers.get('upload-offset')) > 0 && r;
    }, 30_000);
    const offset = Number(head.headers.get('upload-offset'));
    assert.ok(offset > 0 && offset < size, `server offset ${offset}`);

    p.down = false;
    await page.reload();
    await page.getByRole('heading', { name: 'Send files' }).waitFor();
    await page
      .getByText('Interrupted upload: reload.bin. Choose the same file again to continue where it stopped.')
      .waitFor();
    await screenshot(page, 'resume-offer');
    const before = p.bytes;
    await page.getByLabel('Files').setInputFiles(file);
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    const got = await linkOf(page, 'reload.bin');
    assert.equal(got.sha256, digest);
    // Only the rest went up after the reload (plus requests' headers), not the file from zero.
    const sentAfter = p.bytes - before;
    assert.ok(
      sentAfter < size - offset + 256 * 1024,
      `sent ${sentAfter} after the reload; offset was ${offset}`,
    );
    assert.ok(p.bytes < 2 * size, `${p.bytes} bytes went up in all`);
    const rows = await fileRow('reload.bin');
    assert.equal(rows.length, 1);
    assert.equal(Number(rows[0]!.length), size);
    assert.equal((await stat(file)).size, size);
    // Done: the record is gone, so no resume is offered any more.
    await page.reload();
    await page.getByRole('heading', { name: 'Send files' }).waitFor();
    assert.equal(await page.getByText('Interrupted upload').count(), 0);
    assert.deepEqual(o.cspViolations, []);
  });
});
