// The admin API's answers as the console reads them (docs/admin.md). Every call goes with the
// session's bearer token; the API checks the role on each one.
import type {
  AuditEntryBody,
  OutboxMessageBody,
  RecipientBody,
  StatsBucketBody,
  TimelineEntryBody,
  TransferBody,
} from '../../../../admin/schemas-reports.js';
import type { UserDetailBody, UserSummaryBody } from '../../../../admin/schemas-users.js';
import { type CallOptions, call, type Envelope } from '../../api.js';

export type Role = 'user' | 'auditor' | 'admin';
export const ROLES: Role[] = ['user', 'auditor', 'admin'];

// The answers' shapes come from the schemas openapi.json is made of (type-only imports).
export type UserSummary = UserSummaryBody;
/** An account with its usage (the console also shows a summary where the usage is not read). */
export type UserDetail = UserSummary & { usage?: UserDetailBody['usage'] };
export type AuditEntry = AuditEntryBody;
/** (A $ref inside a schema types as unknown: `recipients` is named here.) */
export type Transfer = Omit<TransferBody, 'recipients'> & { recipients: RecipientBody[] };
export type TimelineEntry = TimelineEntryBody;
export type OutboxMessage = OutboxMessageBody;
export type StatsBucket = StatsBucketBody;

export interface Stats {
  bucket: 'hour' | 'day';
  from: string;
  to: string;
  series: StatsBucket[];
  totals: { users: number; files: number; bytes: number };
}

/** A call to {base}/admin/… as the signed-in account. */
export function admin<T extends object>(
  path: string,
  opts: Omit<CallOptions, 'auth'> = {},
): Promise<Envelope & T> {
  return call<T>(`/admin${path}`, { ...opts, auth: 'bearer' });
}

/**
 * The account an answer is about. The envelope's `user` names the acting account, so the API
 * puts the account itself under `account` (or `user` when that is an object).
 */
export function accountOf(res: { account?: unknown; user?: unknown }): UserDetail {
  const a = typeof res.account === 'object' && res.account ? res.account : res.user;
  return a as UserDetail;
}

/** The message of a retry answer (`message`, or the envelope's own fields). */
export function messageOf(res: { message?: unknown }): OutboxMessage | null {
  return typeof res.message === 'object' && res.message ? (res.message as OutboxMessage) : null;
}

/** The signed-in account's role, as the admin API reports it (a plain `user` gets 403). */
export async function myRole(name: string): Promise<Role> {
  const res = await admin<{ account?: unknown }>(`/users/${encodeURIComponent(name)}`);
  return accountOf(res).role;
}

/** An audit or timeline detail as one line of text. */
export function detailText(detail: unknown): string {
  if (detail === null || detail === undefined) return '';
  if (typeof detail === 'string') return detail;
  return Object.entries(detail as Record<string, unknown>)
    .map(([k, v]) => `${k}: ${typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v)}`)
    .join(', ');
}
