// The admin API's accounts (docs/admin.md, "Users"): searches in name order with keyset paging,
// one account with what it holds, and every change through UserService, which audits it with the
// acting account and refuses to leave no enabled admin. New accounts without a password and
// password resets get the e-mails of first access and password recovery (RecoveryService).
// Knows nothing of HTTP.
import type { Clock } from '../../platform/clock.js';
import { conflict, invalid } from '../../platform/errors.js';
import type { UserRow } from '../../platform/sql/schema.js';
import type { AccountUsage, FileStore } from '../files/file-store.js';
import type { AccountQuota, Quotas } from '../files/quotas.js';
import type { RecoveryService } from '../recovery/recovery-service.js';
import type { Role } from '../users/roles.js';
import type { ChangedBy, UserFields, UserService } from '../users/user-service.js';

/** Accounts a page holds unless `limit` says otherwise, and the most it may say. */
export const PAGE_LIMITS = { default: 50, max: 500 } as const;

export interface AccountQuery {
  /** Part of the name or e-mail address, any case. */
  q?: string;
  role?: Role;
  enabled?: boolean;
  /** A sign-in lockout or a password-recovery lockout in force. */
  locked?: boolean;
  firstAccess?: boolean;
  limit?: number;
  /** The `next` of the previous page. */
  cursor?: string;
}

export interface AccountPage {
  accounts: UserRow[];
  /** The cursor of the next page; null on the last one. */
  next: string | null;
}

export interface NewAccount extends UserFields {
  name: string;
  /** Absent or null: the account starts in first access and is e-mailed its first-access link. */
  password?: string | null;
}

export interface UserAdminDeps {
  users: UserService;
  /** An account's usage counts the files of its area and backup. */
  files: FileStore;
  /** Its quota, largest file and usage counter (docs/quotas.md). */
  quotas: Quotas;
  recovery: RecoveryService;
  clock: Clock;
}

/** A page's cursor: the name key of its last account, base64url (opaque to clients). */
const cursorOf = (row: UserRow) => Buffer.from(row.name_key, 'utf8').toString('base64url');

function keyOf(cursor: string): string {
  const key = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!/^[a-z0-9._@-]{1,64}$/.test(key) || Buffer.from(key, 'utf8').toString('base64url') !== cursor)
    throw invalid('cursor: not the next of a previous page');
  return key;
}

export class UserAdminService {
  private readonly users: UserService;
  private readonly files: FileStore;
  private readonly quotas: Quotas;
  private readonly recovery: RecoveryService;
  private readonly clock: Clock;

  constructor(deps: UserAdminDeps) {
    ({
      users: this.users,
      files: this.files,
      quotas: this.quotas,
      recovery: this.recovery,
      clock: this.clock,
    } = deps);
  }

  /** Whether the account is locked out now (sign-in or password recovery), and until when. */
  lockedUntil(row: UserRow): number | null {
    const until = Math.max(Number(row.locked_until), Number(row.recovery_locked_until));
    return until > this.clock.now() ? until : null;
  }

  async list(query: AccountQuery): Promise<AccountPage> {
    const limit = query.limit ?? PAGE_LIMITS.default;
    if (!Number.isInteger(limit) || limit < 1 || limit > PAGE_LIMITS.max)
      throw invalid(`limit must be 1 to ${PAGE_LIMITS.max}`);
    const rows = await this.users.search({
      q: query.q,
      role: query.role,
      enabled: query.enabled,
      locked: query.locked,
      firstAccess: query.firstAccess,
      after: query.cursor === undefined ? undefined : keyOf(query.cursor),
      limit: limit + 1,
    });
    const accounts = rows.slice(0, limit);
    return { accounts, next: rows.length > limit ? cursorOf(accounts.at(-1)!) : null };
  }

  async get(name: string): Promise<{ account: UserRow; usage: AccountUsage & AccountQuota }> {
    const account = await this.users.get(name);
    const usage = await this.files.usage(account.id);
    return { account, usage: { ...usage, ...this.quotas.account(account) } };
  }

  /**
   * Creates an account. Without a password it starts in first access and is e-mailed at once what
   * GET /auth/firstaccess sends (a PIN and the link to set a password), so it needs an e-mail.
   */
  async create(input: NewAccount, by: ChangedBy): Promise<UserRow> {
    const password = input.password ?? null;
    if (password === null && !input.email)
      throw invalid(
        'email is required for an account without a password: its first-access e-mail goes there',
      );
    const { name, email, mobile, lang, role } = input;
    const account = await this.users.create(name, { email, mobile, lang, role }, password, by);
    if (password === null)
      await this.recovery.issueLink(account.name, 'firstaccess', by.remote ?? null, by.actor);
    return this.users.get(account.name);
  }

  update(name: string, fields: UserFields, by: ChangedBy): Promise<UserRow> {
    return this.users.update(name, fields, by);
  }

  setEnabled(name: string, enabled: boolean, by: ChangedBy): Promise<UserRow> {
    return this.users.setEnabled(name, enabled, by);
  }

  unlock(name: string, by: ChangedBy): Promise<UserRow> {
    return this.users.unlock(name, by);
  }

  /**
   * E-mails what /auth/forgetParameters sends (a PIN and a password-change link). An account that
   * cannot get one is a conflict the admin can resolve: disabled, no e-mail address, recovery locked.
   */
  async sendPasswordReset(name: string, by: ChangedBy): Promise<void> {
    const account = await this.users.get(name);
    if (!account.enabled) throw conflict('the account is disabled: enable it first');
    if (!account.email) throw conflict('the account has no e-mail address: set one first');
    if (Number(account.recovery_locked_until) > this.clock.now())
      throw conflict('password recovery is locked for the account: unlock it first');
    await this.recovery.issueLink(account.name, 'forget', by.remote ?? null, by.actor);
  }

  async remove(name: string, by: ChangedBy): Promise<string> {
    return (await this.users.remove(name, by)).name;
  }
}
