// The admin API's answers as the console reads them (docs/admin.md). Every call goes with the
// session's bearer token; the API checks the role on each one.
import { type CallOptions, call, type Envelope } from '../../api.js';

export type Role = 'user' | 'auditor' | 'admin';
export const ROLES: Role[] = ['user', 'auditor', 'admin'];

export interface UserSummary {
  name: string;
  email: string | null;
  mobile: string | null;
  lang: string;
  role: Role;
  enabled: boolean;
  locked: boolean;
  lockedUntil: string | null;
  firstAccess: boolean;
  created: string;
  lastSignIn: string | null;
}

export interface UserDetail extends UserSummary {
  usage?: { areaFiles: number; areaBytes: number; backupFiles: number; backupBytes: number };
}

export interface AuditEntry {
  id: number;
  time: string;
  event: string;
  user: string | null;
  actor: string | null;
  remote: string | null;
  fileId: number | null;
  detail: unknown;
}

export interface Transfer {
  id: number;
  name: string | null;
  size: number | null;
  sha256: string | null;
  state: 'area' | 'backup' | 'purged';
  owner: string | null;
  sender: string | null;
  created: string | null;
  expires: string | null;
  retired: string | null;
  purged: string | null;
  recipients: { address: string; channel: string; status: string; downloads: number }[];
  downloads: number;
}

export interface TimelineEntry {
  time: string;
  source: 'audit' | 'outbox';
  event: string;
  detail: unknown;
  user: string | null;
  remote: string | null;
  channel: string | null;
  status: string | null;
  attempts: number | null;
  lastError: string | null;
}

export interface OutboxMessage {
  id: number;
  channel: string;
  recipient: string;
  kind: string;
  status: 'pending' | 'sent' | 'failed' | 'logged';
  attempts: number;
  created: string;
  lastAttempt: string | null;
  nextAttempt: string | null;
  sent: string | null;
  lastError: string | null;
  fileId: number | null;
  user: string | null;
}

export interface StatsBucket {
  start: string;
  uploads: number;
  uploadBytes: number;
  downloads: number;
  downloadBytes: number;
  senders: number;
  recipients: number;
  failedSignIns: number;
  lockouts: number;
  notificationFailures: number;
}

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
