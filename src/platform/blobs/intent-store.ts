// Persistence of write intents (table blob_intents): one row per blob being written. See
// blob-writer.ts for the protocol and reconciler.ts for what happens to the rows a crash leaves.
import type { Db } from '../sql/database.js';
import type { GroupCommit } from '../sql/group-commit.js';
import type { BlobIntentRow } from '../sql/schema.js';

export class IntentStore {
  constructor(
    private readonly db: Db,
    /** When given, intents are added in group commits (src/platform/sql/group-commit.ts). */
    private readonly commits?: GroupCommit,
  ) {}

  /**
   * Committed (durable, through the group commit when there is one) before the first byte of the
   * blob is written; or, inside the transaction `trx` that drops their rows, for blobs about to be
   * deleted (finished or abandoned tus uploads' chunks).
   */
  async add(key: string | string[], writer: string, now: number, trx?: Db): Promise<void> {
    const keys = Array.isArray(key) ? key : [key];
    if (keys.length === 0) return;
    const insert = (db: Db) =>
      db
        .insertInto('blob_intents')
        .values(keys.map((k) => ({ blob_key: k, writer, started_at: now, touched_at: now })))
        .execute();
    if (trx) await insert(trx);
    else await (this.commits ? this.commits.run(insert) : insert(this.db));
  }

  /** Removes intents; inside the transaction that records the files, or after a discard. How many went. */
  async remove(keys: string[], trx: Db = this.db): Promise<number> {
    if (keys.length === 0) return 0;
    const r = await trx.deleteFrom('blob_intents').where('blob_key', 'in', keys).executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  /** Marks writes still in progress as alive (long uploads outlive the staleness threshold). */
  async touch(keys: string[], now: number): Promise<void> {
    if (keys.length > 0)
      await this.db
        .updateTable('blob_intents')
        .set({ touched_at: now })
        .where('blob_key', 'in', keys)
        .execute();
  }

  async all(): Promise<BlobIntentRow[]> {
    return this.db.selectFrom('blob_intents').selectAll().execute();
  }
}
