// What the quotas keep (docs/quotas.md): each account's usage counter, changed in the transaction
// that adds or removes a file row, and the room held by uploads still arriving: reservations of
// POST /upload bodies of known length (a lease, renewed while the body arrives) and unfinished tus
// uploads (their own rows, until they finish or expire).
import { sql } from 'kysely';
import type { Db } from '../../../platform/sql/database.js';
import { takeLock } from '../../../platform/sql/locks.js';
import type { Dialect } from '../../../platform/sql/migrations.js';
import type { UserRow } from '../../../platform/sql/schema.js';
import { inTransaction } from '../../../platform/sql/transaction.js';
import { areaLock } from './inserts.js';

/** An account's figures as a change left them. */
export type UsageRow = Pick<
  UserRow,
  'id' | 'name' | 'email' | 'lang' | 'usage_bytes' | 'quota_bytes' | 'quota_warned'
>;

/** One account's counter beside the sum of its files' lengths (storage check). */
export interface UsageCount {
  user: string;
  counted: number;
  recomputed: number;
}

const USAGE_COLUMNS = ['id', 'name', 'email', 'lang', 'usage_bytes', 'quota_bytes', 'quota_warned'] as const;

export class FileUsage {
  constructor(
    private readonly db: Db,
    private readonly dialect: Dialect,
  ) {}

  /**
   * Runs `fn` in a transaction holding the account's row (PostgreSQL: FOR UPDATE; SQLite has one
   * writer), so the room it sees cannot change before `fn`'s writes commit; undefined: no account.
   */
  withAccount<T>(userId: number, fn: (trx: Db, row: UsageRow) => Promise<T>): Promise<T | undefined> {
    return inTransaction(this.db, async (trx) => {
      const row = await trx
        .selectFrom('users')
        .select(USAGE_COLUMNS)
        .where('id', '=', userId)
        .$if(this.dialect === 'postgres', (q) => q.forUpdate())
        .executeTakeFirst();
      return row ? fn(trx, row) : undefined;
    });
  }

  /** Bytes held by uploads still arriving into the account's area, but `except` (a reservation). */
  async reserved(db: Db, userId: number, now: number, except?: string): Promise<number> {
    const held = await db
      .selectFrom('quota_reservations')
      .select((eb) => eb.fn.sum<number | string>('bytes').as('n'))
      .where('user_id', '=', userId)
      .where('expires_at', '>', now)
      .$if(except !== undefined, (q) => q.where('id', '!=', except!))
      .executeTakeFirst();
    const tus = await db
      .selectFrom('uploads')
      .select((eb) => eb.fn.sum<number | string>('length').as('n'))
      .where('owner_id', '=', userId)
      .where('file_id', 'is', null)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return Number(held?.n ?? 0) + Number(tus?.n ?? 0);
  }

  async reserve(trx: Db, r: { id: string; userId: number; bytes: number; expiresAt: number }): Promise<void> {
    await trx
      .insertInto('quota_reservations')
      .values({ id: r.id, user_id: r.userId, bytes: r.bytes, expires_at: r.expiresAt })
      .execute();
  }

  /** A reservation's lease; false when it is gone (used or swept). */
  async renew(id: string, expiresAt: number): Promise<boolean> {
    const res = await this.db
      .updateTable('quota_reservations')
      .set({ expires_at: expiresAt })
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async release(id: string, db: Db = this.db): Promise<void> {
    await db.deleteFrom('quota_reservations').where('id', '=', id).execute();
  }

  /** Reservations whose lease ran out (their upload's instance died): they already hold nothing. */
  async prune(now: number): Promise<number> {
    const res = await this.db
      .deleteFrom('quota_reservations')
      .where('expires_at', '<=', now)
      .executeTakeFirst();
    return Number(res.numDeletedRows);
  }

  /** usage += bytes (negative: a file row went), in the caller's transaction; the row after. */
  async add(trx: Db, userId: number, bytes: number): Promise<UsageRow | undefined> {
    return trx
      .updateTable('users')
      .set((eb) => ({ usage_bytes: eb('usage_bytes', '+', bytes) }))
      .where('id', '=', userId)
      .returning(USAGE_COLUMNS)
      .executeTakeFirst();
  }

  async setWarned(trx: Db, userId: number, percent: number): Promise<void> {
    await trx.updateTable('users').set({ quota_warned: percent }).where('id', '=', userId).execute();
  }

  /** Every account's counter and the sum of its files' lengths, by name. */
  async counts(): Promise<UsageCount[]> {
    const rows = await this.db
      .selectFrom('users')
      .select((eb) => [
        'name',
        'usage_bytes',
        eb
          .selectFrom('files')
          .select(sql<number | string>`coalesce(sum(length), 0)`.as('s'))
          .whereRef('files.owner_id', '=', 'users.id')
          .as('recomputed'),
      ])
      .orderBy('name_key')
      .execute();
    return rows.map((r) => ({
      user: r.name,
      counted: Number(r.usage_bytes),
      recomputed: Number(r.recomputed ?? 0),
    }));
  }

  /**
   * Sets the account's counter to the sum of its files' lengths, under its area's lock: uploads and
   * deletions take it before they change the counter, so none lands between the sum and the write.
   */
  async recount(name: string): Promise<void> {
    await inTransaction(this.db, async (trx) => {
      const user = await trx.selectFrom('users').select('id').where('name', '=', name).executeTakeFirst();
      if (!user) return;
      await takeLock(trx, this.dialect, areaLock(user.id));
      await sql`update users set usage_bytes =
        (select coalesce(sum(length), 0) from files where files.owner_id = users.id)
        where id = ${user.id}`.execute(trx);
    });
  }
}
