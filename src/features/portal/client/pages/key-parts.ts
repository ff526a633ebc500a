// API keys on screen, shared by the portal's API-keys page (keys.ts) and an account's page in the
// admin console (admin/user-keys.ts): the list with each key's state and, where the viewer may,
// Revoke after a confirmation; the form that makes a key; the new key shown once, with Copy and
// an example of its use.

import { SCOPES, type Scope } from '../../../keys/api-keys.js';
import { type ApiKey, type CreatedApiKey, errorText } from '../api.js';
import { config } from '../config.js';
import { field, h, nextId, notice, say, swap } from '../dom.js';
import { type MessageKey, t } from '../i18n.js';
import { badge, type Column, dataTable, timeCell } from './admin/ui.js';
import { confirmInSlot } from './confirm.js';
import { copy } from './send-rows.js';

const SCOPE_LABEL: Record<Scope, MessageKey> = {
  upload: 'scopeUpload',
  download: 'scopeDownload',
  webhooks: 'scopeWebhooks',
  'admin-read': 'scopeAdminRead',
  admin: 'scopeAdmin',
};

/** The scopes an account of `role` can use; a role the page does not know gets every account's. */
export function scopesFor(role: unknown): Scope[] {
  if (role === 'admin') return [...SCOPES];
  if (role === 'auditor') return SCOPES.filter((s) => s !== 'admin');
  return ['upload', 'download', 'webhooks'];
}

type KeyState = 'active' | 'expired' | 'revoked';

function stateOf(k: ApiKey): KeyState {
  if (k.revoked) return 'revoked';
  return k.expires && Date.parse(k.expires) <= Date.now() ? 'expired' : 'active';
}

const STATE_BADGE: Record<KeyState, [MessageKey, 'ok' | 'muted' | 'bad']> = {
  active: ['keyActive', 'ok'],
  expired: ['keyExpired', 'muted'],
  revoked: ['keyRevoked', 'bad'],
};

/** Whose rights a key without scopes has: the viewer's own, or (in the console) its account's. */
export type Owner = 'self' | 'account';

function rightsText(k: ApiKey, owner: Owner): string {
  if (k.scopes === null) return t(owner === 'self' ? 'allRights' : 'allOwnerRights');
  return k.scopes.map((s) => t(SCOPE_LABEL[s])).join(', ');
}

export interface KeyListOptions {
  owner: Owner;
  load(): Promise<ApiKey[]>;
  /** Revokes a key; absent where the viewer may not. */
  revoke?: (id: string) => Promise<unknown>;
  /** The live region that reports a revocation. */
  status: HTMLElement;
}

function revokeConfirm(o: KeyListOptions, k: ApiKey, slot: HTMLElement, done: () => void): void {
  confirmInSlot(slot, {
    label: t('revoke'),
    question: t('revokeConfirm', { name: k.name }),
    yes: t('revokeYes', { name: k.name }),
    status: o.status,
    act: async () => {
      await o.revoke?.(k.id);
      swap(slot);
      say(o.status, 'success', t('keyRevokedDone', { name: k.name }));
      done();
    },
  });
}

/** The keys as a table (cards on a phone), loaded now and again by `reload()`. */
export function keyList(o: KeyListOptions): { element: HTMLElement; reload(): void } {
  const box = h('div', {}, h('p', { role: 'status' }, t('loading')));
  const confirmSlot = h('div', {});
  const revokeButton = (k: ApiKey): Node | string => {
    if (!o.revoke || stateOf(k) !== 'active') return '';
    return h(
      'button',
      {
        type: 'button',
        class: 'secondary small',
        'aria-label': t('revokeKey', { name: k.name }),
        onclick: () => revokeConfirm(o, k, confirmSlot, reload),
      },
      t('revoke'),
    );
  };
  const draw = (keys: ApiKey[]) => {
    const stateBadge = (k: ApiKey) => {
      const [words, tone] = STATE_BADGE[stateOf(k)];
      return badge(t(words), tone);
    };
    const columns: Column<ApiKey>[] = [
      { label: t('name'), cell: (k) => k.name, class: 'wide' },
      { label: t('keyRights'), cell: (k) => rightsText(k, o.owner) },
      { label: t('created'), cell: (k) => timeCell(k.created) },
      { label: t('keyExpires'), cell: (k) => (k.expires ? timeCell(k.expires) : t('never')) },
      { label: t('keyLastUsed'), cell: (k) => (k.lastUsed ? timeCell(k.lastUsed) : t('never')) },
      { label: t('state'), cell: stateBadge },
    ];
    if (o.revoke) columns.push({ label: t('actions'), cell: revokeButton });
    swap(box, keys.length ? dataTable(t('keysTitle'), columns, keys) : h('p', {}, t('noKeys')));
  };
  function reload(): void {
    o.load().then(draw, (err: unknown) => swap(box, notice('error', errorText(err))));
  }
  reload();
  return { element: h('div', { class: 'key-list' }, box, confirmSlot), reload };
}

