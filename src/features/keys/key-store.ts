// Persistence of API keys (table `api_keys`): the hash of each key, never the key.
import { compiledQuery, type Param } from '../../platform/sql/compiled.js';
import type { Db } from '../../platform/sql/database.js';
import type { ApiKeyRow } from '../../platform/sql/schema.js';

export class KeyStore {
  /** Read on every request made with a key: compiled once. */
  private readonly byIdQuery;

  constructor(private readonly db: Db) {
    this.byIdQuery = compiledQuery(db, (param: Param<{ id: string }>) =>
      db.selectFrom('api_keys').selectAll().where('id', '=', param('id')),
    );
  }

  byId(id: string): Promise<ApiKeyRow | undefined> {
    return this.byIdQuery.first({ id });
  }

  async insert(row: ApiKeyRow, trx: Db = this.db): Promise<void> {
    await trx.insertInto('api_keys').values(row).execute();
  }

  /** Keys of one account (or of all), newest first. */
  list(userId?: number): Promise<ApiKeyRow[]> {
    let q = this.db.selectFrom('api_keys').selectAll().orderBy('created_at', 'desc').orderBy('id');
    if (userId !== undefined) q = q.where('user_id', '=', userId);
    return q.execute();
  }

  /** Marks the key revoked; false when it was unknown or already revoked. */
  async revoke(id: string, at: number, trx: Db = this.db): Promise<boolean> {
    const res = await trx
      .updateTable('api_keys')
      .set({ revoked_at: at })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /** Last-use times of one group commit, the latest per key. */
  async recordUses(trx: Db, uses: { id: string; at: number }[]): Promise<void> {
    const latest = new Map<string, number>();
    for (const { id, at } of uses) latest.set(id, Math.max(at, latest.get(id) ?? at));
    for (const id of [...latest.keys()].sort())
      await trx
        .updateTable('api_keys')
        .set({ last_used_at: latest.get(id)! })
        .where('id', '=', id)
        .execute();
  }
}
