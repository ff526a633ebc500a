// Portal entry: picks the language, draws the header (navigation, language switcher, sign out) and
// routes to a page. The app pages use hash routes (#/send, #/keys …); the recipient landing page and the
// password-change page are served by the server at their API URLs, the admin console at
// {portal}admin with hash routes of its own (body data-page).
import { call } from './api.js';
import { config } from './config.js';
import { clear, h } from './dom.js';
import { currentLang, isLang, LANG_NAMES, LANGS, setLang, t } from './i18n.js';
import { chooseLang, forgetUserLang, pickLang } from './language.js';
import type { PageContext } from './page-context.js';
import { adminSections, currentSection, renderAdmin } from './pages/admin/console.js';
import { renderKeys } from './pages/keys.js';
import { renderLanding } from './pages/landing.js';
import { renderFileList } from './pages/lists.js';
import { renderChange, renderRecovery } from './pages/password.js';
import { renderRequest } from './pages/request.js';
import { renderRequests } from './pages/requests.js';
import { renderSend } from './pages/send.js';
import { renderSignIn } from './pages/sign-in.js';
import { finishSingleSignOn, ssoCode } from './pages/sso.js';
import { type EndReason, endSession, getSession, providerLogoutUrl, watchSession } from './session.js';

let flash: string | null = null;
let focusHeading = false;

function route(): string {
  return location.hash.replace(/^#/, '') || '/';
}

function languageSwitcher(): HTMLElement {
  const select = h(
    'select',
    {
      id: 'lang-switch',
      onchange: (e) => {
        const v = (e.target as HTMLSelectElement).value;
        if (isLang(v)) {
          chooseLang(v);
          render();
          document.getElementById('lang-switch')?.focus();
        }
      },
    },
    LANGS.map((l) => h('option', { value: l, lang: l, selected: l === currentLang() }, LANG_NAMES[l])),
  );
  return h('div', { class: 'lang' }, h('label', { for: 'lang-switch' }, t('language')), select);
}

/** The header's navigation: the portal's pages, or the admin console's sections. */
function navigation(): HTMLElement {
  const admin = config.page === 'admin';
  const here = admin ? currentSection() : `#${route()}`;
  const link = (hash: string, label: string) =>
    h('li', {}, h('a', { href: hash, 'aria-current': here === hash ? 'page' : null }, label));
  const links = admin
    ? [
        ...adminSections().map(([hash, label]) => link(hash, label)),
        h('li', {}, h('a', { href: config.portal }, t('navPortal'))),
      ]
    : [
        link('#/send', t('navSend')),
        link('#/received', t('navReceived')),
        link('#/backup', t('navBackup')),
        link('#/requests', t('navRequests')),
        link('#/keys', t('navKeys')),
      ];
  return h('nav', { 'aria-label': t(admin ? 'adminNavLabel' : 'navLabel') }, h('ul', {}, links));
}

function header(signedIn: boolean): HTMLElement {
  const session = getSession();
  const home = config.page === 'admin' ? '#/' : signedIn ? '#/send' : '#/';
  return h(
    'header',
    { class: 'top' },
    h(
      'a',
      { class: 'brand', href: config.page === 'app' || config.page === 'admin' ? home : config.portal },
      'Remessa',
    ),
    signedIn && navigation(),
    h(
      'div',
      { class: 'tools' },
      languageSwitcher(),
      session &&
        h(
          'button',
          {
            type: 'button',
            class: 'secondary',
            title: t('signedInAs', { user: session.user }),
            onclick: signOut,
          },
          t('signOut'),
        ),
    ),
  );
}

async function signOut(): Promise<void> {
  const logoutUrl = providerLogoutUrl();
  try {
    await call('/auth/logout', { method: 'POST', auth: 'bearer' });
  } catch {
    // Forget the token anyway: the server revokes it or it expires on its own.
  }
  endSession('signedOut');
  // Signed in through the identity provider: end its session too (RP-initiated logout), which
  // comes back to the portal.
  if (logoutUrl) location.assign(logoutUrl);
}

let started = false;

function onSessionEnd(reason: EndReason): void {
  forgetUserLang();
  const key = reason === 'idle' ? 'idleSignedOut' : reason === 'expired' ? 'sessionExpired' : 'signedOut';
  flash = t(key, { minutes: config.idleMinutes });
  // The console keeps its address, so signing in again returns to the same page.
  if (config.page === 'admin') {
    if (started) render();
    return;
  }
  if (config.page !== 'app') return;
  // Replace the route without a hashchange event, so the message is drawn exactly once.
  if (location.hash !== '#/') history.replaceState(history.state, '', '#/');
  if (started) render();
}

export function render(): void {
  document.body.replaceChildren();
  const main = h('main', { id: 'main' });
  const ctx: PageContext = {
    main,
    refresh: render,
    go: (hash) => {
      if (location.hash === hash) render();
      else location.hash = hash;
    },
    flash,
  };
  flash = null;
  const signedIn = getSession() !== null && (config.page === 'app' || config.page === 'admin');
  document.body.append(header(signedIn), main);
  clear(main);
  const code = ssoCode(route());
  if (code !== null && (config.page === 'app' || config.page === 'admin')) void finishSingleSignOn(ctx, code);
  else if (config.page === 'landing') renderLanding(ctx);
  else if (config.page === 'change') renderChange(ctx);
  else if (config.page === 'request') renderRequest(ctx);
  else if (config.page === 'admin') renderAdmin(ctx);
  else {
    const r = route();
    const needsSession = ['/send', '/received', '/backup', '/keys', '/requests'].includes(r);
    if (needsSession && !signedIn) renderSignIn(ctx);
    else if (r === '/send') renderSend(ctx);
    else if (r === '/received') renderFileList(ctx, 'area');
    else if (r === '/backup') renderFileList(ctx, 'backup');
    else if (r === '/keys') renderKeys(ctx);
    else if (r === '/requests') renderRequests(ctx);
    else if (r === '/forgot') renderRecovery(ctx, 'forgot');
    else if (r === '/first-access') renderRecovery(ctx, 'first');
    else if (signedIn) renderSend(ctx);
    else renderSignIn(ctx);
  }
  if (focusHeading) main.querySelector('h1')?.focus();
  focusHeading = false;
}

setLang(pickLang());
watchSession(onSessionEnd);
window.addEventListener('hashchange', () => {
  focusHeading = true;
  render();
});
started = true;
render();
