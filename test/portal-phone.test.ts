// What a new sender and recipient met in the portal, on a 360 px phone in Debian's Chromium, in
// Portuguese and in English: My files laid out as cards (names never split inside a word, no header
// split), Forgot password answering the same for any name or address, the recipient's page in the
// browser's language with a switch (and the PIN message following it), delivery lines in the
// page's language (a message only logged is not a failure), and a Send that clears its recipients
// and says who was told. No SMTP: e-mail is logged; the SMS webhook fails.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import {
  browserSkip,
  DESKTOP,
  launchBrowser,
  type OpenedPage,
  openPage,
  PHONE,
  screenshot,
  scrollsSideways,
  seriousAxeViolations,
} from './helpers/browser.js';
import { HttpPeer } from './helpers/peers.js';
import { basic, call, closeAll, startTestServer, type TestServer } from './helpers/server.js';

const LONG_NAME = 'relatorio-trimestral-consolidado_da-empresa.2024-versao-final.pdf';

const WORDS = {
  pt: {
    locale: 'pt-BR',
    user: 'ana',
    other: 'en',
    username: 'Usuário',
    password: 'Senha',
    signIn: 'Entrar',
    myFiles: 'Meus arquivos',
    size: 'Tamanho',
    forgotField: 'Usuário ou e-mail',
    sendLink: 'Enviar link',
    forgotSent:
      'Se existir uma conta com este nome ou e-mail, enviamos a ela um e-mail com um código e um link para escolher uma nova senha. Pode levar alguns minutos; confira também a pasta de spam.',
    landing: 'Baixar um arquivo',
    sendCode: 'Enviar código',
    logged: 'Registrado, não enviado: nenhum servidor de e-mail configurado',
    smsFailed: 'Não enviado: o serviço de SMS não aceitou a mensagem',
    whoWasTold: (name: string) => `Quem foi avisado de ${name}`,
    chooseFiles: 'Escolher arquivos',
    noFile: 'Nenhum arquivo escolhido ainda.',
    emails: 'Destinatários por e-mail',
    message: 'Mensagem',
    send: 'Enviar',
    sent: 'Enviado',
    notified: 'Destinatários avisados: r***@example.com (e-mail)',
  },
  en: {
    locale: 'en-US',
    user: 'alice',
    other: 'pt',
    username: 'Username',
    password: 'Password',
    signIn: 'Sign in',
    myFiles: 'My files',
    size: 'Size',
    forgotField: 'Username or e-mail address',
    sendLink: 'Send me a link',
    forgotSent:
      'If an account exists for this name or e-mail address, we sent it an e-mail with a code and a link to choose a new password. It may take a few minutes; check the spam folder too.',
    landing: 'Download a file',
    sendCode: 'Send code',
    logged: 'Registered, not sent: no e-mail server is configured',
    smsFailed: 'Not sent: the SMS service did not accept the message',
    whoWasTold: (name: string) => `Who was told about ${name}`,
    chooseFiles: 'Choose files',
    noFile: 'No file chosen yet.',
    emails: 'E-mail recipients',
    message: 'Message',
    send: 'Send',
    sent: 'Sent',
    notified: 'Recipients notified: r***@example.com (e-mail)',
  },
} as const;
type Lang = keyof typeof WORDS;
const LANGS: Lang[] = ['pt', 'en'];

