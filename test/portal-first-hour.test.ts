// The portal items a new user ran into in the first hour, in Debian's Chromium: on a
// phone the Download button no longer breaks mid-word; a send the browser can already tell is
// wrong is refused before anything is sent, in the page's language; a refusal by the server is
// translated, shows an empty bar and keeps the chosen files so a corrected send works; the PIN for
// a landing page switched to Español arrives in Spanish; the own-area list is named for what it is.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import {
  browserSkip,
  launchBrowser,
  type OpenedPage,
  openPage,
  screenshot,
  scrollsSideways,
} from './helpers/browser.js';
import { basic, call, closeAll, startTestServer, type TestServer } from './helpers/server.js';

const PHONE_390 = { width: 390, height: 844 };

describe('portal: first-hour fixes', { skip: browserSkip() }, () => {
  let t: TestServer;
  let browser: Browser;
  const opened: OpenedPage[] = [];

  before(async () => {
    t = await startTestServer();
    await t.createUser('ana', 'ana-password', { lang: 'pt' });
    await t.createUser('bia', 'bia-password', { lang: 'pt' });
    browser = await launchBrowser();
  });
  after(async () => {
    for (const o of opened) await o.close().catch(() => {});
    await closeAll(browser, t);
  });

  const open = async (
    url: string,
    opts: { viewport?: { width: number; height: number }; locale?: string } = {},
  ) => {
    const o = await openPage(browser, { locale: 'pt-BR', ...opts });
    opened.push(o);
    await o.page.goto(url);
    return o;
  };
  const signInPt = async (page: Page, user: string, password: string) => {
    await page.getByLabel('Usuário').fill(user);
    await page.getByLabel('Senha', { exact: true }).fill(password);
    await page.getByRole('button', { name: 'Entrar' }).click();
    await page
      .getByRole('heading', { name: 'Enviar arquivos' })
      .or(page.getByLabel('Arquivos'))
      .first()
      .waitFor();
  };

  /** A recipient link of a file ana sends to someone by e-mail (read from the outbox). */
  async function recipientLink(): Promise<string> {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(Buffer.from('olá'))]), 'relatorio.txt');
    const r = await call(`${t.base}/upload?m=rec%40example.com`, {
      method: 'POST',
      headers: { authorization: basic('ana', 'ana-password') },
      body: form,
    });
    assert.equal(r.status, 200);
    const { notify } = t.server.services;
    const rows = await notify.list({ limit: 100 });
    const message = await notify.show(rows.filter((m) => m.kind === 'file-link').pop()!.id);
    return /https?:\/\/\S+k=[A-Za-z0-9_-]+/.exec(message!.text)![0];
  }

  test('phone 390×844: the Download button keeps its word whole', async () => {
    const link = await recipientLink();
    for (const lang of ['en', 'pt', 'es']) {
      // The landing page speaks the browser's language.
      const { page } = await open(`${link.replace(/lang=\w+/, `lang=${lang}`)}`, {
        viewport: PHONE_390,
        locale: lang,
      });
      const button = page.locator('form button[type=submit]');
      await button.waitFor();
      // One line box for the label: a word broken in two would give two.
      const lines = await button.evaluate((el) => {
        const range = document.createRange();
        range.selectNodeContents(el);
        return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
      });
      assert.equal(lines, 1, `${lang}: ${await button.textContent()}`);
      assert.equal(await scrollsSideways(page), false);
      if (lang === 'en') await screenshot(page, 'landing-phone-390');
    }
  });

  test('a send the browser can tell is wrong: refused in Portuguese, nothing sent, files kept', async () => {
    const { page } = await open(`${t.origin}/?lang=pt`, { viewport: PHONE_390 });
    await signInPt(page, 'ana', 'ana-password');
    await page.getByRole('link', { name: 'Enviar' }).first().click();
    await page
      .getByLabel('Arquivos')
      .setInputFiles([{ name: 'a.txt', mimeType: 'text/plain', buffer: Buffer.from('a') }]);
    const ana = (await t.server.services.users.find('ana'))!;
    const before = (await t.server.services.files.list(ana, 'area', 1)).length;
    await page.getByLabel('Destinatários por e-mail').fill('not-an-address');
    await page.getByRole('button', { name: 'Enviar', exact: true }).click();
    await page.getByText('Confira os endereços de e-mail: "not-an-address" não é válido.').waitFor();
    assert.equal(await page.locator('li.upload').count(), 0, 'no upload started');
    await page.getByText('1 arquivo', { exact: false }).first().waitFor();
    assert.equal((await t.server.services.files.list(ana, 'area', 1)).length, before);
    const text = await page.locator('main').innerText();
    assert.ok(!/invalid e-mail|refused the request|m: /i.test(text), text);
  });

  test('a refusal by the server: translated, an empty bar, the files kept for a corrected send', async () => {
    const { page } = await open(`${t.origin}/?lang=pt`);
    await signInPt(page, 'ana', 'ana-password');
    await page.getByRole('link', { name: 'Enviar' }).first().click();
    await page
      .getByLabel('Arquivos')
      .setInputFiles([{ name: 'b.txt', mimeType: 'text/plain', buffer: Buffer.from('bbb') }]);
    await page.getByLabel('Usuário de destino').fill('ninguem');
    await page.getByRole('button', { name: 'Enviar', exact: true }).click();
    const row = page.locator('li.upload').first();
    await row
      .getByText('Esse usuário de destino não existe ou não pode receber arquivos.', { exact: false })
      .waitFor();
    assert.ok(!/no such user|d:/.test(await row.innerText()), await row.innerText());
    assert.equal(await row.locator('progress').evaluate((p) => (p as HTMLProgressElement).value), 0);
    // Correct the field and send again, without choosing the file again.
    await page.getByLabel('Usuário de destino').fill('bia');
    await page.getByRole('button', { name: 'Enviar', exact: true }).click();
    await page.locator('li.upload').nth(1).getByText('Enviado').waitFor();
    const bia = (await t.server.services.users.find('bia'))!;
    const files = await t.server.services.files.list(bia, 'area', 1);
    assert.deepEqual(
      files.map((f) => f.file.name),
      ['b.txt'],
    );
    await screenshot(page, 'send-refused-then-sent');
  });

  test('the landing page switched to Español asks for a PIN message in Spanish', async () => {
    const link = await recipientLink();
    const { page } = await open(link.replace(/lang=\w+/, 'lang=pt'));
    await page.getByRole('heading', { name: 'Baixar um arquivo' }).waitFor();
    await page.getByLabel('Idioma').selectOption('es');
    await page.getByRole('heading', { name: 'Descargar un archivo' }).waitFor();
    await page.getByRole('button', { name: 'Enviar código' }).click();
    await page.getByText('Código enviado.', { exact: false }).waitFor();
    const { notify } = t.server.services;
    const pin = (await notify.list({ limit: 100 })).filter((m) => m.kind === 'download-pin').pop()!;
    const shown = await notify.show(pin.id);
    assert.equal(shown!.lang, 'es');
  });

  test('the own-area list is named for what it shows', async () => {
    const { page } = await open(`${t.origin}/?lang=pt`);
    await signInPt(page, 'bia', 'bia-password');
    await page.getByRole('navigation').getByRole('link', { name: 'Meus arquivos' }).click();
    await page.getByRole('heading', { name: 'Arquivos na sua área' }).waitFor();
    await page.getByRole('cell', { name: 'b.txt', exact: true }).waitFor();
  });
});
