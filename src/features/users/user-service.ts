// User accounts: creation, settings, roles, passwords, enable/disable, unlock, removal.
// Every change that should end existing sessions bumps token_generation. A change that would
// leave no enabled admin is refused (the last admin cannot be removed, demoted or disabled).

import type { Lang } from '../../app/config.js';
import type { Clock } from '../../platform/clock.js';
import { conflict, invalid, notFound } from '../../platform/errors.js';
import { isUniqueViolation } from '../../platform/sql/database.js';
import type { UserRow, UserUpdate } from '../../platform/sql/schema.js';
import type { AuditEntry, AuditLog } from '../audit/audit-log.js';
import { hashPassword } from '../auth/passwords.js';
import { isRole, ROLES, type Role, roleOf } from './roles.js';
import type { UserSearch, UserStore } from './user-store.js';
import { isEmail, isLang, isUserName, normalizeMobile, parseAccountSize } from './validation.js';

export type { UserSearch } from './user-store.js';

/** A password set, or an account enabled or unlocked by an administrator, lifts a password-recovery lock. */
const RECOVERY_UNLOCKED = {
  recovery_failures: 0,
  recovery_window_end: 0,
  recovery_locked_until: 0,
  recovery_locks: 0,
} satisfies UserUpdate;

export const LAST_ADMIN = 'the last enabled admin cannot be removed, demoted or disabled';

export interface UserFields {
  email?: string | null;
  mobile?: string | null;
  lang?: string;
  role?: string;
  /** Single sign-on: the provider's subject the new account is bound to (create only). */
  ssoSubject?: string;
  /** Bytes the account may hold (docs/quotas.md): a size, or null / "default" for REMESSA_QUOTA_DEFAULT. */
  quota?: string | null;
  /** Its largest file: a size, or null / "default" for REMESSA_MAX_FILE_SIZE. */
  maxFileSize?: string | null;
}

/**
 * Who makes a change: the operator's command line, an admin account over the admin API, or the
 * identity provider at a single sign-on (its role claim is authoritative, even over the last
 * admin: docs/decisions.md).
 */
export interface ChangedBy {
  via: 'cli' | 'admin' | 'self' | 'sso';
  /** The acting account (audit rows' actor). */
  actor?: string;
  remote?: string | null;
}

export const BY_CLI: ChangedBy = { via: 'cli' };

/** The audit row of a change to `user` made `by` someone. */
const entryBy = (by: ChangedBy, event: AuditEntry['event'], user: string, detail: AuditEntry['detail']) =>
  ({ event, user, actor: by.actor ?? null, remote: by.remote ?? null, detail }) satisfies AuditEntry;

/** Whether `patch` (or a removal) takes away an enabled admin's role or access. */
function losesAdmin(row: UserRow, patch: UserUpdate | 'removal'): boolean {
  if (roleOf(row) !== 'admin' || !row.enabled) return false;
  if (patch === 'removal') return true;
  return (patch.role !== undefined && patch.role !== 'admin') || patch.enabled === 0;
}

export class UserService {
  constructor(
    private readonly store: UserStore,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
    private readonly opts: { defaultLang: Lang; passwordMinLength: number },
  ) {}

  checkPasswordPolicy(password: string): void {
    if (password.length < this.opts.passwordMinLength) {
      throw invalid(`password must have at least ${this.opts.passwordMinLength} characters`);
    }
    if (password.length > 1024) throw invalid('password is too long');
  }

