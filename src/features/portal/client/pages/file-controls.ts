// The sender's control over a file on My files (docs/portal.md, "Taking back what was sent"), with
// the file's owner link token as the credential, as delivery status: Delete (DELETE
// {base}/download/file?k=), Change expiry (PATCH {base}/download/link?k= {expires}), and per
// recipient Revoke link (POST {base}/download/revoke?k=&to=) and Link limits (PATCH
// {base}/download/link?k=&to= {expires, maxDownloads}). What cannot be undone is confirmed first;
// each confirmation or form opens in the file's panel, and the list is drawn again after a change.

import { call, errorText, type FileEntry, type RecipientStatus } from '../api.js';
import { field, h, say, swap } from '../dom.js';
import { formatDate } from '../format.js';
import { type MessageKey, t } from '../i18n.js';

/** The largest download limit the server takes (MAX_DOWNLOAD_LIMIT). */
const MAX_DOWNLOADS = 1_000_000;

export interface FileControls {
  file: FileEntry;
  /** The owner link's token: the credential of every change. */
  k: string;
  /** Where a confirmation or a form opens, under the file. */
  panel: HTMLElement;
  /** The file's live status line (errors). */
  status: HTMLElement;
  /** After a change: the list drawn again, with `message` at its top. */
  changed(message: string): void;
}

/** The owner token of a file entry's link. */
export const ownerToken = (f: FileEntry) => new URL(f.linkURL, location.href).searchParams.get('k') ?? '';

/** A recipient link's own state, when it has one: revoked, its expiry, its download limit. */
export function linkState(r: RecipientStatus, now = Date.now()): { text: string; ended: boolean }[] {
  if (r.revoked) return [{ text: t('stateRevoked'), ended: true }];
  const out: { text: string; ended: boolean }[] = [];
  if (r.expires !== null)
    out.push(
      r.expires <= now
        ? { text: t('stateLinkExpired'), ended: true }
        : { text: t('stateLinkUntil', { date: formatDate(r.expires) }), ended: false },
    );
  if (r.maxDownloads !== null) {
    const counts = { count: r.completeDownloads, max: r.maxDownloads };
    const reached = r.completeDownloads >= r.maxDownloads;
    out.push({ text: t(reached ? 'stateLimitReached' : 'stateDownloadsOf', counts), ended: reached });
  }
  return out;
}

const small = (label: string, aria: string, onclick: (e: Event) => void, tone = 'secondary') =>
  h('button', { type: 'button', class: `${tone} small`, 'aria-label': aria, onclick }, label);

/** Opens `content` in the panel and focuses `first` (Cancel returns focus to what opened it). */
function open(c: FileControls, content: HTMLElement, first: HTMLElement): void {
  say(c.status, null);
  swap(c.panel, content);
  first.focus();
}

function cancelButton(c: FileControls, opener: HTMLElement): HTMLButtonElement {
  return h(
    'button',
    {
      type: 'button',
      class: 'secondary',
      onclick: () => {
        swap(c.panel);
        opener.focus();
      },
    },
    t('cancel'),
  );
}

/** Runs `change`; on success the list is drawn again with its message, else the error is said. */
function run(c: FileControls, busy: HTMLButtonElement, change: () => Promise<string>): void {
  busy.disabled = true;
  change().then(c.changed, (err: unknown) => {
    busy.disabled = false;
    say(c.status, 'error', errorText(err));
  });
}

/** A confirmation of something that cannot be undone: the question, "… now" and Cancel. */
function confirmPanel(
  c: FileControls,
  opener: HTMLElement,
  question: string,
  yesLabel: MessageKey,
  change: () => Promise<string>,
): void {
  const yes = h('button', { type: 'button', class: 'danger' }, t(yesLabel));
  yes.addEventListener('click', () => run(c, yes, change));
  const box = h(
    'div',
    { class: 'confirm', role: 'group', 'aria-label': t(yesLabel) },
    h('p', {}, question),
    h('div', { class: 'actions' }, yes, cancelButton(c, opener)),
  );
  open(c, box, yes);
}

