// A file's way through its life: area → backup (retire) → purging (claimPurge) → deleted. Every
// change is a conditional UPDATE whose affected row count says whether this caller won, so several
// instances can sweep at once.
import { sql } from 'kysely';
import type { Db } from '../../../platform/sql/database.js';
import { takeLock } from '../../../platform/sql/locks.js';
import type { Dialect } from '../../../platform/sql/migrations.js';
import type { FileRow } from '../../../platform/sql/schema.js';
import { inTransaction } from '../../../platform/sql/transaction.js';
import { areaLock } from './inserts.js';

export class FileClaims {
  constructor(
    private readonly db: Db,
    private readonly dialect: Dialect,
  ) {}

  /** area → backup; false when another caller already moved it. `db` may be a transaction. */
  async retire(fileId: number, now: number, purgeAt: number, db: Db = this.db): Promise<boolean> {
    const res = await db
      .updateTable('files')
      .set({ state: 'backup', retired_at: now, purge_at: purgeAt })
      .where('id', '=', fileId)
      .where('state', '=', 'area')
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  dueForRetirement(now: number, limit: number): Promise<FileRow[]> {
    return this.db
      .selectFrom('files')
      .selectAll()
      .where('state', '=', 'area')
      .where('expires_at', '<=', now)
      .orderBy('expires_at')
      .limit(limit)
      .execute();
  }

  /**
   * Backup files whose time is up, plus 'purging' ones a crashed sweeper left behind
   * (their purge_at is the claim time, so they are picked up again after `staleMs`).
   */
  dueForPurge(now: number, staleMs: number, limit: number): Promise<FileRow[]> {
    return this.db
      .selectFrom('files')
      .selectAll()
      .where((eb) =>
        eb.or([
          eb.and([eb('state', '=', 'backup'), eb('purge_at', '<=', now)]),
          eb.and([eb('state', '=', 'purging'), eb('purge_at', '<=', now - staleMs)]),
        ]),
      )
      .orderBy('purge_at')
      .limit(limit)
      .execute();
  }

  /**
   * Claims a file in the area or the backup for deletion now (its owner deleted it): no link opens
   * it from this moment; only one caller gets true. A crash before deleteFile leaves a 'purging'
   * row that the sweeper finishes.
   */
  async claimRemoval(fileId: number, now: number): Promise<boolean> {
    const res = await this.db
      .updateTable('files')
      .set({ state: 'purging', purge_at: now })
      .where('id', '=', fileId)
      .where('state', 'in', ['area', 'backup'])
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /** A file's link validity (area files only); false when it left the area. */
  async setExpiry(fileId: number, expiresAt: number): Promise<boolean> {
    const res = await this.db
      .updateTable('files')
      .set({ expires_at: expiresAt })
      .where('id', '=', fileId)
      .where('state', '=', 'area')
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /** Claims a file for purging; only one caller gets true. */
  async claimPurge(file: FileRow, now: number): Promise<boolean> {
    const res = await this.db
      .updateTable('files')
      .set({ state: 'purging', purge_at: now })
      .where('id', '=', file.id)
      .where('state', '=', file.state)
      .where('purge_at', '=', file.purge_at)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /**
   * Deletes a file claimed for purging at `claimedAt` (claimPurge), its links and contents; `before`
   * runs first in the same transaction (its audit row, whose webhook event reads the file). False,
   * with nothing written, when the claim is no longer this caller's: a sweeper stalled past
   * STALE_CLAIM_MS whose file another one took over.
   */
  deleteFile(fileId: number, claimedAt: number, before?: (trx: Db) => Promise<void>): Promise<boolean> {
    return inTransaction(this.db, async (trx) => {
      // The owner's usage changes below: first its area's lock, as an upload's commit takes it
      // before its rows (and the account's counter), so neither waits on the other in a cycle.
      const file = await trx
        .selectFrom('files')
        .select(['owner_id', 'length'])
        .where('id', '=', fileId)
        .executeTakeFirst();
      if (!file) return false;
      await takeLock(trx, this.dialect, areaLock(file.owner_id));
      // In id order, as a batch of download counts locks them (countDownloads): no deadlock.
      if (this.dialect === 'postgres')
        await sql`select id from links where file_id = ${fileId} order by id for update`.execute(trx);
      // Locked on PostgreSQL (SQLite has one writer): the claim cannot change before the commit.
      const held = await trx
        .selectFrom('files')
        .select('id')
        .where('id', '=', fileId)
        .where('state', '=', 'purging')
        .where('purge_at', '=', claimedAt)
        .$if(this.dialect === 'postgres', (q) => q.forUpdate())
        .executeTakeFirst();
      if (!held) return false;
      await before?.(trx);
      await trx.deleteFrom('links').where('file_id', '=', fileId).execute();
      await trx.deleteFrom('file_contents').where('file_id', '=', fileId).execute();
      await trx.deleteFrom('files').where('id', '=', fileId).execute();
      // Usage counts a file until its row goes (docs/quotas.md); a removed owner has no counter.
      await trx
        .updateTable('users')
        .set((eb) => ({ usage_bytes: eb('usage_bytes', '-', file.length) }))
        .where('id', '=', file.owner_id)
        .execute();
      return true;
    });
  }

  /** Files whose owner account was removed go to backup with an immediate purge. */
  async orphansToPurge(now: number): Promise<number> {
    const res = await this.db
      .updateTable('files')
      .set({ state: 'backup', retired_at: now, purge_at: now })
      .where('state', '=', 'area')
      .where((eb) =>
        eb.not(
          eb.exists(eb.selectFrom('users').select('users.id').whereRef('users.id', '=', 'files.owner_id')),
        ),
      )
      .executeTakeFirst();
    return Number(res.numUpdatedRows);
  }

  async setFingerprint(fileId: number, fingerprint: string): Promise<void> {
    await this.db
      .updateTable('files')
      .set({ blob_fingerprint: fingerprint })
      .where('id', '=', fileId)
      .execute();
  }
}
