// Users: GET {base}/admin/users (search by name or e-mail, role, state), paged; each name opens
// the account (user-detail.ts). Admins also get "New user" (user-create.ts).
import { h, put } from '../../dom.js';
import { type MessageKey, t } from '../../i18n.js';
import { admin, type Role, type UserSummary } from './admin-api.js';
import { type AdminPage, canChange, pageTop } from './admin-page.js';
import { badge, cursorList, dataTable, filterForm, formatTime, queryOf, timeCell } from './ui.js';

export const ROLE_LABEL: Record<Role, MessageKey> = {
  user: 'roleUser',
  auditor: 'roleAuditor',
  admin: 'roleAdmin',
};

/** The API's filters for the form's one "state" choice. */
const STATE_QUERY: Record<string, Record<string, string>> = {
  enabled: { enabled: 'true' },
  disabled: { enabled: 'false' },
  locked: { locked: 'true' },
  firstAccess: { firstAccess: 'true' },
};

export const userHref = (name: string) => `#/users/${encodeURIComponent(name)}`;

/** The words for an account's state: disabled, locked, awaiting first access, or enabled. */
export function stateBadges(u: UserSummary): HTMLElement[] {
  const out: HTMLElement[] = [];
  if (!u.enabled) out.push(badge(t('stateDisabled'), 'bad'));
  if (u.locked)
    out.push(
      badge(u.lockedUntil ? t('lockedUntil', { time: formatTime(u.lockedUntil) }) : t('stateLocked'), 'warn'),
    );
  if (u.firstAccess) out.push(badge(t('stateFirstAccess'), 'muted'));
  if (out.length === 0) out.push(badge(t('stateEnabled'), 'ok'));
  return out;
}

function usersTable(users: UserSummary[]): HTMLElement {
  return dataTable(
    t('usersTitle'),
    [
      { label: t('name'), cell: (u) => h('a', { href: userHref(u.name) }, u.name) },
      { label: t('email'), cell: (u) => u.email ?? t('none') },
      { label: t('role'), cell: (u) => t(ROLE_LABEL[u.role] ?? 'roleUser') },
      { label: t('state'), cell: (u) => h('span', { class: 'badges' }, stateBadges(u)) },
      { label: t('lastSignIn'), cell: (u) => (u.lastSignIn ? timeCell(u.lastSignIn) : t('never')) },
    ],
    users,
  );
}

export function renderUsers(page: AdminPage): void {
  const { params } = page;
  const form = filterForm(
    '/users',
    [
      { name: 'q', label: 'nameOrEmail', kind: 'text' },
      {
        name: 'role',
        label: 'role',
        kind: 'select',
        options: [
          ['user', 'roleUser'],
          ['auditor', 'roleAuditor'],
          ['admin', 'roleAdmin'],
        ],
      },
      {
        name: 'state',
        label: 'state',
        kind: 'select',
        options: [
          ['enabled', 'stateEnabled'],
          ['disabled', 'stateDisabled'],
          ['locked', 'stateLocked'],
          ['firstAccess', 'stateFirstAccess'],
        ],
      },
    ],
    params,
    page.ctx.go,
  );
  const query = { ...queryOf(params, ['q', 'role']), ...(STATE_QUERY[params.get('state') ?? ''] ?? {}) };
  const list = cursorList(async (cursor) => {
    const res = await admin<{ users?: UserSummary[]; next?: string | null }>('/users', {
      query: { ...query, cursor },
    });
    return { items: res.users ?? [], next: res.next ?? null };
  }, usersTable);
  put(
    page.ctx.main,
    pageTop(page, t('usersTitle')),
    canChange(page)
      ? h('p', { class: 'actions' }, h('a', { class: 'button', href: '#/users/new' }, t('newUser')))
      : null,
    form,
    h('section', { class: 'card', 'aria-label': t('usersTitle') }, list),
  );
}
