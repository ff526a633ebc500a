// Persistence of user accounts.
import { sql } from 'kysely';
import { compiledQuery, type Param } from '../../platform/sql/compiled.js';
import type { Db } from '../../platform/sql/database.js';
import type { NewUser, UserRow, UserUpdate } from '../../platform/sql/schema.js';
import { inTransaction } from '../../platform/sql/transaction.js';

export class UserStore {
  // Read on every authenticated request: compiled once.
  private readonly byNameQuery;
  private readonly byIdQuery;

  constructor(private readonly db: Db) {
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

  /**
   * Removes the account and, in the same transaction, takes everything in its area and backup out
   * of reach: the files become due for purging now (no link resolves a file outside an area, so
   * every owner and recipient link stops at once; the sweeper deletes the contents on its next
   * pass) and its unfinished uploads expire (the sweeper removes their bytes). Files it uploaded
   * into other users' areas are theirs and stay. Returns how many files are to be purged.
   */
  async remove(id: number, now: number): Promise<number> {
    return inTransaction(this.db, async (trx) => {
      await trx.deleteFrom('users').where('id', '=', id).execute();
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
    });
  }
}
