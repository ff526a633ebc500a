// Persistence of password-change links (table `change_tokens`): looked up by the
// SHA-256 of their token; consumed with a conditional UPDATE so one request wins.

import { type PinColumns, pinWrites } from '../../platform/security/pins.js';
import type { Db } from '../../platform/sql/database.js';
import type { ChangeTokenRow } from '../../platform/sql/schema.js';

export interface NewChangeToken extends PinColumns {
  userId: number;
  tokenHash: string;
  purpose: string;
  expiresAt: number;
  createdAt: number;
}

export class ChangeTokenStore {
  /** The PIN writes (pins.ts), on this table. */
  readonly pinWrites;

  constructor(private readonly db: Db) {
    this.pinWrites = pinWrites(db, 'change_tokens');
  }

  /** When the user's newest link created after `since` was created (undefined: none). */
  async newestSince(userId: number, since: number): Promise<number | undefined> {
    const row = await this.db
      .selectFrom('change_tokens')
      .select('created_at')
      .where('user_id', '=', userId)
      .where('created_at', '>', since)
      .orderBy('created_at', 'desc')
      .executeTakeFirst();
    return row?.created_at;
  }

  /** Inserts a link (in the caller's transaction, with its PIN message); returns its id. */
  async insert(trx: Db, t: NewChangeToken): Promise<number> {
    const row = await trx
      .insertInto('change_tokens')
      .values({
        user_id: t.userId,
        token_hash: t.tokenHash,
        purpose: t.purpose,
        pin_hash: t.pin_hash,
        pin_expires_at: t.pin_expires_at,
        pin_sent_at: t.pin_sent_at,
        pin_failures: 0,
        expires_at: t.expiresAt,
        used_at: null,
        created_at: t.createdAt,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return row.id;
  }

  byTokenHash(tokenHash: string): Promise<ChangeTokenRow | undefined> {
    return this.db
      .selectFrom('change_tokens')
      .selectAll()
      .where('token_hash', '=', tokenHash)
      .executeTakeFirst();
  }

  /** Marks a live link used; false when another request used it first or its PIN was guessed at. */
  async consume(id: number, now: number, maxFailures: number): Promise<boolean> {
    const res = await this.db
      .updateTable('change_tokens')
      .set({ used_at: now })
      .where('id', '=', id)
      .where('used_at', 'is', null)
      .where('pin_failures', '<', maxFailures)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /** Every open link of the user dies (after a password change). */
  async consumeAll(userId: number, now: number): Promise<void> {
    await this.db
      .updateTable('change_tokens')
      .set({ used_at: now })
      .where('user_id', '=', userId)
      .where('used_at', 'is', null)
      .execute();
  }
}
