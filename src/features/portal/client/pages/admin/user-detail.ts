// One account: GET {base}/admin/users/{name} (details and usage). An admin also changes its role,
// contact and language (PATCH), disables or enables it, unlocks it, sends a password reset, or
// removes it after a confirmation. Below, the account's API keys (user-keys.ts). An auditor sees
// the same page without the forms and buttons.

import { ApiError, errorText } from '../../api.js';
import { field, h, notice, put, say, swap } from '../../dom.js';
import { formatSize } from '../../format.js';
import { isLang, LANG_NAMES, type MessageKey, t } from '../../i18n.js';
import { confirmInSlot } from '../confirm.js';
import { accountOf, admin, type UserDetail } from './admin-api.js';
import { type AdminPage, canChange, carryNotice, pageTop } from './admin-page.js';
import { timeCell } from './ui.js';
import { langSelect, roleSelect } from './user-create.js';
import { userKeys } from './user-keys.js';
import { ROLE_LABEL, stateBadges } from './users.js';

interface Ctx {
  page: AdminPage;
  name: string;
  path: string;
  /** The live region every action reports in. */
  status: HTMLElement;
  /** Draws the account again, as the API now describes it. */
  redraw(u: UserDetail): void;
}

function details(u: UserDetail): HTMLElement {
  const row = (label: string, value: Node | string | (Node | string)[]) =>
    h('div', {}, h('dt', {}, label), h('dd', {}, value));
  const usage = u.usage;
  return h(
    'dl',
    { class: 'details' },
    row(t('email'), u.email ?? t('none')),
    row(t('mobile'), u.mobile ?? t('none')),
    row(t('language'), isLang(u.lang) ? LANG_NAMES[u.lang] : u.lang),
    row(t('role'), t(ROLE_LABEL[u.role] ?? 'roleUser')),
    row(t('state'), h('span', { class: 'badges' }, stateBadges(u))),
    row(t('created'), timeCell(u.created)),
    row(t('lastSignIn'), u.lastSignIn ? timeCell(u.lastSignIn) : t('never')),
    usage
      ? row(t('usage'), [
          t('usageArea', { files: usage.areaFiles, size: formatSize(usage.areaBytes) }),
          h('br'),
          t('usageBackup', { files: usage.backupFiles, size: formatSize(usage.backupBytes) }),
        ])
      : null,
  );
}

/**
 * Runs one change; reports it in the status line, or the refusal: a 409 is the last enabled admin,
 * or for a password reset an account that cannot get one (disabled, locked, no e-mail address).
 */
async function act(
  c: Ctx,
  button: HTMLButtonElement,
  run: () => Promise<string>,
  conflict: MessageKey = 'lastAdmin',
): Promise<void> {
  button.disabled = true;
  try {
    const done = await run();
    say(c.status, 'success', done);
  } catch (err) {
    say(c.status, 'error', err instanceof ApiError && err.status === 409 ? t(conflict) : errorText(err));
  } finally {
    button.disabled = false;
  }
  // The button may be gone (the account was drawn again): the words take the focus.
  const said = c.status.firstElementChild as HTMLElement | null;
  if (said) {
    said.tabIndex = -1;
    said.focus();
  }
}

/** PATCH the account, then draw what the API answers. */
async function patch(c: Ctx, body: Record<string, unknown>): Promise<void> {
  c.redraw(accountOf(await admin(c.path, { method: 'PATCH', json: body })));
}

function roleForm(c: Ctx, u: UserDetail): HTMLElement {
  const role = roleSelect(u.role);
  const save = h('button', { type: 'submit', class: 'secondary' }, t('save'));
  const submit = (e: Event) => {
    e.preventDefault();
    void act(c, save, async () => {
      await patch(c, { role: role.value });
      return t('roleSaved', { role: role.selectedOptions[0]?.textContent ?? role.value });
    });
  };
  return h(
    'form',
    { class: 'card', onsubmit: submit },
    h('h2', {}, t('changeRole')),
    field(t('role'), role),
    h('div', { class: 'actions' }, save),
  );
}

