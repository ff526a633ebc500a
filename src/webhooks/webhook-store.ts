// Persistence of per-user webhook subscriptions (table `webhooks`).
import type { Db } from '../db/database.js';
import type { WebhookRow } from '../db/schema.js';

export interface NewWebhook {
  userId: number;
  url: string;
  secretSealed: string;
  /** comma-separated event types, or '*' */
  events: string;
  createdAt: number;
}

export class WebhookStore {
  constructor(private readonly db: Db) {}

  insert(w: NewWebhook): Promise<WebhookRow> {
    return this.db
      .insertInto('webhooks')
      .values({
        user_id: w.userId,
        url: w.url,
        secret_sealed: w.secretSealed,
        events: w.events,
        enabled: 1,
        disabled_reason: null,
        created_at: w.createdAt,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  byId(id: number): Promise<WebhookRow | undefined> {
    return this.db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Every subscription, or one user's, oldest first. */
  list(userId?: number): Promise<WebhookRow[]> {
    let q = this.db.selectFrom('webhooks').selectAll();
    if (userId !== undefined) q = q.where('user_id', '=', userId);
    return q.orderBy('id').execute();
  }

  async countOf(userId: number): Promise<number> {
    const row = await this.db
      .selectFrom('webhooks')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('user_id', '=', userId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /**
   * The enabled subscriptions of a file's owner and uploader (one query: this runs for every
   * download), as long as that account exists and is enabled; `db` may be a transaction.
   */
  enabledForFile(db: Db, fileId: number): Promise<WebhookRow[]> {
    return db
      .selectFrom('webhooks')
      .innerJoin('users', 'users.id', 'webhooks.user_id')
      .innerJoin('files', (join) => join.on('files.id', '=', fileId))
      .selectAll('webhooks')
      .where((eb) =>
        eb.or([
          eb('webhooks.user_id', '=', eb.ref('files.owner_id')),
          eb('webhooks.user_id', '=', eb.ref('files.uploader_id')),
        ]),
      )
      .where('webhooks.enabled', '=', 1)
      .where('users.enabled', '=', 1)
      .orderBy('webhooks.id')
      .execute();
  }

  /** The enabled subscriptions of the (enabled) user of that name. */
  enabledForUser(db: Db, name: string): Promise<WebhookRow[]> {
    return db
      .selectFrom('webhooks')
      .innerJoin('users', 'users.id', 'webhooks.user_id')
      .selectAll('webhooks')
      .where('users.name_key', '=', name.toLowerCase())
      .where('webhooks.enabled', '=', 1)
      .where('users.enabled', '=', 1)
      .orderBy('webhooks.id')
      .execute();
  }

  /** Removes a subscription (only the given user's, when a user is given); false if none was. */
  async remove(id: number, userId?: number): Promise<boolean> {
    let q = this.db.deleteFrom('webhooks').where('id', '=', id);
    if (userId !== undefined) q = q.where('user_id', '=', userId);
    const res = await q.executeTakeFirst();
    return Number(res.numDeletedRows) === 1;
  }

  async disable(id: number, reason: string): Promise<void> {
    await this.db
      .updateTable('webhooks')
      .set({ enabled: 0, disabled_reason: reason })
      .where('id', '=', id)
      .execute();
  }
}
