// Persistence of user accounts.
import { type ExpressionBuilder, sql } from 'kysely';
import { compiledQuery, type Param } from '../../platform/sql/compiled.js';
import type { Db } from '../../platform/sql/database.js';
import { type LockKey, takeLock } from '../../platform/sql/locks.js';
import type { Dialect } from '../../platform/sql/migrations.js';
import type { Database, NewUser, UserRow, UserUpdate } from '../../platform/sql/schema.js';
import { inTransaction } from '../../platform/sql/transaction.js';
import type { Role } from './roles.js';

/** The advisory lock every change that could take away the last enabled admin runs under. */
const ADMINS_LOCK: LockKey = [0x52454d, 0x41444d]; // 'REM', 'ADM'

/** A search of the accounts (the admin API's list), in name order. */
export interface UserSearch {
  /** Part of the name or e-mail address, any case. */
  q?: string;
  role?: Role;
  enabled?: boolean;
  /** Signed-in locked or password-recovery locked at `now`. */
  locked?: boolean;
  firstAccess?: boolean;
  /** The name key (lower-cased name) the page starts after. */
  after?: string;
  limit: number;
}

/** `%` and `_` of a LIKE pattern taken literally (escape character `\`). */
const likeEscaped = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

export class UserStore {
  // Read on every authenticated request: compiled once.
  private readonly byNameQuery;
  private readonly byIdQuery;

  constructor(
    private readonly db: Db,
    private readonly dialect: Dialect,
  ) {
    this.byNameQuery = compiledQuery(db, (param: Param<{ nameKey: string }>) =>
      db.selectFrom('users').selectAll().where('name_key', '=', param('nameKey')),
    );
    this.byIdQuery = compiledQuery(db, (param: Param<{ id: number }>) =>
      db.selectFrom('users').selectAll().where('id', '=', param('id')),
    );
  }

  byName(name: string, db: Db = this.db): Promise<UserRow | undefined> {
    return this.byNameQuery.first({ nameKey: name.toLowerCase() }, db);
  }

  byId(id: number, db: Db = this.db): Promise<UserRow | undefined> {
    return this.byIdQuery.first({ id }, db);
  }

  /** The account bound to an identity provider's subject (single sign-on). */
  bySsoSubject(sub: string): Promise<UserRow | undefined> {
    return this.db.selectFrom('users').selectAll().where('sso_subject', '=', sub).executeTakeFirst();
  }

  /** Accounts with this e-mail address (any case); rare and rate-limited, so not compiled. */
  byEmail(email: string): Promise<UserRow[]> {
    return this.db
      .selectFrom('users')
      .selectAll()
      .where(sql<string>`lower(email)`, '=', email.toLowerCase())
      .orderBy('id')
      .execute();
  }

  async insert(user: NewUser): Promise<UserRow> {
    return this.db.insertInto('users').values(user).returningAll().executeTakeFirstOrThrow();
  }

  async update(id: number, patch: UserUpdate, db: Db = this.db): Promise<void> {
    await db.updateTable('users').set(patch).where('id', '=', id).execute();
  }

  /** Atomically counts a failed password check and returns the new count. */
  async countFailure(id: number): Promise<number> {
    const row = await this.db
      .updateTable('users')
      .set((eb) => ({ failed_logins: eb('failed_logins', '+', 1) }))
      .where('id', '=', id)
      .returning('failed_logins')
      .executeTakeFirst();
    return row?.failed_logins ?? 0;
  }

  /**
   * Atomically counts a wrong password-recovery PIN in the window that started with the first of
   * them (a window that is over starts again at 1); returns the new count and the locks so far.
   */
  async countRecoveryFailure(
    id: number,
    now: number,
    windowMs: number,
  ): Promise<{ failures: number; locks: number } | undefined> {
    const row = await this.db
      .updateTable('users')
      .set({
        recovery_failures: sql`case when recovery_window_end <= ${now} then 1 else recovery_failures + 1 end`,
        recovery_window_end: sql`case when recovery_window_end <= ${now} then ${now + windowMs} else recovery_window_end end`,
      })
      .where('id', '=', id)
      .returning(['recovery_failures', 'recovery_locks'])
      .executeTakeFirst();
    return row && { failures: Number(row.recovery_failures), locks: Number(row.recovery_locks) };
  }