  private cleanFields(fields: UserFields): UserUpdate {
    const out: UserUpdate = {};
    if (fields.email !== undefined) {
      if (fields.email !== null && fields.email !== '' && !isEmail(fields.email)) {
        throw invalid(`invalid e-mail address "${fields.email}"`);
      }
      out.email = fields.email || null;
    }
    if (fields.mobile !== undefined) {
      if (fields.mobile === null || fields.mobile === '') out.mobile = null;
      else {
        const m = normalizeMobile(fields.mobile);
        if (!m) throw invalid(`invalid mobile number "${fields.mobile}"`);
        out.mobile = m;
      }
    }
    if (fields.lang !== undefined) {
      if (!isLang(fields.lang)) throw invalid(`language must be pt, en or es, got "${fields.lang}"`);
      out.lang = fields.lang;
    }
    if (fields.role !== undefined) out.role = checkRole(fields.role);
    if (fields.quota !== undefined) out.quota_bytes = parseAccountSize('quota', fields.quota, 0);
    if (fields.maxFileSize !== undefined)
      out.max_file_bytes = parseAccountSize('maxFileSize', fields.maxFileSize, 1);
    return out;
  }

  async create(
    name: string,
    fields: UserFields,
    password: string | null,
    by: ChangedBy = BY_CLI,
  ): Promise<UserRow> {
    if (!isUserName(name)) throw invalid('user name must be 1-64 characters of A-Z a-z 0-9 . _ @ -');
    const clean = this.cleanFields(fields);
    if (password !== null) this.checkPasswordPolicy(password);
    const now = this.clock.now();
    const role = (clean.role ?? 'user') as Role;
    try {
      const user = await this.store.insert({
        name,
        name_key: name.toLowerCase(),
        email: clean.email ?? null,
        mobile: clean.mobile ?? null,
        lang: clean.lang ?? this.opts.defaultLang,
        role,
        enabled: 1,
        first_access: password === null ? 1 : 0,
        password_hash: password === null ? null : await hashPassword(password),
        token_generation: 0,
        last_sign_in_at: null,
        failed_logins: 0,
        locked_until: 0,
        created_at: now,
        updated_at: now,
        sso_subject: fields.ssoSubject ?? null,
      });
      const detail = role === 'user' ? by.via : `${by.via}; role=${role}`;
      await this.audit.record(entryBy(by, 'user.created', user.name, detail));
      return user;
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`user "${name}" already exists`);
      throw err;
    }
  }

  async get(name: string): Promise<UserRow> {
    const user = await this.store.byName(name);
    if (!user) throw notFound(`no user "${name}"`);
    return user;
  }

  find(name: string): Promise<UserRow | undefined> {
    return this.store.byName(name);
  }

  byEmail(email: string): Promise<UserRow[]> {
    return this.store.byEmail(email);
  }

  byId(id: number): Promise<UserRow | undefined> {
    return this.store.byId(id);
  }

  /** The account bound to an identity provider's subject (single sign-on), if any. */
  bySsoSubject(sub: string): Promise<UserRow | undefined> {
    return this.store.bySsoSubject(sub);
  }

  /**
   * Binds an account that has no subject yet to `sub` (its first single sign-on); refuses one
   * bound to another subject, and a subject that already has an account (the unique index).
   */
  async bindSsoSubject(name: string, sub: string, by: ChangedBy): Promise<UserRow> {
    try {
      return await this.change(
        name,
        (row) => {
          if (row.sso_subject !== null && row.sso_subject !== sub)
            throw conflict(`user "${row.name}" signs in as another person`);
          return { sso_subject: sub };
        },
        (row) => entryBy(by, 'user.updated', row.name, `sso_subject; ${by.via}`),
      );
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict('this person already has another account');
      throw err;
    }
  }

  list(): Promise<UserRow[]> {
    return this.store.list();
  }

  /** One page of accounts matching `filter`, in name order. */
  search(filter: UserSearch): Promise<UserRow[]> {
    return this.store.search(filter, this.clock.now());
  }

  /**
   * Writes `patch(row)` to the account and its audit row in one transaction, under the admins'
   * lock, against the row as it is then; refuses (conflict) a change that would leave no enabled
   * admin. Returns the account as written.
   */
  private async change(
    name: string,
    patch: (row: UserRow) => UserUpdate,
    entry: (row: UserRow) => AuditEntry,
    keepLastAdmin = true,
  ): Promise<UserRow> {
    const { id } = await this.get(name);
    await this.store.withAdminsLocked(async (trx) => {
      const row = await this.store.byId(id, trx);
      if (!row) throw notFound(`no user "${name}"`);
      const update = { ...patch(row), updated_at: this.clock.now() };
      if (
        keepLastAdmin &&
        losesAdmin(row, update) &&
        (await this.store.otherEnabledAdmins(row.id, trx)) === 0
      )
        throw conflict(LAST_ADMIN);
      await this.store.update(row.id, update, trx);
      await this.audit.record(entry(row), trx);
    });
    return this.get(name);
  }

  async update(name: string, fields: UserFields, by: ChangedBy = BY_CLI): Promise<UserRow> {
    const clean = this.cleanFields(fields);
    const changed = Object.keys(fields).map((k) => (k === 'role' ? `role=${clean.role}` : k));
    // The identity provider's word on a role stands even for the last admin (docs/decisions.md).
    const sso = by.via === 'sso';
    return this.change(
      name,
      () => clean,
      (row) => entryBy(by, 'user.updated', row.name, `${changed.join(',')}${sso ? '; sso' : ''}`),
      !sso,
    );
  }

  /** Sets a new password, leaves first-access state, clears lockout and revokes earlier tokens. */
  async setPassword(
    user: UserRow,
    password: string,
    via: string,
    remote: string | null = null,
  ): Promise<void> {
    this.checkPasswordPolicy(password);
    await this.store.update(user.id, {
      password_hash: await hashPassword(password),
      first_access: 0,
      failed_logins: 0,
      locked_until: 0,
      ...RECOVERY_UNLOCKED,
      token_generation: user.token_generation + 1,
      updated_at: this.clock.now(),
    });
    await this.audit.record({ event: 'password.changed', user: user.name, remote, detail: via });
  }

  /** Disabling ends the account's sessions; enabling clears a sign-in lock and a recovery lock. */
  async setEnabled(name: string, enabled: boolean, by: ChangedBy = BY_CLI): Promise<UserRow> {
    return this.change(
      name,
      (row) =>
        enabled
          ? { enabled: 1, failed_logins: 0, locked_until: 0, ...RECOVERY_UNLOCKED }
          : { enabled: 0, token_generation: row.token_generation + 1 },
      (row) => entryBy(by, enabled ? 'user.enabled' : 'user.disabled', row.name, by.via),
    );
  }

  /** Ends a sign-in lockout and a password-recovery lockout. */
  async unlock(name: string, by: ChangedBy = BY_CLI): Promise<UserRow> {
    return this.change(
      name,
      () => ({ failed_logins: 0, locked_until: 0, ...RECOVERY_UNLOCKED }),
      (row) => entryBy(by, 'user.unlocked', row.name, by.via),
    );
  }

  /**
   * Removes the account; its tokens die with it (verification looks the user up by id), and so do
   * the links to every file in its area and backup, whose contents the sweeper then deletes
   * (UserStore.remove). Files it sent into other users' areas stay with them.
   */
  async remove(name: string, by: ChangedBy = BY_CLI): Promise<UserRow & { filesPurged: number }> {
    const { id } = await this.get(name);
    return this.store.withAdminsLocked(async (trx) => {
      const user = await this.store.byId(id, trx);
      if (!user) throw notFound(`no user "${name}"`);
      if (losesAdmin(user, 'removal') && (await this.store.otherEnabledAdmins(user.id, trx)) === 0)
        throw conflict(LAST_ADMIN);
      const filesPurged = await this.store.remove(trx, user.id, this.clock.now());
      await this.audit.record(entryBy(by, 'user.removed', user.name, { via: by.via, filesPurged }), trx);
      return { ...user, filesPurged };
    });
  }
}

/** A role named on the command line or in the API, or a refusal naming the roles there are. */
export function checkRole(value: string): Role {
  if (!isRole(value)) throw invalid(`role must be ${ROLES.join(', ')}, got "${value}"`);
  return value;
}
