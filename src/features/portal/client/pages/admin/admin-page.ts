// What every page of the admin console gets from the router (console.ts), and its top.
import { h, notice, pageHeading } from '../../dom.js';
import { t } from '../../i18n.js';
import type { PageContext } from '../../page-context.js';
import type { Role } from './admin-api.js';

export interface AdminPage {
  ctx: PageContext;
  /** The viewer's role: an auditor reads only. */
  role: Role;
  /** The path of the hash route, split: #/users/ana → ['users', 'ana']. */
  path: string[];
  /** The hash route's query (the filters of a search). */
  params: URLSearchParams;
}

/** Only an admin changes anything; an auditor's pages have no change buttons. */
export const canChange = (page: AdminPage) => page.role === 'admin';

/** What the next page says first (after a change that moved elsewhere: "User ana created"). */
let carried: string | null = null;

/** Shows `text` at the top of the next admin page drawn. */
export function carryNotice(text: string): void {
  carried = text;
}

/** The page's h1, for an auditor the reminder that the console reads only, and a carried notice. */
export function pageTop(page: AdminPage, title: string): HTMLElement[] {
  const top: HTMLElement[] = [pageHeading(title)];
  if (!canChange(page)) top.push(h('p', { class: 'notice read-only' }, t('adminReadOnly')));
  if (carried) top.push(notice('success', carried));
  carried = null;
  return top;
}