describe('portal on a phone, in Portuguese and English', { skip: browserSkip() }, () => {
  let t: TestServer;
  let sms: HttpPeer;
  let browser: Browser;
  const opened: OpenedPage[] = [];

  before(async () => {
    sms = await HttpPeer.start();
    sms.status = 500;
    t = await startTestServer({
      env: {
        REMESSA_SMS_PROVIDER: 'webhook',
        REMESSA_SMS_URL: `${sms.url}/sms`,
        REMESSA_NOTIFY_MAX_ATTEMPTS: '1',
      },
      startWorkers: false,
    });
    await t.createUser('ana', 'ana-password', { lang: 'pt', email: 'ana@example.com' });
    await t.createUser('alice', 'alice-password', { lang: 'en', email: 'alice@example.com' });
    browser = await launchBrowser();
  });
  after(async () => {
    for (const o of opened) await o.close().catch(() => {});
    await closeAll(browser, t, sms);
  });

  const open = async (url: string, lang: Lang) => {
    const o = await openPage(browser, { viewport: PHONE, locale: WORDS[lang].locale });
    opened.push(o);
    await o.page.goto(url);
    return o;
  };
  const signIn = async (page: Page, lang: Lang) => {
    const w = WORDS[lang];
    await page.getByLabel(w.username).fill(w.user);
    await page.getByLabel(w.password, { exact: true }).fill(`${w.user}-password`);
    await page.getByRole('button', { name: w.signIn }).click();
    await page.getByRole('navigation').waitFor();
  };
  const upload = async (lang: Lang, name: string, query = '') => {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(Buffer.alloc(3 * 1024 * 1024 + 5, 7))]), name);
    const user = WORDS[lang].user;
    const r = await call(`${t.base}/upload${query}`, {
      method: 'POST',
      headers: { authorization: basic(user, `${user}-password`) },
      body: form,
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  };
  const checks = async (o: OpenedPage, what: string) => {
    assert.equal(await scrollsSideways(o.page), false, `${what}: no sideways scroll`);
    assert.deepEqual(await seriousAxeViolations(o.page), [], `${what}: axe`);
    assert.deepEqual(o.cspViolations, [], `${what}: CSP`);
  };

  for (const lang of LANGS) {
    const w = WORDS[lang];

    test(`${lang}: My files on a phone — a card per file, the name whole on its own line`, async () => {
      await upload(lang, LONG_NAME);
      await upload(lang, 'a.txt');
      const o = await open(`${t.origin}/?lang=${lang}`, lang);
      const { page } = o;
      await signIn(page, lang);
      await page.getByRole('navigation').getByRole('link', { name: w.myFiles }).click();
      const name = page.locator('td.name', { hasText: LONG_NAME.slice(0, 20) });
      await name.waitFor();

      const cell = await name.boundingBox();
      const size = await page.locator('tr', { has: name }).locator('td.num').boundingBox();
      assert.ok(cell && size);
      assert.ok(cell.width >= 200 || cell.y + cell.height <= size.y, `name cell ${cell.width} px wide`);
      // Where the name wraps, the line before ends with a separator: never inside a word.
      const breaks = await name.locator('.file-name').evaluate((el) => {
        const text = el.textContent ?? '';
        const out: string[] = [];
        let top: number | null = null;
        let offset = 0;
        const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
          for (let i = 0; i < (node.textContent ?? '').length; i++) {
            const range = document.createRange();
            range.setStart(node, i);
            range.setEnd(node, i + 1);
            const y = Math.round(range.getBoundingClientRect().top);
            if (top !== null && y > top) out.push(text.slice(Math.max(0, offset + i - 8), offset + i + 1));
            top = y;
          }
          offset += (node.textContent ?? '').length;
        }
        return out;
      });
      for (const b of breaks) assert.match(b, /[-_.\s].$/, `the name breaks after a separator: …${b}`);
      assert.equal(await name.locator('.file-name').getAttribute('title'), LONG_NAME);
      assert.match(await page.locator('tr', { has: name }).locator('td.num').innerText(), /^3 MiB$/);
      await screenshot(page, `phone-my-files-${lang}`);
      await checks(o, 'my files on a phone');

      // On a wide screen the headers stay whole too ("Tamanho" used to split at 1280 px).
      await page.setViewportSize(DESKTOP);
      for (const th of await page.locator('table.files th:not(.act)').all()) {
        const lines = await th.evaluate((el) => {
          const range = document.createRange();
          range.selectNodeContents(el);
          return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
        });
        assert.ok(lines <= 1, `header "${await th.innerText()}" on one line`);
      }
      await page.getByRole('columnheader', { name: w.size }).waitFor();
    });

    test(`${lang}: Forgot password answers the same for an account, an address and nobody`, async () => {
      const o = await open(`${t.origin}/?lang=${lang}#/forgot`, lang);
      const { page } = o;
      const answers: string[] = [];
      for (const u of [w.user, `${w.user}@example.com`, 'nobody-here', 'nobody@example.com']) {
        await page.getByLabel(w.forgotField).fill(u);
        await page.getByRole('button', { name: w.sendLink }).click();
        const status = page.locator('.status-slot [role=status]');
        await status.waitFor();
        answers.push(await status.innerText());
        await page.evaluate(() => document.querySelector('.status-slot')?.replaceChildren());
      }
      assert.deepEqual(answers, [w.forgotSent, w.forgotSent, w.forgotSent, w.forgotSent]);
      await checks(o, 'forgot password');
    });

    test(`${lang}: the recipient's page speaks the browser's language, offers the others`, async () => {
      // The sender speaks the other language: the link carries it.
      const sender = WORDS[w.other];
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(Buffer.from('olá'))]), 'contrato.txt');
      const up = await call(`${t.base}/upload?m=rec-${lang}%40example.com`, {
        method: 'POST',
        headers: { authorization: basic(sender.user, `${sender.user}-password`) },
        body: form,
      });
      assert.equal(up.status, 200);
      const { notify } = t.server.services;
      const linkMessage = (await notify.list({ limit: 1000 }))
        .filter((m) => m.kind === 'file-link' && m.recipient === `rec-${lang}@example.com`)
        .pop()!;
      const link = /https?:\/\/\S+k=[A-Za-z0-9_-]+/.exec((await notify.show(linkMessage.id))!.text)![0];
      assert.match(link, new RegExp(`lang=${w.other}&`));

      const o = await open(link, lang);
      const { page } = o;
      await page.getByRole('heading', { name: w.landing }).waitFor();
      assert.equal(await page.getAttribute('html', 'lang'), lang === 'pt' ? 'pt-BR' : 'en');
      const choice = page.locator('#lang-switch');
      assert.ok(await choice.isVisible(), 'a visible language switch');
      assert.deepEqual(await choice.locator('option').allTextContents(), ['Português', 'English', 'Español']);
      await checks(o, 'landing page');

      // The PIN message follows the page: first in the browser's language, then in the one chosen.
      const pinLang = async () => {
        const pins = (await notify.list({ limit: 1000 })).filter((m) => m.kind === 'download-pin');
        return (await notify.show(pins.at(-1)!.id))!.lang;
      };
      await page.getByRole('button', { name: w.sendCode }).click();
      await page.locator('.status-slot [role=status]').waitFor();
      assert.equal(await pinLang(), lang);
      await choice.selectOption('es');
      await page.getByRole('heading', { name: 'Descargar un archivo' }).waitFor();
      await page.reload();
      await page.getByRole('heading', { name: 'Descargar un archivo' }).waitFor();
    });

    test(`${lang}: delivery lines in the page's language; a message only logged is not a failure`, async () => {
      await upload(lang, `tracked-${lang}.bin`, '?m=bob%40example.com&c=%2B5511999990000');
      await t.server.services.notify.deliverDue();
      const o = await open(`${t.origin}/?lang=${lang}`, lang);
      const { page } = o;
      await signIn(page, lang);
      await page.getByRole('navigation').getByRole('link', { name: w.myFiles }).click();
      const lines = page.getByRole('list', { name: w.whoWasTold(`tracked-${lang}.bin`) });
      const mailLine = lines.getByRole('listitem').filter({ hasText: 'b***@example.com' });
      const smsLine = lines.getByRole('listitem').filter({ hasText: '+55*******0000' });
      await mailLine.getByText(w.logged, { exact: true }).waitFor();
      await smsLine.getByText(w.smsFailed, { exact: true }).waitFor();
      const text = await page.locator('main').innerText();
      assert.doesNotMatch(text, /transport|webhook|configured \(|HTTP 500/, 'no server English on the page');
      // Neutral, not the red of a failure.
      const colour = (line: typeof mailLine) =>
        line.locator('.message').evaluate((el) => getComputedStyle(el).color);
      assert.notEqual(await colour(mailLine), await colour(smsLine));
      assert.equal(await colour(smsLine), 'rgb(164, 22, 26)');
      await screenshot(page, `phone-delivery-${lang}`);
      await checks(o, 'delivery lines');
    });

    test(`${lang}: Send clears recipients and message, says who was told; translated picker`, async () => {
      const o = await open(`${t.origin}/?lang=${lang}`, lang);
      const { page } = o;
      await signIn(page, lang);
      const picker = page.getByLabel(w.chooseFiles);
      const label = page.locator('label.file-button');
      assert.equal(await label.innerText(), w.chooseFiles);
      assert.ok(await label.isVisible());
      assert.ok(((await picker.boundingBox())?.width ?? 0) <= 1, 'the native control is hidden');
      await picker.focus();
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'files', 'reachable by keyboard');
      await page.getByText(w.noFile).waitFor();

      await picker.setInputFiles([
        { name: `note-${lang}.txt`, mimeType: 'text/plain', buffer: Buffer.from('hi') },
      ]);
      await page.getByLabel(w.emails).fill('rita@example.com');
      await page.getByLabel(w.message).fill('Segue / here it is');
      await page.getByRole('button', { name: w.send, exact: true }).click();
      const row = page.locator('li.upload').last();
      await row.getByText(w.sent, { exact: true }).waitFor();
      await row.getByText(w.notified, { exact: true }).waitFor();
      assert.equal(await page.getByLabel(w.emails).inputValue(), '');
      assert.equal(await page.getByLabel(w.message).inputValue(), '');
      await page.getByText(w.noFile).waitFor();
      await screenshot(page, `phone-send-${lang}`);
      await checks(o, 'send');
    });
  }
});
