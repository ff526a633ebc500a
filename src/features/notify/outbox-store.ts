// Persistence of the outbox (table `outbox`, docs/notifications.md): messages waiting, claimed with a lease,
// sent or failed. A claim is a conditional UPDATE, so of several instances exactly one wins it.

import type { ExpressionBuilder } from 'kysely';
import { compiledQuery, type Param } from '../../platform/sql/compiled.js';
import type { Db } from '../../platform/sql/database.js';
import type { Database, NewOutboxRow, OutboxRow, OutboxUpdate } from '../../platform/sql/schema.js';

/** A due message: its id, and to whom (a pass spreads its attempts over recipients). */
export interface DueMessage {
  id: number;
  recipient: string;
}

/** The parameters of the query for due messages. */
interface DueParams {
  channel: string;
  now: number;
  limit: number;
}

export class OutboxStore {
  // Every upload and download kicks the outbox, which asks these: compiled once.
  private readonly dueQuery;
  private readonly dueInOrderQuery;

  constructor(private readonly db: Db) {
    const due = (param: Param<DueParams>) =>
      db
        .selectFrom('outbox')
        .select(['id', 'recipient'])
        .where('status', '=', 'pending')
        .where('channel', '=', param('channel'))
        .where('next_attempt_at', '<=', param('now'))
        .where('claimed_until', '<', param('now'))
        .orderBy('next_attempt_at')
        .orderBy('id')
        .limit(param('limit'));
    this.dueQuery = compiledQuery(db, due);
    // A message waiting behind an earlier one of its sequence is not due: a pass that read the
    // waiting ones would read the same rows again and again and send nothing.
    this.dueInOrderQuery = compiledQuery(db, (param: Param<DueParams>) =>
      due(param).where((eb) => eb.or([eb('file_id', 'is', null), eb.not(eb.exists(earlierPending(eb)))])),
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

  /**
   * Pending messages of one channel due by `now` and not under lease, oldest due first. On an
   * `ordered` channel only the first pending message of each sequence (recipient and file).
   */
  due(channel: string, now: number, limit: number, ordered: boolean): Promise<DueMessage[]> {
    return (ordered ? this.dueInOrderQuery : this.dueQuery).all({ channel, now, limit });
  }

  /** The next pending message of `row`'s sequence (channel, recipient, file) due by `now`, if any. */
  async nextInSequence(
    row: Pick<OutboxRow, 'id' | 'file_id' | 'recipient' | 'channel'>,
    now: number,
  ): Promise<number | undefined> {
    if (row.file_id === null) return undefined;
    const next = await this.db
      .selectFrom('outbox')
      .select('id')
      .where('file_id', '=', row.file_id)
      .where('id', '>', row.id)
      .where('recipient', '=', row.recipient)
      .where('channel', '=', row.channel)
      .where('status', '=', 'pending')
      .where('next_attempt_at', '<=', now)
      .orderBy('id')
      .limit(1)
      .executeTakeFirst();
    return next?.id;
  }

  /**
   * Moves the next attempt of the messages waiting behind `row` in its sequence to no earlier than
   * `at`, so that passes do not read them while the first one waits for its retry.
   */
  async postponeFollowers(
    row: Pick<OutboxRow, 'id' | 'file_id' | 'recipient' | 'channel'>,
    at: number,
  ): Promise<void> {
    if (row.file_id === null) return;
    await this.db
      .updateTable('outbox')
      .set({ next_attempt_at: at })
      .where('status', '=', 'pending')
      .where('file_id', '=', row.file_id)
      .where('recipient', '=', row.recipient)
      .where('channel', '=', row.channel)
      .where('id', '>', row.id)
      .where('next_attempt_at', '<', at)
      .execute();
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
      .where((eb) =>
        eb.or([
          eb('channel', 'not in', ordered),
          eb('file_id', 'is', null),
          eb.not(eb.exists(earlierPending(eb))),
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

  /**
   * A page of messages, newest first, below id `before` (null: from the newest), without their
   * sealed text: the admin's outbox report.
   */
  page(
    filter: { status?: string; channel?: string },
    before: number | null,
    limit: number,
  ): Promise<Omit<OutboxRow, 'payload'>[]> {
    const { status, channel } = filter;
    return this.db
      .selectFrom('outbox')
      .select(LISTED)
      .$if(status !== undefined, (q) => q.where('status', '=', status!))
      .$if(channel !== undefined, (q) => q.where('channel', '=', channel!))
      .$if(before !== null, (q) => q.where('id', '<', before!))
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
  }

  /** One message without its sealed text. */
  listed(id: number, db: Db = this.db): Promise<Omit<OutboxRow, 'payload'> | undefined> {
    return db.selectFrom('outbox').select(LISTED).where('id', '=', id).executeTakeFirst();
  }

  /**
   * A failed message back to pending, due at `now`: a conditional update, so of several callers
   * (requests, instances) exactly one gets true; false when it is not failed (any more).
   */
  async retryFailed(id: number, now: number, db: Db = this.db): Promise<boolean> {
    const res = await db
      .updateTable('outbox')
      .set({ status: 'pending', next_attempt_at: now, claimed_until: 0 })
      .where('id', '=', id)
      .where('status', '=', 'failed')
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
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

/** Every column of a message but its sealed text. */
const LISTED = [
  'id',
  'channel',
  'recipient',
  'kind',
  'status',
  'attempts',
  'next_attempt_at',
  'claimed_until',
  'last_error',
  'file_id',
  'user_name',
  'created_at',
  'sent_at',
  'last_attempt_at',
] as const;

/** An earlier message of the same sequence (channel, recipient, file) as the outer row, still pending. */
function earlierPending(eb: ExpressionBuilder<Database, 'outbox'>) {
  return eb
    .selectFrom('outbox as earlier')
    .select('earlier.id')
    .where('earlier.status', '=', 'pending')
    .whereRef('earlier.file_id', '=', 'outbox.file_id')
    .whereRef('earlier.recipient', '=', 'outbox.recipient')
    .whereRef('earlier.channel', '=', 'outbox.channel')
    .whereRef('earlier.id', '<', 'outbox.id');
}
