// The admin console at {portal}admin (docs/admin.md): hash routes #/ (dashboard), #/users,
// #/users/new, #/users/<name>, #/audit, #/transfers, #/transfers/<id>, #/outbox, #/requests. For admins and
// auditors: the role comes from the admin API itself, so a signed-in `user` gets a refusal with
// role="alert" and nothing else; an auditor gets every page without its change buttons.
import { ApiError, errorText } from '../../api.js';
import { h, notice, pageHeading, put } from '../../dom.js';
import { t } from '../../i18n.js';
import type { PageContext } from '../../page-context.js';
import { getSession } from '../../session.js';
import { renderSignIn } from '../sign-in.js';
import { myRole, type Role } from './admin-api.js';
import type { AdminPage } from './admin-page.js';
import { renderAudit } from './audit.js';
import { renderDashboard } from './dashboard.js';
import { renderOutbox } from './outbox.js';
import { renderRequests } from './requests.js';
import { renderTimeline } from './timeline.js';
import { renderTransfers } from './transfers.js';
import { renderUserCreate } from './user-create.js';
import { renderUser } from './user-detail.js';
import { renderUsers } from './users.js';

/** The route of the address: #/users/ana?x=1 → path ['users', 'ana'], params x=1. */
function parseRoute(): { path: string[]; params: URLSearchParams } {
  const hash = location.hash.replace(/^#/, '');
  const q = hash.indexOf('?');
  const pathPart = q >= 0 ? hash.slice(0, q) : hash;
  return {
    path: pathPart
      .split('/')
      .filter(Boolean)
      .map((p) => decodeURIComponent(p)),
    params: new URLSearchParams(q >= 0 ? hash.slice(q + 1) : ''),
  };
}

/** The sections of the console, for the header's navigation. */
export function adminSections(): [hash: string, label: string][] {
  return [
    ['#/', t('navDashboard')],
    ['#/users', t('navUsers')],
    ['#/audit', t('navAudit')],
    ['#/transfers', t('navTransfers')],
    ['#/outbox', t('navOutbox')],
    ['#/requests', t('navRequests')],
  ];
}

/** The section the address is in (for aria-current in the navigation). */
export function currentSection(): string {
  const first = parseRoute().path[0];
  return first ? `#/${first}` : '#/';
}

/** The role of the signed-in account, asked once per account and page load. */
let known: { user: string; role: Role } | null = null;

function dispatch(page: AdminPage): void {
  const [section, id] = page.path;
  if (!section) renderDashboard(page);
  else if (section === 'users' && id === 'new') renderUserCreate(page);
  else if (section === 'users' && id) renderUser(page, id);
  else if (section === 'users') renderUsers(page);
  else if (section === 'audit') renderAudit(page);
  else if (section === 'transfers' && id) renderTimeline(page, id);
  else if (section === 'transfers') renderTransfers(page);
  else if (section === 'outbox') renderOutbox(page);
  else if (section === 'requests') renderRequests(page);
  else put(page.ctx.main, pageHeading(t('adminNavLabel')), notice('error', t('notFound')));
}

/** A 403 (the account is a plain user) or another failure to learn the role: nothing else shows. */
function refuse(ctx: PageContext, err: unknown): void {
  const forbidden = err === 'forbidden' || (err instanceof ApiError && err.status === 403);
  const text = forbidden ? t('adminRefused', { user: getSession()?.user ?? '' }) : errorText(err);
  // role="alert" either way: the page has nothing else to offer.
  put(
    ctx.main,
    pageHeading(t('adminNavLabel')),
    h('p', { class: 'notice notice-error', role: 'alert' }, text),
  );
}

export function renderAdmin(ctx: PageContext): void {
  const session = getSession();
  if (!session) {
    renderSignIn(ctx);
    return;
  }
  const { path, params } = parseRoute();
  const start = (role: Role) => {
    if (role !== 'admin' && role !== 'auditor') {
      refuse(ctx, 'forbidden');
      return;
    }
    dispatch({ ctx, role, path, params });
  };
  if (known?.user === session.user) {
    start(known.role);
    return;
  }
  const loading = h('p', { role: 'status' }, t('loading'));
  put(ctx.main, loading);
  myRole(session.user).then(
    (role) => {
      known = { user: session.user, role };
      loading.remove();
      start(role);
    },
    (err: unknown) => {
      loading.remove();
      refuse(ctx, err);
    },
  );
}
