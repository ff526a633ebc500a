// The browser portal in Debian's Chromium (playwright-core) against the real server: sign in,
// language, phone layout, axe-core, CSP, screenshots. Endpoints of other branches (upload, lists,
// download info/PIN, password recovery) are stubbed in the browser with page.route, so these tests
// exercise the portal alone; the end-to-end flows over the real endpoints are planned in
// docs/portal.md.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page, Route } from 'playwright-core';
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
import { closeAll, serverFor, startTestServer, type TestServer } from './helpers/server.js';

const ok = (extra: object) => ({
  status: 0,
  description: 'handlerDownloadList:succsessfully',
  apiver: 'v1 (0.1.0)',
  time: '2026-01-01 00:00:00.000000 +0000 UTC m=+1.000000000',
  ...extra,
});
const fail = (status: number, description: string, detail?: string) => ({
  status,
  description,
  apiver: 'v1 (0.1.0)',
  time: '2026-01-01 00:00:00.000000 +0000 UTC m=+1.000000000',
  ...(detail ? { detail } : {}),
});
/** Stubs one API path of another branch (any query). */
const at = (pathname: string) => (url: URL) => url.pathname === pathname;
const reply = (route: Route, status: number, body: object) =>
  route.fulfill({ status, contentType: 'application/json; charset=utf-8', body: JSON.stringify(body) });

