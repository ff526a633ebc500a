// User accounts: creation, settings, passwords, enable/disable, removal.
// Every change that should end existing sessions bumps token_generation.

import type { Lang } from '../../app/config.js';
import type { Clock } from '../../platform/clock.js';
import { conflict, invalid, notFound } from '../../platform/errors.js';
import { isUniqueViolation } from '../../platform/sql/database.js';
import type { UserRow, UserUpdate } from '../../platform/sql/schema.js';
import type { AuditLog } from '../audit/audit-log.js';
import { hashPassword } from '../auth/passwords.js';
import type { UserStore } from './user-store.js';
import { isEmail, isLang, isUserName, normalizeMobile } from './validation.js';

/** A password set, or an account enabled by an administrator, lifts a password-recovery lock. */
const RECOVERY_UNLOCKED = {
  recovery_failures: 0,
  recovery_window_end: 0,
  recovery_locked_until: 0,
  recovery_locks: 0,
} satisfies UserUpdate;

export interface UserFields {
  email?: string | null;
  mobile?: string | null;
  lang?: string;
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
    return out;
  }

  async create(name: string, fields: UserFields, password: string | null): Promise<UserRow> {
    if (!isUserName(name)) throw invalid('user name must be 1-64 characters of A-Z a-z 0-9 . _ @ -');
    const clean = this.cleanFields(fields);
    if (password !== null) this.checkPasswordPolicy(password);
    const now = this.clock.now();
    try {
      const user = await this.store.insert({
        name,
        name_key: name.toLowerCase(),
        email: clean.email ?? null,
        mobile: clean.mobile ?? null,
        lang: clean.lang ?? this.opts.defaultLang,
        enabled: 1,
        first_access: password === null ? 1 : 0,
        password_hash: password === null ? null : await hashPassword(password),
        token_generation: 0,
        failed_logins: 0,
        locked_until: 0,
        created_at: now,
        updated_at: now,
      });
      await this.audit.record({ event: 'user.created', user: user.name, detail: 'cli' });
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

  list(): Promise<UserRow[]> {
    return this.store.list();
  }

  async update(name: string, fields: UserFields): Promise<UserRow> {
    const user = await this.get(name);
    await this.store.update(user.id, { ...this.cleanFields(fields), updated_at: this.clock.now() });
    await this.audit.record({
      event: 'user.updated',
      user: user.name,
      detail: Object.keys(fields).join(','),
    });
    return this.get(name);
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

  async setEnabled(name: string, enabled: boolean): Promise<void> {
    const user = await this.get(name);
    const patch: UserUpdate = { enabled: enabled ? 1 : 0, updated_at: this.clock.now() };
    if (!enabled) patch.token_generation = user.token_generation + 1;
    else Object.assign(patch, { failed_logins: 0, locked_until: 0, ...RECOVERY_UNLOCKED });
    await this.store.update(user.id, patch);
    await this.audit.record({
      event: enabled ? 'user.enabled' : 'user.disabled',
      user: user.name,
      detail: 'cli',
    });
  }

  /**
   * Removes the account; its tokens die with it (verification looks the user up by id), and so do
   * the links to every file in its area and backup, whose contents the sweeper then deletes
   * (UserStore.remove). Files it sent into other users' areas stay with them.
   */
  async remove(name: string): Promise<UserRow & { filesPurged: number }> {
    const user = await this.get(name);
    const filesPurged = await this.store.remove(user.id, this.clock.now());
    await this.audit.record({ event: 'user.removed', user: user.name, detail: { via: 'cli', filesPurged } });
    return { ...user, filesPurged };
  }
}