  /**
   * Locks password recovery until `until` once `maxFailures` wrong PINs were counted; true for the
   * one caller of concurrent ones that locked it (it alone tells the owner).
   */
  async lockRecovery(id: number, now: number, until: number, maxFailures: number, db: Db = this.db) {
    const res = await db
      .updateTable('users')
      .set((eb) => ({
        recovery_locked_until: until,
        recovery_locks: eb('recovery_locks', '+', 1),
        recovery_failures: 0,
        recovery_window_end: 0,
      }))
      .where('id', '=', id)
      .where('recovery_locked_until', '<=', now)
      .where('recovery_failures', '>=', maxFailures)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  list(): Promise<UserRow[]> {
    return this.db.selectFrom('users').selectAll().orderBy('name_key').execute();
  }

  /** One page of a search, in name order (`limit` rows at most, from the name key after `after`). */
  search(filter: UserSearch, now: number): Promise<UserRow[]> {
    let q = this.db.selectFrom('users').selectAll();
    if (filter.q) {
      const pattern = `%${likeEscaped(filter.q.toLowerCase())}%`;
      q = q.where((eb) =>
        eb.or([
          eb(sql<string>`name_key`, 'like', sql<string>`${pattern} escape '\\'`),
          eb(sql<string>`lower(email)`, 'like', sql<string>`${pattern} escape '\\'`),
        ]),
      );
    }
    if (filter.role) q = q.where('role', '=', filter.role);
    if (filter.enabled !== undefined) q = q.where('enabled', '=', filter.enabled ? 1 : 0);
    if (filter.firstAccess !== undefined) q = q.where('first_access', '=', filter.firstAccess ? 1 : 0);
    if (filter.locked !== undefined) {
      const locked = (eb: ExpressionBuilder<Database, 'users'>) =>
        eb.or([eb('locked_until', '>', now), eb('recovery_locked_until', '>', now)]);
      q = filter.locked ? q.where(locked) : q.where((eb) => eb.not(locked(eb)));
    }
    if (filter.after !== undefined) q = q.where('name_key', '>', filter.after);
    return q.orderBy('name_key').limit(filter.limit).execute();
  }

  /**
   * Runs `fn` in a transaction holding the admins' lock: changes that could leave no enabled admin
   * (two admins demoting each other at once, on any instance) run one after the other, and the
   * second sees the first. SQLite runs one writer at a time anyway.
   */
  withAdminsLocked<T>(fn: (trx: Db) => Promise<T>): Promise<T> {
    return inTransaction(this.db, async (trx) => {
      await takeLock(trx, this.dialect, ADMINS_LOCK);
      return fn(trx);
    });
  }

  /** Enabled admins other than account `id`. */
  async otherEnabledAdmins(id: number, db: Db): Promise<number> {
    const row = await db
      .selectFrom('users')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('role', '=', 'admin')
      .where('enabled', '=', 1)
      .where('id', '<>', id)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /**
   * Records when accounts were last given a token (a group commit's sign-ins, together). One
   * statement per account in ascending id order: two batches committing at once on PostgreSQL
   * take the rows' locks in the same order, so they never wait on each other in a cycle.
   */
  async recordSignIns(trx: Db, signIns: { id: number; at: number }[]): Promise<void> {
    const latest = new Map<number, number>();
    for (const { id, at } of signIns) latest.set(id, Math.max(at, latest.get(id) ?? at));
    for (const id of [...latest.keys()].sort((a, b) => a - b))
      await trx
        .updateTable('users')
        .set({ last_sign_in_at: latest.get(id)! })
        .where('id', '=', id)
        .execute();
  }

  /**
   * Removes the account and, in the caller's transaction `trx`, takes everything in its area and
   * backup out of reach: the files become due for purging now (no link resolves a file outside an
   * area, so every owner and recipient link stops at once; the sweeper deletes the contents on its
   * next pass) and its unfinished uploads expire (the sweeper removes their bytes). Files it
   * uploaded into other users' areas are theirs and stay. Returns how many files are to be purged.
   */
  async remove(trx: Db, id: number, now: number): Promise<number> {
    await trx.deleteFrom('users').where('id', '=', id).execute();
    // Its API keys go with it: a later account may be given the same id.
    await trx.deleteFrom('api_keys').where('user_id', '=', id).execute();
    const files = await trx
      .updateTable('files')
      .set((eb) => ({
        state: 'backup',
        retired_at: eb.fn.coalesce('retired_at', eb.val(now)),
        purge_at: now,
      }))
      .where('owner_id', '=', id)
      .where('state', 'in', ['area', 'backup'])
      .executeTakeFirst();
    await trx
      .updateTable('uploads')
      .set({ expires_at: now - 1 })
      .where('uploader_id', '=', id)
      .where('file_id', 'is', null)
      .execute();
    return Number(files.numUpdatedRows);
  }
}
