// Persistence of download links (table `links`) beyond what a file's own transactions write with
// it (FileStore inserts, resolves and counts links together with their files): the PIN columns of
// secure links, and the recipient links of files. PIN writes are conditional where concurrent
// requests race, so only one of them wins (src/security/pins.ts).
import type { Db } from '../db/database.js';
import type { LinkRow } from '../db/schema.js';
import type { PinColumns } from '../security/pins.js';

export class LinkStore {
  constructor(private readonly db: Db) {}

  byId(id: number, db: Db = this.db): Promise<LinkRow | undefined> {
    return db.selectFrom('links').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** The recipient links of some files, oldest first. */
  recipientLinks(fileIds: number[], db: Db = this.db): Promise<LinkRow[]> {
    if (fileIds.length === 0) return Promise.resolve([]);
    return db
      .selectFrom('links')
      .selectAll()
      .where('file_id', 'in', fileIds)
      .where('kind', '=', 'recipient')
      .orderBy('id')
      .execute();
  }

  /** Stores a new PIN unless another request stored one since `sentAt` was read. */
  async claimPinSend(trx: Db, id: number, sentAt: number | null, columns: PinColumns): Promise<boolean> {
    const res = await trx
      .updateTable('links')
      .set(columns)
      .where('id', '=', id)
      .where((eb) => (sentAt === null ? eb('pin_sent_at', 'is', null) : eb('pin_sent_at', '=', sentAt)))
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /** Counts one wrong PIN; the new count (undefined: the link is gone). */
  async countPinFailure(id: number): Promise<number | undefined> {
    const row = await this.db
      .updateTable('links')
      .set((eb) => ({ pin_failures: eb('pin_failures', '+', 1) }))
      .where('id', '=', id)
      .returning('pin_failures')
      .executeTakeFirst();
    return row?.pin_failures;
  }

  async clearPinFailures(id: number): Promise<void> {
    await this.db.updateTable('links').set({ pin_failures: 0 }).where('id', '=', id).execute();
  }

  /**
   * Locks a link that reached `maxFailures` until `until`, and kills its PIN (guessing cannot
   * simply resume when the lock ends). True for the one caller of concurrent ones that locked it.
   */
  async lockAfterPinFailures(id: number, until: number, maxFailures: number): Promise<boolean> {
    const res = await this.db
      .updateTable('links')
      .set({ locked_until: until, pin_failures: 0, pin_hash: null })
      .where('id', '=', id)
      .where('pin_failures', '>=', maxFailures)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }
}
