// Password recovery and first access (GET {base}/auth/forgetParameters?u=, (ext) /auth/firstaccess?u=)
// and the change page served at {base}/auth/change?lang=&k= (POST {base}/auth/changeParameters with
// a JSON body, so passwords stay out of URLs). Statuses as the API answers them.
import { ApiError, call, errorText } from '../api.js';
import { config } from '../config.js';
import { cardForm, field, h, notice, pageHeading, put, say, swap, usernameInput } from '../dom.js';
import { currentLang, t } from '../i18n.js';
import type { PageContext } from '../page-context.js';

function signInHref(): string {
  return `${config.portal}?lang=${currentLang()}#/`;
}

/**
 * Forgot password answers the same whatever the server said about the account (unknown, disabled,
 * no e-mail, asked too soon, sent), so the form tells nobody whether a name or address has one.
 * Only a failure to reach the server, or a server fault, is reported as such.
 */
function forgotAnswer(status: HTMLElement, err: unknown): void {
  const s = err instanceof ApiError ? err.status : 200;
  if (s === 0 || s >= 500) say(status, 'error', errorText(err));
  else say(status, 'success', t('forgotSent'));
}

function firstAccessAnswer(status: HTMLElement, res: { linkURL?: string } | null, err: unknown): void {
  if (res) {
    swap(
      status,
      notice('success', t('linkSentByMail')),
      res.linkURL ? h('p', {}, h('a', { href: res.linkURL }, t('continueToChange'))) : null,
    );
    return;
  }
  const s = err instanceof ApiError ? err.status : 0;
  say(status, 'error', s === 401 ? t('unknownUser') : s === 403 ? t('notFirstAccess') : errorText(err));
}

export function renderRecovery(ctx: PageContext, kind: 'forgot' | 'first'): void {
  const username = usernameInput();
  // Forgot password also takes the account's e-mail address.
  if (kind === 'forgot') username.maxLength = 254;
  const status = h('div', { class: 'status-slot' });
  const submit = h('button', { type: 'submit' }, t('sendLink'));
  const form = cardForm(
    {
      status,
      submit,
      check: () =>
        username.value.trim()
          ? null
          : { text: t(kind === 'forgot' ? 'nameOrEmailNeeded' : 'unknownUser'), field: username },
      send: async () => {
        const u = username.value.trim();
        try {
          const path = kind === 'forgot' ? '/auth/forgetParameters' : '/auth/firstaccess';
          const res = await call<{ linkURL?: string }>(path, { query: { u } });
          if (kind === 'forgot') forgotAnswer(status, null);
          else firstAccessAnswer(status, res, null);
        } catch (err) {
          if (kind === 'forgot') forgotAnswer(status, err);
          else firstAccessAnswer(status, null, err);
        }
      },
    },
    h('p', {}, t(kind === 'forgot' ? 'forgotIntro' : 'firstAccessIntro')),
    field(t(kind === 'forgot' ? 'usernameOrEmail' : 'username'), username),
    status,
    h('div', { class: 'actions' }, submit),
    h('p', {}, h('a', { href: '#/' }, t('backToSignIn'))),
  );
  put(ctx.main, pageHeading(t(kind === 'forgot' ? 'forgotTitle' : 'firstAccessTitle')), form);
}

function changeErrorText(err: unknown): string {
  const s = err instanceof ApiError ? err.status : 0;
  if (s === 401) return t('changeTokenInvalid');
  if (s === 403) return t('changeWrongCode');
  if (s === 429) return t('tooManyCodes');
  if (s === 400) return t('weakPassword');
  return errorText(err);
}

export function renderChange(ctx: PageContext): void {
  const k = new URLSearchParams(location.search).get('k') ?? '';
  put(ctx.main, pageHeading(t('changeTitle')));
  if (!k) {
    put(
      ctx.main,
      notice('error', t('changeTokenInvalid')),
      h('p', {}, h('a', { href: signInHref() }, t('goToSignIn'))),
    );
    return;
  }
  const status = h('div', { class: 'status-slot' });
  const code = h('input', {
    name: 'code',
    inputmode: 'numeric',
    autocomplete: 'one-time-code',
    maxlength: 6,
    required: true,
  });
  const pw = h('input', {
    name: 'new-password',
    type: 'password',
    autocomplete: 'new-password',
    required: true,
  });
  const pw2 = h('input', {
    name: 'confirm-password',
    type: 'password',
    autocomplete: 'new-password',
    required: true,
  });
  const sendCode = h('button', { type: 'button', class: 'secondary' }, t('sendCode'));
  sendCode.addEventListener('click', async () => {
    sendCode.disabled = true;
    try {
      await call('/auth/changeParameters', { method: 'POST', json: { k } });
      say(status, 'success', t('codeSentByMail'));
      code.focus();
    } catch (err) {
      say(status, 'error', changeErrorText(err));
    } finally {
      sendCode.disabled = false;
    }
  });
  const submit = h('button', { type: 'submit' }, t('changePassword'));
  const form: HTMLFormElement = cardForm(
    {
      status,
      submit,
      check: () => {
        if (!code.value.trim()) return { text: t('codeNeeded'), field: code };
        return pw.value !== pw2.value ? { text: t('passwordsDiffer'), field: pw2 } : null;
      },
      send: async () => {
        try {
          await call('/auth/changeParameters', {
            method: 'POST',
            json: { k, p: code.value.trim(), z: pw.value },
          });
          form.replaceWith(
            h(
              'div',
              { class: 'card narrow' },
              notice('success', t('passwordChanged')),
              h('p', {}, h('a', { href: signInHref() }, t('goToSignIn'))),
            ),
          );
        } catch (err) {
          say(status, 'error', changeErrorText(err));
        }
      },
    },
    h('p', {}, t('changeIntro')),
    h('div', { class: 'actions' }, sendCode),
    field(t('code'), code),
    field(t('newPassword'), pw, t('passwordRule')),
    field(t('confirmPassword'), pw2),
    status,
    h('div', { class: 'actions' }, submit),
  );
  put(ctx.main, form);
}