describe('portal in a real browser', { skip: browserSkip() }, () => {
  let t: TestServer;
  let browser: Browser;
  const opened: OpenedPage[] = [];

  before(async () => {
    t = await startTestServer();
    await t.createUser('alice', 'alice-password', { lang: 'en' });
    await t.createUser('pedro', 'pedro-password', { lang: 'es' });
    await t.createUser('locked', 'locked-password');
    browser = await launchBrowser();
  });
  after(async () => {
    for (const o of opened) await o.close().catch(() => {});
    await closeAll(browser, t);
  });

  async function open(pathAndQuery: string, opts: { locale?: string; phone?: boolean } = {}) {
    const o = await openPage(browser, { locale: opts.locale, ...(opts.phone ? { viewport: PHONE } : {}) });
    opened.push(o);
    if (pathAndQuery) await o.page.goto(`${t.origin}${pathAndQuery}`);
    return o;
  }

  /** axe, CSP, phone width and screenshots of whatever the page shows now. */
  async function checkPage(o: OpenedPage, name: string) {
    const { page } = o;
    await page.setViewportSize({ width: 1280, height: 800 });
    await screenshot(page, `${name}-desktop`);
    assert.deepEqual(await seriousAxeViolations(page), [], `${name}: axe on desktop`);
    await page.setViewportSize(PHONE);
    assert.equal(await scrollsSideways(page), false, `${name}: no horizontal scroll at 360 px`);
    assert.deepEqual(await seriousAxeViolations(page), [], `${name}: axe on phone`);
    await screenshot(page, `${name}-phone`);
    assert.deepEqual(o.cspViolations, [], `${name}: no CSP violations`);
  }

  async function signIn(page: Page, user: string, password: string) {
    await page.getByLabel('Username').fill(user);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  test('every portal response carries the strict headers; API requests are not hijacked', async () => {
    const html = { Accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };
    for (const url of ['/', '/v1/auth/change?lang=en&k=abc', '/v1/download/file?lang=pt&k=abc']) {
      const res = await fetch(`${t.origin}${url}`, { headers: html });
      assert.equal(res.status, 200, url);
      assert.match(res.headers.get('content-type') ?? '', /^text\/html/, url);
      const csp = res.headers.get('content-security-policy') ?? '';
      assert.match(csp, /script-src 'self'/, url);
      assert.match(csp, /frame-ancestors 'none'/, url);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/, url);
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff', url);
      assert.equal(res.headers.get('referrer-policy'), 'no-referrer', url);
      assert.equal(res.headers.get('cache-control'), 'no-cache', url);
      const body = await res.text();
      assert.doesNotMatch(body, /<script>|<style|style=/, `${url}: no inline script or style`);
    }
    const shell = await (await fetch(`${t.origin}/`)).text();
    const js = /src="(\/assets\/app-[\w-]+\.js)"/.exec(shell)?.[1];
    assert.ok(js, 'shell links the hashed bundle');
    const asset = await fetch(`${t.origin}${js}`);
    assert.equal(asset.status, 200);
    assert.match(asset.headers.get('cache-control') ?? '', /max-age=31536000.*immutable/);
    // API clients (no text/html), PIN downloads and the Download button's dl=1 go to the files route.
    for (const [url, accept] of [
      ['/v1/download/file?k=abc', 'application/json'],
      ['/v1/download/file?k=abc&p=123456', html.Accept],
      ['/v1/download/file?k=abc&dl=1', html.Accept],
    ] as const) {
      const res = await fetch(`${t.origin}${url}`, { headers: { Accept: accept } });
      assert.doesNotMatch(res.headers.get('content-type') ?? '', /^text\/html/, url);
    }
  });

  test('portal lives at the parent of the API path (/directlink/ for /directlink/v1)', async (ctx) => {
    const dl = await serverFor(ctx, { apiPath: '/directlink/v1' });
    const res = await fetch(`${dl.origin}/directlink/`);
    assert.equal(res.status, 200);
    const body = await res.text();
    assert.match(body, /src="\/directlink\/assets\/app-/);
    assert.match(body, /&quot;api&quot;:&quot;\/directlink\/v1&quot;/);
    const change = await fetch(`${dl.origin}/directlink/v1/auth/change?k=x`);
    assert.equal(change.status, 200);
  });

  test('sign in: wrong password in words, then the Send page with navigation', async () => {
    const o = await open('/');
    const { page } = o;
    await checkPage(o, 'sign-in');
    await page.setViewportSize({ width: 1280, height: 800 });
    await signIn(page, 'alice', 'wrong-password');
    await page
      .getByRole('alert')
      .getByText(/^Wrong username or password\./)
      .waitFor();
    await signIn(page, 'alice', 'alice-password');
    await page.getByRole('heading', { name: 'Send files' }).waitFor();
    for (const name of ['Send', 'My files', 'Backup']) {
      await page.getByRole('navigation').getByRole('link', { name }).waitFor();
    }
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    assert.deepEqual(o.cspViolations, []);
  });

  test('sign in is usable with the keyboard alone', async () => {
    const { page } = await open('/?lang=en');
    await page.getByLabel('Username').focus();
    await page.keyboard.type('alice');
    await page.keyboard.press('Tab');
    await page.keyboard.type('alice-password');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Send files' }).waitFor();
    const focusVisible = await page.evaluate(() => {
      const link = document.querySelector<HTMLAnchorElement>('nav a');
      link?.focus();
      return link ? getComputedStyle(link).outlineStyle : 'none';
    });
    assert.notEqual(focusVisible, 'none', 'focused links show an outline');
  });

  test('lockout is explained', async () => {
    for (let i = 0; i < 5; i++) {
      await fetch(`${t.base}/auth/login`, {
        method: 'POST',
        headers: { Authorization: `Basic ${Buffer.from('locked:nope-nope').toString('base64')}` },
      });
    }
    const { page } = await open('/?lang=en');
    await signIn(page, 'locked', 'locked-password');
    await page
      .getByRole('alert')
      .getByText(/locked for a while/)
      .waitFor();
  });

  test('language: lang query, switcher, user setting, browser', async () => {
    const { page } = await open('/?lang=pt');
    await page.getByRole('button', { name: 'Entrar' }).waitFor();
    await page.getByLabel('Idioma').selectOption('es');
    await page.getByRole('button', { name: 'Iniciar sesión' }).waitFor();
    assert.match(page.url(), /lang=es/);
    assert.equal(await page.evaluate(() => document.documentElement.lang), 'es');
    // Browser language when nothing else says.
    const fr = await open('/', { locale: 'pt-BR' });
    await fr.page.getByRole('link', { name: 'Esqueceu a senha?' }).waitFor();
    // The user's own setting after sign-in (pedro speaks Spanish; the browser says English).
    const en = await open('/', { locale: 'en-US' });
    await signIn(en.page, 'pedro', 'pedro-password');
    await en.page.getByRole('heading', { name: 'Enviar archivos' }).waitFor();
    await en.page.getByRole('navigation').getByRole('link', { name: 'Mis archivos' }).waitFor();
  });

  test('send: progress bar per file, link with copy button, errors in words per file', async () => {
    const o = await open('/?lang=en#/send');
    const { page } = o;
    await signIn(page, 'alice', 'alice-password');
    await page.getByRole('heading', { name: 'Send files' }).waitFor();
    await checkPage(o, 'send');
    await page.setViewportSize({ width: 1280, height: 800 });
    let calls = 0;
    // Uploads are tus: creation requests are checked here, then go to the real server.
    await page.route(at('/v1/uploads'), async (route) => {
      if (route.request().method() !== 'POST') return route.continue();
      calls += 1;
      const headers = route.request().headers();
      assert.match(headers['authorization'] ?? '', /^Bearer /);
      const meta = Object.fromEntries(
        (headers['upload-metadata'] ?? '').split(',').map((p) => {
          const [k, v] = p.split(' ');
          return [k, Buffer.from(v ?? '', 'base64').toString('utf8')];
        }),
      );
      if (meta['filename'] === 'bad.txt')
        return reply(route, 400, fail(400, 'Bad Request', 'm: invalid e-mail address "x@"'));
      assert.equal(meta['m'], 'bob@example.com');
      return route.continue();
    });
    await page.getByLabel('Files').setInputFiles([
      { name: 'hello.txt', mimeType: 'text/plain', buffer: Buffer.from('hello') },
      { name: 'bad.txt', mimeType: 'text/plain', buffer: Buffer.from('nope') },
    ]);
    await page.getByLabel('E-mail recipients').fill('bob@example.com');
    await page.getByLabel('Message').fill('Relatório do mês');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    assert.equal(await page.getByRole('progressbar').count(), 2);
    await page.getByRole('textbox', { name: 'Link for hello.txt' }).waitFor();
    assert.match(
      await page.getByRole('textbox', { name: 'Link for hello.txt' }).inputValue(),
      new RegExp(`^${t.base}/download/file\\?lang=en&k=[A-Za-z0-9_-]+$`),
    );
    // The server's English detail is not shown: the field it names is, in the page's words.
    await page.getByRole('alert').getByText('The server refused an e-mail address: check them.').waitFor();
    await page.getByRole('button', { name: 'Copy link' }).click();
    await page.getByText(/Link copied|Could not copy/).waitFor();
    assert.equal(calls, 2, 'one request per file');
    await checkPage(o, 'send-results');
  });

  test('received and backup lists page through 100 files', async () => {
    const o = await open('/?lang=en');
    const { page } = o;
    const entry = (i: number) => ({
      id: i,
      name: `report-${i}-with-a-rather-long-name-for-phones.pdf`,
      length: 1000 * i,
      modified: 1_700_000_000_000 + i,
      linkURL: `${t.base}/download/file?lang=pt&k=T${i}`,
    });
    const pagesAsked: string[] = [];
    await page.route(
      (url: URL) => url.pathname.startsWith('/v1/download/list'),
      (route) => {
        const url = new URL(route.request().url());
        const p = Number(url.searchParams.get('page'));
        pagesAsked.push(`${url.pathname}?page=${p}`);
        const files = url.pathname.endsWith('/backup')
          ? [entry(7)]
          : p === 1
            ? Array.from({ length: 100 }, (_, i) => entry(i + 1))
            : [entry(101)];
        return reply(route, 200, ok({ user: 'alice', files }));
      },
    );
    await signIn(page, 'alice', 'alice-password');
    await page.getByRole('navigation').getByRole('link', { name: 'My files' }).click();
    await page.getByRole('heading', { name: 'Files in your area' }).waitFor();
    assert.equal(await page.getByRole('link', { name: /^Download report-/ }).count(), 100);
    const href = await page.getByRole('link', { name: /^Download report-1-/ }).getAttribute('href');
    assert.match(href ?? '', /k=T1&dl=1$/, 'list downloads ask for the bytes, not the landing page');
    await checkPage(o, 'received');
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.getByRole('button', { name: 'Next page' }).click();
    await page.getByText('Page 2').waitFor();
    await page.getByRole('link', { name: /^Download report-101-/ }).waitFor();
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Backup' }).click();
    await page.getByRole('heading', { name: 'Backup' }).waitFor();
    await page.getByRole('link', { name: /^Download report-7-/ }).waitFor();
    await checkPage(o, 'backup');
    assert.deepEqual(pagesAsked, [
      '/v1/download/list?page=1',
      '/v1/download/list?page=2',
      '/v1/download/list/backup?page=1',
    ]);
  });

  test('sign out revokes the token; inactivity forgets it', async () => {
    const { page } = await open('/?lang=en');
    await signIn(page, 'alice', 'alice-password');
    await page.getByRole('heading', { name: 'Send files' }).waitFor();
    const token = await page.evaluate(() => sessionStorage.getItem('remessa.token'));
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByText('You have signed out.').waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('remessa.token')), null);
    const after = await fetch(`${t.base}/auth/logout`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}` },
    });
    assert.equal(after.status, 401, 'the token was revoked');
    await signIn(page, 'alice', 'alice-password');
    await page.getByRole('heading', { name: 'Send files' }).waitFor();
    await page.evaluate(() => sessionStorage.setItem('remessa.lastActive', String(Date.now() - 31 * 60_000)));
    await page.reload();
    await page.getByText('You were signed out after 30 minutes without activity.').waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('remessa.token')), null);
  });

  test('recipient landing page: details, send code, wrong code explained, then download', async () => {
    const o = await open('', { phone: true });
    const { page } = o;
    await page.route(at('/v1/download/info'), (route) =>
      reply(
        route,
        200,
        ok({
          user: 'alice',
          file: {
            name: 'contrato.pdf',
            length: 123456,
            modified: 1_700_000_000_000,
            sender: 'alice',
            message: 'Segue o contrato.',
            expires: Date.now() + 7 * 86_400_000,
            secure: true,
            lang: 'en',
          },
        }),
      ),
    );
    let pins = 0;
    await page.route(at('/v1/download/pin'), (route) => {
      pins += 1;
      return pins === 1
        ? reply(route, 200, ok({ user: 'alice' }))
        : reply(route, 429, fail(429, 'Too Many Requests'));
    });
    await page.route(
      (url: URL) => url.pathname === '/v1/download/file' && url.searchParams.has('p'),
      (route) =>
        route.request().url().includes('p=111111')
          ? reply(route, 403, fail(403, 'Forbidden'))
          : route.fulfill({ status: 200, body: '' }),
    );
    await page.goto(`${t.base}/download/file?lang=en&k=TOKEN123`);
    await page.getByText('contrato.pdf').waitFor();
    await page.getByText('Segue o contrato.').waitFor();
    await checkPage(o, 'landing');
    await page.getByRole('button', { name: 'Send code' }).click();
    await page.getByText('Code sent.', { exact: false }).waitFor();
    await page.getByRole('button', { name: 'Send code' }).click();
    await page
      .getByRole('alert')
      .getByText(/less than a minute ago/)
      .waitFor();
    await page.getByRole('button', { name: 'Download' }).click();
    await page.getByRole('alert').getByText('Type the code you received first.').waitFor();
    await page.getByLabel('Code').fill('111111');
    await page.getByRole('button', { name: 'Download' }).click();
    await page
      .getByRole('alert')
      .getByText(/Wrong or expired code/)
      .waitFor();
    await page.getByLabel('Code').fill('222222');
    const nav = page.waitForRequest((r) => r.url().includes('p=222222') && r.method() === 'GET');
    await page.getByRole('button', { name: 'Download' }).click();
    assert.match((await nav).url(), /\/v1\/download\/file\?k=TOKEN123&p=222222&dl=1$/);
  });

  test('landing page for an invalid link says so', async () => {
    const o = await open('', { locale: 'es-ES' });
    await o.page.route(at('/v1/download/info'), (route) => reply(route, 401, fail(401, 'Unauthorized')));
    await o.page.goto(`${t.base}/download/file?lang=es&k=NOPE`);
    await o.page
      .getByRole('alert')
      .getByText(/Este enlace no es válido/)
      .waitFor();
    await checkPage(o, 'landing-invalid');
  });

  test('forgot password answers alike for any name; first access explains each answer', async () => {
    const o = await open('/?lang=en#/forgot');
    const { page } = o;
    await page.route(at('/v1/auth/forgetParameters'), (route) => {
      const u = new URL(route.request().url()).searchParams.get('u');
      if (u === 'ghost') return reply(route, 401, fail(401, 'Unauthorized'));
      if (u === 'off') return reply(route, 403, fail(403, 'Forbidden'));
      return reply(route, 200, ok({ user: u, linkURL: `${t.base}/auth/change?lang=en&k=CHANGE1` }));
    });
    await page.route(at('/v1/auth/firstaccess'), (route) => reply(route, 403, fail(403, 'Forbidden')));
    await page.getByRole('heading', { name: 'Forgot password' }).waitFor();
    await checkPage(o, 'forgot');
    const answers: string[] = [];
    for (const u of ['ghost', 'off', 'alice']) {
      await page.getByLabel('Username or e-mail address').fill(u);
      await page.getByRole('button', { name: 'Send me a link' }).click();
      const answer = page.getByRole('status').filter({ hasText: 'If an account exists' });
      await answer.waitFor();
      answers.push(await answer.innerText());
      await page.evaluate(() => document.querySelector('.status-slot')?.replaceChildren());
    }
    assert.equal(new Set(answers).size, 1, 'the same words whatever the server said');
    assert.equal(await page.getByRole('link', { name: 'Continue: enter the code' }).count(), 0);
    await page.goto(`${t.origin}/?lang=en#/first-access`);
    await page.getByLabel('Username').fill('alice');
    await page.getByRole('button', { name: 'Send me a link' }).click();
    await page
      .getByRole('alert')
      .getByText(/already active/)
      .waitFor();
  });

  test('change password page: send code, mismatch, wrong code, weak password, success', async () => {
    const o = await open('');
    const { page } = o;
    const bodies: unknown[] = [];
    await page.route(at('/v1/auth/changeParameters'), (route) => {
      const body = route.request().postDataJSON() as { k: string; p?: string; z?: string };
      bodies.push(body);
      assert.doesNotMatch(route.request().url(), /[?&][pz]=/, 'PIN and password stay out of the URL');
      if (!body.p) return reply(route, 200, ok({ user: 'alice', linkURL: 'x' }));
      if (body.p === '000000') return reply(route, 403, fail(403, 'Forbidden'));
      if ((body.z ?? '').length < 8) return reply(route, 400, fail(400, 'Bad Request', 'password too short'));
      return reply(route, 200, ok({ user: 'alice', linkURL: 'x' }));
    });
    await page.goto(`${t.base}/auth/change?lang=en&k=CHANGE1`);
    await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();
    await checkPage(o, 'change');
    await page.getByRole('button', { name: 'Send code' }).click();
    await page.getByText('A new code was sent to your e-mail.').waitFor();
    await page.getByLabel('Code').fill('000000');
    await page.getByLabel('New password').fill('long-enough-1');
    await page.getByLabel('Confirm password').fill('long-enough-2');
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByRole('alert').getByText('The two passwords are different.').waitFor();
    await page.getByLabel('Confirm password').fill('long-enough-1');
    await page.getByRole('button', { name: 'Change password' }).click();
    await page
      .getByRole('alert')
      .getByText(/code is wrong or has expired/)
      .waitFor();
    await page.getByLabel('Code').fill('123456');
    await page.getByLabel('New password').fill('short');
    await page.getByLabel('Confirm password').fill('short');
    await page.getByRole('button', { name: 'Change password' }).click();
    await page
      .getByRole('alert')
      .getByText(/too weak or too short/)
      .waitFor();
    await page.getByLabel('New password').fill('long-enough-1');
    await page.getByLabel('Confirm password').fill('long-enough-1');
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByText('Your password was changed.', { exact: false }).waitFor();
    assert.deepEqual(bodies[0], { k: 'CHANGE1' });
    assert.deepEqual(bodies.at(-1), { k: 'CHANGE1', p: '123456', z: 'long-enough-1' });
    assert.deepEqual(o.cspViolations, []);
  });
});