/** A request of `key`'s kind as a curl command line, for the page to show once. */
function example(key: CreatedApiKey): string {
  const base = `${location.origin}${config.api}`;
  const auth = `curl -u '${key.user}:${key.key}'`;
  const scopes = key.scopes ?? ['upload'];
  if (scopes.includes('upload'))
    return `${auth} \\\n  -H 'Content-Type: application/octet-stream' \\\n  --data-binary @report.pdf \\\n  '${base}/upload?file=report.pdf'`;
  if (scopes.includes('download')) return `${auth} \\\n  '${base}/download/list?page=1'`;
  if (scopes.includes('webhooks')) return `${auth} \\\n  '${base}/webhooks'`;
  return `${auth} \\\n  '${base}/admin/users'`;
}

/** The new key, shown this once: read-only, with Copy, the warning and an example. */
function shownOnce(key: CreatedApiKey): HTMLElement {
  const input = h('input', {
    type: 'text',
    readonly: true,
    value: key.key,
    class: 'link',
    spellcheck: 'false',
    autocomplete: 'off',
  });
  const slot = h('div', { class: 'status-slot' });
  const copyButton = h('button', { type: 'button', class: 'secondary' }, t('copyKey'));
  copyButton.addEventListener('click', () =>
    copy(key.key, input, slot, { done: 'keyCopied', failed: 'keyCopyFailed' }),
  );
  return h(
    'div',
    { class: 'key-once' },
    notice('success', t('keyCreated', { name: key.name })),
    h('p', { class: 'notice notice-warning' }, t('keyShownOnce')),
    h('div', { class: 'link-row' }, field(t('keyFor', { name: key.name }), input), copyButton, slot),
    h('p', {}, t('keyExample')),
    h('pre', { class: 'example' }, h('code', {}, example(key))),
  );
}

/** `YYYY-MM-DD` of the day after today, in the viewer's zone (the date input's minimum). */
function tomorrow(): string {
  const d = new Date();
  d.setDate(d.getDate() + 1);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}`;
}

/** The start of a date input's day in the viewer's zone, as an ISO instant. */
function startOfDay(value: string): string {
  const [y, m, d] = value.split('-').map(Number);
  return new Date(y ?? 0, (m ?? 1) - 1, d ?? 1).toISOString();
}

export interface NewKeyBody {
  name: string;
  expires?: string;
  scopes?: Scope[];
}

export interface KeyFormOptions {
  owner: Owner;
  heading: string;
  /** The scopes offered (none checked: the owner's rights). */
  scopes: Scope[];
  create(body: NewKeyBody): Promise<CreatedApiKey>;
  /** After a key was made (the list shows it). */
  created(): void;
}

/** The form that makes a key, and under it the key just made. */
export function keyForm(o: KeyFormOptions): HTMLElement {
  const name = h('input', {
    name: 'name',
    type: 'text',
    maxlength: 100,
    autocomplete: 'off',
    required: true,
  });
  const expiry = h('input', { name: 'expires', type: 'date', min: tomorrow() });
  const hintId = nextId('rights');
  const boxes = o.scopes.map((s) => ({
    s,
    input: h('input', { type: 'checkbox', name: 'scopes', value: s }),
  }));
  const rights = h(
    'fieldset',
    { class: 'rights', 'aria-describedby': hintId },
    h('legend', {}, t('keyRights')),
    h('p', { class: 'hint', id: hintId }, t(o.owner === 'self' ? 'keyRightsHint' : 'keyRightsHintOwner')),
    boxes.map(({ s, input }) => h('label', { class: 'check' }, input, `${t(SCOPE_LABEL[s])} (${s})`)),
  );
  const status = h('div', { class: 'status-slot' });
  const result = h('div', {});
  const submit = h('button', { type: 'submit' }, t('createKey'));
  const send = async () => {
    if (!name.value.trim()) return fail(name, t('keyNameNeeded'));
    const expires = expiry.value ? startOfDay(expiry.value) : undefined;
    if (expires && Date.parse(expires) <= Date.now()) return fail(expiry, t('keyExpiryPast'));
    const scopes = boxes.filter((b) => b.input.checked).map((b) => b.s);
    submit.disabled = true;
    say(status, null);
    try {
      const key = await o.create({
        name: name.value.trim(),
        ...(expires ? { expires } : {}),
        ...(scopes.length ? { scopes } : {}),
      });
      form.reset();
      swap(result, shownOnce(key));
      result.querySelector('input')?.focus();
      o.created();
    } catch (err) {
      say(status, 'error', errorText(err));
    } finally {
      submit.disabled = false;
    }
  };
  const fail = (input: HTMLInputElement, text: string) => {
    say(status, 'error', text);
    input.focus();
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
    field(t('name'), name, t('keyNameHint')),
    field(t('keyExpiry'), expiry, t('keyExpiryHint')),
    rights,
    status,
    h('div', { class: 'actions' }, submit),
  );
  const headingId = nextId('new-key');
  return h(
    'section',
    { class: 'card', 'aria-labelledby': headingId },
    h('h2', { id: headingId }, o.heading),
    form,
    result,
  );
}
