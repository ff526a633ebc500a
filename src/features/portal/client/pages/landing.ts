// Recipient landing page, served for a browser opening {base}/download/file?lang=&k=.
// Details come from (ext) GET {base}/download/info?k= (docs/portal.md). Secure links: "Send code"
// (POST {base}/download/pin?k=), a Code field, then Download (GET …&k=&p=CODE&dl=1).
import { ApiError, apiUrl, call, errorText } from '../api.js';
import { detailsBox, field, h, notice, pageHeading, put, say, swap } from '../dom.js';
import { formatDate, formatSize, toMillis } from '../format.js';
import { currentLang, t } from '../i18n.js';
import type { PageContext } from '../page-context.js';

export interface FileInfo {
  name: string;
  length: number;
  modified?: number;
  sender?: string;
  message?: string;
  expires?: number | string;
  secure: boolean;
  lang?: string;
}

/** Known: details from the info endpoint. Unknown: no info endpoint yet, offer everything. */
type Known = { kind: 'known'; file: FileInfo } | { kind: 'unknown' };

function details(file: FileInfo): HTMLElement {
  const rows: [string, string][] = [
    [t('file'), file.name],
    [t('size'), formatSize(file.length)],
  ];
  if (file.sender) rows.push([t('from'), file.sender]);
  const expires = toMillis(file.expires);
  if (expires !== null) rows.push([t('expires'), formatDate(expires)]);
  return detailsBox({}, rows, file.message ? { caption: t('message'), text: file.message } : null);
}

function form(k: string, info: Known): HTMLElement {
  const status = h('div', { class: 'status-slot' });
  const secure = info.kind === 'unknown' || info.file.secure;
  const code = h('input', {
    name: 'code',
    inputmode: 'numeric',
    autocomplete: 'one-time-code',
    pattern: '[0-9]*',
    maxlength: 6,
  });
  const sendCode = h('button', { type: 'button', class: 'secondary' }, t('sendCode'));
  sendCode.addEventListener('click', async () => {
    sendCode.disabled = true;
    try {
      // The PIN message speaks the language the recipient chose on this page.
      await call('/download/pin', { method: 'POST', query: { k, lang: currentLang() } });
      say(status, 'success', t('codeSent'));
      code.focus();
    } catch (err) {
      const s = err instanceof ApiError ? err.status : 0;
      say(status, 'error', s === 429 ? t('codeTooSoon') : s === 401 ? t('linkInvalid') : errorText(err));
    } finally {
      sendCode.disabled = false;
    }
  });
  const download = h('button', { type: 'submit' }, t('download'));
  const onSubmit = async (e: Event) => {
    e.preventDefault();
    const pin = code.value.trim();
    const mustHaveCode = info.kind === 'known' && info.file.secure;
    if (mustHaveCode && !pin) {
      say(status, 'error', t('codeNeeded'));
      code.focus();
      return;
    }
    const url = apiUrl('/download/file', { k, p: pin || undefined, dl: 1 });
    if (pin) {
      // Check the code first (HEAD sends no bytes), so a wrong one is explained here instead of
      // leaving the recipient on a JSON error page.
      try {
        await call('/download/file', { method: 'HEAD', query: { k, p: pin, dl: 1 } });
      } catch (err) {
        const s = err instanceof ApiError ? err.status : 0;
        if (s === 403) return say(status, 'error', t('wrongCode'));
        if (s === 401) return say(status, 'error', t('linkInvalid'));
        if (s !== 405 && s !== 404) return say(status, 'error', errorText(err));
      }
    }
    say(status, 'info', t('downloadStarting'));
    location.assign(url);
  };
  return h(
    'form',
    { class: 'card', novalidate: true, onsubmit: onSubmit },
    info.kind === 'known' ? details(info.file) : null,
    secure ? h('p', {}, t(info.kind === 'known' ? 'secureIntro' : 'unknownIntro')) : null,
    secure ? h('div', { class: 'actions' }, sendCode) : null,
    secure ? field(t('code'), code) : null,
    status,
    h('div', { class: 'actions' }, download),
  );
}

export function renderLanding(ctx: PageContext): void {
  const k = new URLSearchParams(location.search).get('k') ?? '';
  const body = h('div', {}, h('p', { role: 'status' }, t('loading')));
  put(ctx.main, pageHeading(t('landingTitle')), body);
  if (!k) {
    swap(body, notice('error', t('linkInvalid')));
    return;
  }
  call<{ file?: FileInfo }>('/download/info', { query: { k } }).then(
    (res) => swap(body, res.file ? form(k, { kind: 'known', file: res.file }) : form(k, { kind: 'unknown' })),
    (err: unknown) => {
      const s = err instanceof ApiError ? err.status : 0;
      if (s === 401 || s === 403 || s === 400) swap(body, notice('error', t('linkInvalid')));
      else swap(body, form(k, { kind: 'unknown' }));
    },
  );
}
