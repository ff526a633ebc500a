// Sign in: username + password → POST {base}/auth/login with Basic; clear words on 401 and lockout.
import { ApiError, call, errorText } from '../api.js';
import { config } from '../config.js';
import { cardForm, field, h, notice, pageHeading, put, say, usernameInput } from '../dom.js';
import { currentLang, t } from '../i18n.js';
import { loadUserLang } from '../language.js';
import type { PageContext } from '../page-context.js';
import { startSession } from '../session.js';

/** "Sign in with <provider>": to the provider, and back to this page (portal or console). */
function singleSignOn(): HTMLElement | null {
  if (!config.sso) return null;
  const query = new URLSearchParams({
    to: config.page === 'admin' ? 'admin' : 'portal',
    lang: currentLang(),
  });
  return h(
    'div',
    { class: 'card narrow sso' },
    h(
      'a',
      { class: 'button', id: 'sso-sign-in', href: `${config.api}/auth/oidc/start?${query}` },
      t('signInWith', { name: config.sso.name }),
    ),
  );
}

export function renderSignIn(ctx: PageContext): void {
  if (!config.passwordLogin) {
    put(
      ctx.main,
      pageHeading(t('signInTitle')),
      ctx.flash ? notice('info', ctx.flash) : null,
      singleSignOn(),
    );
    return;
  }
  // Recovery lives in the portal's own page, also when signing in to the admin console.
  const portalPrefix = config.page === 'admin' ? config.portal : '';
  const username = usernameInput();
  const password = h('input', {
    name: 'password',
    type: 'password',
    autocomplete: 'current-password',
    required: true,
  });
  const status = h('div', { class: 'status-slot' });
  const submit = h('button', { type: 'submit' }, t('signIn'));

  const form = cardForm(
    {
      status,
      submit,
      check: () =>
        !username.value.trim() || !password.value
          ? { text: t('badCredentials'), field: username.value.trim() ? password : username }
          : null,
      send: async () => {
        say(status, 'info', t('loading'));
        try {
          const user = username.value.trim();
          const res = await call<{ bearer: string }>('/auth/login', {
            method: 'POST',
            auth: { basic: { user, password: password.value } },
          });
          startSession({ token: res.bearer, user: res.user ?? user });
          await loadUserLang();
          // The admin console signs in where it is and then shows the page that was asked for.
          if (config.page === 'admin') ctx.refresh();
          else ctx.go('#/send');
        } catch (err) {
          // Every failed sign-in gets the same answer (locked or not, known user or not).
          const text = err instanceof ApiError && err.status === 401 ? t('badCredentials') : errorText(err);
          say(status, 'error', text);
          password.value = '';
          password.focus();
        }
      },
    },
    field(t('username'), username),
    field(t('password'), password),
    status,
    h('div', { class: 'actions' }, submit),
    h(
      'ul',
      { class: 'links' },
      h('li', {}, h('a', { href: `${portalPrefix}#/forgot` }, t('forgotPassword'))),
      h('li', {}, h('a', { href: `${portalPrefix}#/first-access` }, t('firstAccess'))),
    ),
  );
  put(
    ctx.main,
    pageHeading(t('signInTitle')),
    ctx.flash ? notice('info', ctx.flash) : null,
    singleSignOn(),
    form,
  );
}