/** `YYYY-MM-DD` of `ms` in the viewer's zone (a date input's value). */
function localDate(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}`;
}

/** The end of the day `value` (YYYY-MM-DD) names in the viewer's zone, as ms; NaN if none. */
function endOfDay(value: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!m) return Number.NaN;
  return new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]), 23, 59, 59, 999).getTime();
}

function dateInput(name: string, value: number | null, required: boolean): HTMLInputElement {
  return h('input', {
    name,
    type: 'date',
    min: localDate(Date.now()),
    value: value === null ? '' : localDate(value),
    required,
  });
}

/** Marks `input` wrong with `message` in the status line, and focuses it. */
function wrong(c: FileControls, input: HTMLInputElement, message: MessageKey): undefined {
  input.setAttribute('aria-invalid', 'true');
  say(c.status, 'error', t(message));
  input.focus();
  return undefined;
}

/** A date input's end of day as ISO 8601; null when empty and allowed; undefined when wrong. */
function dateValue(c: FileControls, input: HTMLInputElement): string | null | undefined {
  input.removeAttribute('aria-invalid');
  if (!input.value && !input.required) return null;
  const at = endOfDay(input.value);
  if (!Number.isFinite(at) || at <= Date.now()) return wrong(c, input, 'errDateInFuture');
  return new Date(at).toISOString();
}

function limitValue(c: FileControls, input: HTMLInputElement): number | null | undefined {
  input.removeAttribute('aria-invalid');
  const v = input.value.trim();
  if (!v) return null;
  const n = /^\d{1,7}$/.test(v) ? Number(v) : Number.NaN;
  if (!(n >= 1 && n <= MAX_DOWNLOADS)) return wrong(c, input, 'errDownloadLimit');
  return n;
}

/** A small form in the panel: `fields`, Save and Cancel; `submit` checks them and saves. */
function formPanel(
  c: FileControls,
  opener: HTMLElement,
  heading: string,
  fields: HTMLElement[],
  first: HTMLElement,
  submit: (save: HTMLButtonElement) => void,
): void {
  const save = h('button', { type: 'submit' }, t('save'));
  const form = h(
    'form',
    { class: 'link-form', 'aria-label': heading, novalidate: true },
    h('p', { class: 'form-heading' }, heading),
    fields,
    h('div', { class: 'actions' }, save, cancelButton(c, opener)),
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    say(c.status, null);
    submit(save);
  });
  open(c, form, first);
}

const patch = (c: FileControls, json: object, to?: number) =>
  call('/download/link', {
    method: 'PATCH',
    query: { k: c.k, to: to === undefined ? undefined : String(to) },
    json,
  });

function expiryForm(c: FileControls, opener: HTMLElement): void {
  const input = dateInput('expires', c.file.expires, true);
  formPanel(
    c,
    opener,
    t('changeExpiryOf', { name: c.file.name }),
    [field(t('fileExpiryLabel'), input)],
    input,
    (save) => {
      const expires = dateValue(c, input);
      if (!expires) return;
      run(c, save, async () => {
        await patch(c, { expires });
        return t('expiryChanged', { name: c.file.name, date: formatDate(Date.parse(expires)) });
      });
    },
  );
}

function limitsForm(c: FileControls, r: RecipientStatus, opener: HTMLElement): void {
  const limit = h('input', {
    name: 'maxDownloads',
    type: 'text',
    inputmode: 'numeric',
    autocomplete: 'off',
    value: r.maxDownloads === null ? '' : String(r.maxDownloads),
  });
  const until = dateInput('expires', r.expires, false);
  const fields = [
    field(t('maxDownloadsLabel'), limit, t('maxDownloadsHint')),
    field(t('linkUntilLabel'), until, t('linkUntilHint')),
  ];
  formPanel(c, opener, t('linkLimitsOf', { address: r.address }), fields, limit, (save) => {
    const maxDownloads = limitValue(c, limit);
    if (maxDownloads === undefined) return;
    const expires = dateValue(c, until);
    if (expires === undefined) return;
    run(c, save, async () => {
      await patch(c, { maxDownloads, expires }, r.id);
      return t('linkChanged', { address: r.address });
    });
  });
}

/** Change expiry and Delete, for a file in the area. */
export function fileActions(c: FileControls): HTMLElement {
  const name = c.file.name;
  const expiry: HTMLButtonElement = small(t('changeExpiry'), t('changeExpiryOf', { name }), () =>
    expiryForm(c, expiry),
  );
  const remove: HTMLButtonElement = small(t('deleteFile'), t('deleteFileOf', { name }), () =>
    confirmPanel(c, remove, t('deleteFileConfirm', { name }), 'deleteNow', async () => {
      await call('/download/file', { method: 'DELETE', query: { k: c.k } });
      return t('fileDeleted', { name });
    }),
  );
  return h('div', { class: 'actions file-actions' }, expiry, remove);
}

/** Revoke link and Link limits for one recipient (none once the link is revoked). */
export function recipientActions(c: FileControls, r: RecipientStatus): HTMLElement[] {
  if (r.revoked) return [];
  const address = r.address;
  const revoke: HTMLButtonElement = small(t('revokeLink'), t('revokeLinkOf', { address }), () =>
    confirmPanel(c, revoke, t('revokeLinkConfirm', { address }), 'revokeNow', async () => {
      await call('/download/revoke', { method: 'POST', query: { k: c.k, to: String(r.id) } });
      return t('linkRevoked', { address });
    }),
  );
  const limits: HTMLButtonElement = small(t('linkLimits'), t('linkLimitsOf', { address }), () =>
    limitsForm(c, r, limits),
  );
  return [limits, revoke];
}
