// Persistence of the outbox (table `outbox`, DESIGN §5): messages waiting, claimed with a lease,
// sent or failed. A claim is a conditional UPDATE, so of several instances exactly one wins it.
import { prepare } from '../db/compiled.js';
import type { Db } from '../db/database.js';
import type { NewOutboxRow, OutboxRow, OutboxUpdate } from '../db/schema.js';

export class OutboxStore {
  // Every upload and download kicks the outbox, which asks this: compiled once.
  private readonly dueQuery;

  constructor(private readonly db: Db) {
    this.dueQuery = prepare<[number, number, number], { id: number }>(db, 3, (p) =>
      db
        .selectFrom('outbox')
        .select('id')
        .where('status', '=', 'pending')
        .where('next_attempt_at', '<=', p<number>(0))
        .where('claimed_until', '<', p<number>(1))
        .orderBy('next_attempt_at')
        .orderBy('id')
        .limit(p<number>(2)),
    );
  }

  /** Stores a message, in the caller's transaction when given one; returns its id. */
  async insert(db: Db, row: NewOutboxRow): Promise<number> {
    const inserted = await db.insertInto('outbox').values(row).returning('id').executeTakeFirstOrThrow();
    return inserted.id;
  }

  byId(id: number): Promise<OutboxRow | undefined> {
    return this.db.selectFrom('outbox').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /**
   * Changes a message while it is pending and, when `heldUntil` is given, still under that lease
   * (not taken over by another instance); false when it was not (any more).
   */
  async updatePending(
    id: number,
    patch: OutboxUpdate,
    db: Db = this.db,
    heldUntil?: number,
  ): Promise<boolean> {
    let q = db.updateTable('outbox').set(patch).where('id', '=', id).where('status', '=', 'pending');
    if (heldUntil !== undefined) q = q.where('claimed_until', '=', heldUntil);
    const r = await q.executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /** Extends a lease still held (`heldUntil`) to `until`; false when it was lost or the message is done. */
  renew(id: number, heldUntil: number, until: number): Promise<boolean> {
    return this.updatePending(id, { claimed_until: until }, this.db, heldUntil);
  }

  /** Ids of pending messages due by `now` and not under lease, oldest due first. */
  async due(now: number, limit: number): Promise<number[]> {
    const rows = await this.dueQuery.all([now, now, limit]);
    return rows.map((r) => r.id);
  }

  /**
   * Takes the lease on a pending message until `until` unless another holds it; on an `ordered`
   * channel also unless an earlier message to the same recipient about the same file is pending.
   * True for the one caller that took it.
   */
  async claim(id: number, now: number, until: number, ordered: readonly string[]): Promise<boolean> {
    const res = await this.db
      .updateTable('outbox')
      .set({ claimed_until: until })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .where('claimed_until', '<', now)
      .where(({ eb, or, not, exists, selectFrom }) =>
        or([
          eb('channel', 'not in', ordered),
          eb('file_id', 'is', null),
          not(
            exists(
              selectFrom('outbox as earlier')
                .select('earlier.id')
                .where('earlier.status', '=', 'pending')
                .whereRef('earlier.file_id', '=', 'outbox.file_id')
                .whereRef('earlier.recipient', '=', 'outbox.recipient')
                .whereRef('earlier.channel', '=', 'outbox.channel')
                .whereRef('earlier.id', '<', 'outbox.id'),
            ),
          ),
        ]),
      )
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /** What a failed claim found: enough to tell a message held back from one taken or done. */
  claimState(id: number): Promise<Pick<OutboxRow, 'status' | 'claimed_until' | 'channel'> | undefined> {
    return this.db
      .selectFrom('outbox')
      .select(['status', 'claimed_until', 'channel'])
      .where('id', '=', id)
      .executeTakeFirst();
  }

  /** The newest messages first, optionally of one status. */
  list(filter: { status?: string; limit: number }): Promise<OutboxRow[]> {
    let q = this.db.selectFrom('outbox').selectAll();
    if (filter.status) q = q.where('status', '=', filter.status);
    return q.orderBy('id', 'desc').limit(filter.limit).execute();
  }

  /** The messages of one kind about some files, oldest first. */
  aboutFiles(fileIds: number[], kind: string): Promise<OutboxRow[]> {
    if (fileIds.length === 0) return Promise.resolve([]);
    return this.db
      .selectFrom('outbox')
      .selectAll()
      .where('file_id', 'in', fileIds)
      .where('kind', '=', kind)
      .orderBy('id')
      .execute();
  }

  /** The newest message of one kind about a file to one recipient. */
  latest(
    db: Db,
    fileId: number,
    kind: string,
    recipient: string,
  ): Promise<Pick<OutboxRow, 'status' | 'created_at'> | undefined> {
    return db
      .selectFrom('outbox')
      .select(['status', 'created_at'])
      .where('file_id', '=', fileId)
      .where('kind', '=', kind)
      .where('recipient', '=', recipient)
      .orderBy('id', 'desc')
      .executeTakeFirst();
  }
}
