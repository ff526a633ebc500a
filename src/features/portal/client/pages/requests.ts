// Upload requests (#/requests, docs/requests.md): a form that asks people without an account for
// files (POST {base}/requests) and shows the links to share, and the signed-in account's requests
// (GET {base}/requests) with what arrived (GET {base}/requests/{id}) and Close (POST
// {base}/requests/{id}/close). Sizes are typed in MB (1024 × 1024 bytes, as the portal shows them).
import { MESSAGE_MAX, TITLE_MAX } from '../../../requests/request-limits.js';
import { type ArrivedFile, call, errorText, type UploadRequest } from '../api.js';
import { field, h, nextId, notice, pageHeading, put, say, swap } from '../dom.js';
import { t } from '../i18n.js';
import type { PageContext } from '../page-context.js';
import { linkToShare, requestList } from './request-parts.js';

const MB = 1024 * 1024;

const list = (value: string) =>
  value
    .split(/[,;\s]+/)
    .map((s) => s.trim())
    .filter(Boolean);

/** The start of a date input's day in the viewer's zone, as an ISO instant. */
function startOfDay(value: string): string {
  const [y, m, d] = value.split('-').map(Number);
  return new Date(y ?? 0, (m ?? 1) - 1, d ?? 1).toISOString();
}

function numberInput(name: string): HTMLInputElement {
  return h('input', { name, type: 'number', min: 1, step: 1, inputmode: 'numeric' });
}

interface Inputs {
  title: HTMLInputElement;
  message: HTMLTextAreaElement;
  emails: HTMLInputElement;
  mobiles: HTMLInputElement;
  maxFiles: HTMLInputElement;
  maxFileMb: HTMLInputElement;
  maxTotalMb: HTMLInputElement;
  expires: HTMLInputElement;
  reusable: HTMLInputElement;
  d: HTMLInputElement;
}

/** The create body, or the field to fix and what to say. */
function bodyOf(i: Inputs): { body: Record<string, unknown> } | { bad: HTMLInputElement; text: string } {
  if (!i.title.value.trim()) return { bad: i.title, text: t('requestTitleNeeded') };
  const body: Record<string, unknown> = { title: i.title.value.trim(), reusable: i.reusable.checked };
  if (i.message.value.trim()) body['message'] = i.message.value.trim();
  if (i.emails.value.trim()) body['emails'] = list(i.emails.value);
  if (i.mobiles.value.trim()) body['mobiles'] = list(i.mobiles.value);
  if (i.d.value.trim()) body['d'] = i.d.value.trim();
  const numbers: [HTMLInputElement, string, number][] = [
    [i.maxFiles, 'maxFiles', 1],
    [i.maxFileMb, 'maxFileBytes', MB],
    [i.maxTotalMb, 'maxTotalBytes', MB],
  ];
  for (const [input, key, unit] of numbers) {
    if (!input.value) continue;
    const n = Number(input.value);
    if (!Number.isInteger(n) || n < 1) return { bad: input, text: t('requestWholeNumber') };
    body[key] = n * unit;
  }
  if (i.expires.value) {
    const expires = startOfDay(i.expires.value);
    if (Date.parse(expires) <= Date.now()) return { bad: i.expires, text: t('keyExpiryPast') };
    body['expires'] = expires;
  }
  return { body };
}

function inputs(): Inputs {
  return {
    title: h('input', {
      name: 'title',
      type: 'text',
      maxlength: TITLE_MAX,
      required: true,
      autocomplete: 'off',
    }),
    message: h('textarea', { name: 'message', rows: 3, maxlength: MESSAGE_MAX }),
    emails: h('input', { name: 'emails', type: 'text', inputmode: 'email', autocomplete: 'off' }),
    mobiles: h('input', { name: 'mobiles', type: 'text', inputmode: 'tel', autocomplete: 'off' }),
    maxFiles: numberInput('maxFiles'),
    maxFileMb: numberInput('maxFileMb'),
    maxTotalMb: numberInput('maxTotalMb'),
    expires: h('input', { name: 'expires', type: 'date' }),
    reusable: h('input', { name: 'reusable', type: 'checkbox' }),
    d: h('input', { name: 'd', type: 'text', autocapitalize: 'none', spellcheck: 'false', maxlength: 64 }),
  };
}