function contactForm(c: Ctx, u: UserDetail): HTMLElement {
  const email = h('input', {
    name: 'email',
    type: 'email',
    autocomplete: 'off',
    value: u.email ?? '',
    maxlength: 254,
  });
  const mobile = h('input', {
    name: 'mobile',
    type: 'tel',
    autocomplete: 'off',
    value: u.mobile ?? '',
    maxlength: 20,
  });
  const lang = langSelect(u.lang);
  const save = h('button', { type: 'submit', class: 'secondary' }, t('save'));
  const submit = (e: Event) => {
    e.preventDefault();
    void act(c, save, async () => {
      await patch(c, {
        email: email.value.trim() || null,
        mobile: mobile.value.trim() || null,
        lang: lang.value,
      });
      return t('saved');
    });
  };
  return h(
    'form',
    { class: 'card', novalidate: true, onsubmit: submit },
    h('h2', {}, t('contact')),
    field(t('email'), email),
    field(t('mobile'), mobile, t('mobileHint')),
    field(t('language'), lang),
    h('div', { class: 'actions' }, save),
  );
}

function removeConfirm(c: Ctx, slot: HTMLElement, removeButton: HTMLButtonElement): void {
  confirmInSlot(slot, {
    label: t('remove'),
    question: t('removeConfirm', { name: c.name }),
    yes: t('removeYes', { name: c.name }),
    status: c.status,
    back: removeButton,
    errorWords: (err) => (err instanceof ApiError && err.status === 409 ? t('lastAdmin') : errorText(err)),
    act: async () => {
      await admin(c.path, { method: 'DELETE' });
      carryNotice(t('removed', { name: c.name }));
      c.page.ctx.go('#/users');
    },
  });
}

function accountActions(c: Ctx, u: UserDetail): HTMLElement {
  const button = (label: string, extra = 'secondary') => h('button', { type: 'button', class: extra }, label);
  const toggle = button(t(u.enabled ? 'disable' : 'enable'));
  toggle.addEventListener('click', () =>
    act(c, toggle, async () => {
      c.redraw(accountOf(await admin(`${c.path}/${u.enabled ? 'disable' : 'enable'}`, { method: 'POST' })));
      return t(u.enabled ? 'disabledDone' : 'enabledDone');
    }),
  );
  const unlock = u.locked ? button(t('unlock')) : null;
  unlock?.addEventListener('click', () =>
    act(c, unlock, async () => {
      c.redraw(accountOf(await admin(`${c.path}/unlock`, { method: 'POST' })));
      return t('unlocked');
    }),
  );
  const reset = button(t('passwordReset'));
  reset.addEventListener('click', () =>
    act(
      c,
      reset,
      async () => {
        await admin(`${c.path}/password-reset`, { method: 'POST' });
        return t('resetSent');
      },
      'resetBlocked',
    ),
  );
  const remove = button(t('remove'), 'danger');
  const confirmSlot = h('div', {});
  remove.addEventListener('click', () => removeConfirm(c, confirmSlot, remove));
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'account-actions' },
    h('h2', { id: 'account-actions' }, t('accountActions')),
    h('div', { class: 'actions' }, toggle, unlock, reset, remove),
    confirmSlot,
  );
}

export function renderUser(page: AdminPage, name: string): void {
  const status = h('div', { class: 'status-slot' });
  const body = h('div', {}, h('p', { role: 'status' }, t('loading')));
  put(
    page.ctx.main,
    pageTop(page, t('userTitle', { name })),
    h('p', {}, h('a', { href: '#/users' }, t('backToUsers'))),
    status,
    body,
  );
  const c: Ctx = {
    page,
    name,
    path: `/users/${encodeURIComponent(name)}`,
    status,
    redraw: (u) =>
      swap(
        body,
        h('section', { class: 'card' }, details(u)),
        canChange(page)
          ? [h('div', { class: 'split' }, roleForm(c, u), contactForm(c, u)), accountActions(c, u)]
          : null,
        userKeys(page, u),
      ),
  };
  admin(c.path).then(
    (res) => c.redraw(accountOf(res)),
    (err: unknown) => swap(body, notice('error', errorText(err))),
  );
}
