// Persistence of download links (table `links`) beyond what a file's own transactions write with
// it (FileStore inserts, resolves and counts links together with their files): the PIN columns of
// secure links, and the recipient links of files. PIN writes are conditional where concurrent
// requests race, so only one of them wins (src/platform/security/pins.ts).

import { pinWrites } from '../../platform/security/pins.js';
import type { Db } from '../../platform/sql/database.js';
import type { LinkRow } from '../../platform/sql/schema.js';

export class LinkStore {
  /** The PIN writes (pins.ts), on this table. */
  readonly pinWrites;

  constructor(private readonly db: Db) {
    this.pinWrites = pinWrites(db, 'links');
  }

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

  /** Revokes a link; false when it already was. */
  async revoke(id: number): Promise<boolean> {
    const res = await this.db
      .updateTable('links')
      .set({ revoked: 1 })
      .where('id', '=', id)
      .where('revoked', '=', 0)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /** Sets recipient links' own expiry and download limit (undefined: unchanged, null: none). */
  async setLimits(
    ids: number[],
    limits: { expiresAt?: number | null; maxDownloads?: number | null },
  ): Promise<void> {
    if (ids.length === 0) return;
    const set: { expires_at?: number | null; max_downloads?: number | null } = {};
    if (limits.expiresAt !== undefined) set.expires_at = limits.expiresAt;
    if (limits.maxDownloads !== undefined) set.max_downloads = limits.maxDownloads;
    if (Object.keys(set).length === 0) return;
    await this.db
      .updateTable('links')
      .set(set)
      .where('id', 'in', ids)
      .where('kind', '=', 'recipient')
      .execute();
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