/** The form that makes a request; the request just made shows under it with its links. */
function requestForm(created: () => void): HTMLElement {
  const i = inputs();
  const status = h('div', { class: 'status-slot' });
  const result = h('div', {});
  const submit = h('button', { type: 'submit' }, t('createRequest'));
  const reusableHint = nextId('reusable-hint');
  i.reusable.setAttribute('aria-describedby', reusableHint);
  const send = async () => {
    const parsed = bodyOf(i);
    if ('bad' in parsed) {
      say(status, 'error', parsed.text);
      parsed.bad.focus();
      return;
    }
    submit.disabled = true;
    say(status, null);
    try {
      const { request } = await call<{ request: UploadRequest }>('/requests', {
        method: 'POST',
        auth: 'bearer',
        json: parsed.body,
      });
      form.reset();
      swap(
        result,
        notice('success', t('requestCreated', { title: request.title })),
        request.links.map(linkToShare),
      );
      result.querySelector('input')?.focus();
      created();
    } catch (err) {
      say(status, 'error', errorText(err));
    } finally {
      submit.disabled = false;
    }
  };
  const form = h(
    'form',
    {
      novalidate: true,
      onsubmit: (e) => {
        e.preventDefault();
        void send();
      },
    },
    field(t('requestTitle'), i.title),
    field(t('message'), i.message, t('requestMessageHint')),
    field(t('emails'), i.emails, t('requestEmailsHint')),
    field(t('mobiles'), i.mobiles, t('requestMobilesHint')),
    h(
      'div',
      { class: 'field-row' },
      field(t('requestMaxFiles'), i.maxFiles, t('requestOptional')),
      field(t('requestMaxFileMb'), i.maxFileMb, t('requestOptional')),
      field(t('requestMaxTotalMb'), i.maxTotalMb, t('requestOptional')),
    ),
    field(t('requestExpiry'), i.expires, t('requestExpiryHint')),
    h(
      'div',
      { class: 'field' },
      h('label', { class: 'check' }, i.reusable, t('requestReusable')),
      h('p', { class: 'hint', id: reusableHint }, t('requestReusableHint')),
    ),
    field(t('destination'), i.d, t('destinationHint')),
    status,
    h('div', { class: 'actions' }, submit),
  );
  const headingId = nextId('new-request');
  return h(
    'section',
    { class: 'card', 'aria-labelledby': headingId },
    h('h2', { id: headingId }, t('newRequest')),
    form,
    result,
  );
}

export function renderRequests(ctx: PageContext): void {
  const status = h('div', { class: 'status-slot' });
  const requests = requestList({
    status,
    showLinks: true,
    load: async () =>
      (await call<{ requests?: UploadRequest[] }>('/requests', { auth: 'bearer' })).requests ?? [],
    files: async (id) =>
      (
        await call<{ request: { files: ArrivedFile[] } }>(`/requests/${encodeURIComponent(id)}`, {
          auth: 'bearer',
        })
      ).request.files,
    close: (id) => call(`/requests/${encodeURIComponent(id)}/close`, { method: 'POST', auth: 'bearer' }),
  });
  const listHeading = nextId('requests');
  put(
    ctx.main,
    pageHeading(t('requestsTitle')),
    ctx.flash ? notice('info', ctx.flash) : null,
    h('p', {}, t('requestsIntro')),
    requestForm(requests.reload),
    h(
      'section',
      { 'aria-labelledby': listHeading },
      h('h2', { id: listHeading }, t('yourRequests')),
      status,
      requests.element,
    ),
  );
}
