// Persistence of upload requests (tables upload_requests, request_links, request_batches,
// request_uploads; docs/requests.md). Every write that several instances may race on is a
// conditional update: a reservation succeeds only while the request is open and within its limits,
// a batch is sealed once, a request is closed once.

import { pinWrites } from '../../platform/security/pins.js';
import type { Db } from '../../platform/sql/database.js';
import type {
  RequestBatchRow,
  RequestLinkRow,
  RequestUploadRow,
  UploadRequestRow,
  UserRow,
} from '../../platform/sql/schema.js';

export type NewRequest = Omit<
  UploadRequestRow,
  'closed_at' | 'closed_reason' | 'reserved_files' | 'reserved_bytes' | 'received_files' | 'received_bytes'
>;

export interface NewRequestLink {
  requestId: string;
  tokenHash: string;
  tokenSealed: string;
  email: string | null;
  mobile: string | null;
  createdAt: number;
}

/** A file that arrived through a request, as its requester sees it. */
export interface ArrivedFile {
  id: number;
  name: string;
  length: number;
  from: string | null;
  time: number;
}

export class RequestStore {
  /** The PIN writes (pins.ts), on request_links. */
  readonly pinWrites;

  constructor(private readonly db: Db) {
    this.pinWrites = pinWrites(db, 'request_links');
  }

  async insert(trx: Db, r: NewRequest): Promise<UploadRequestRow> {
    const row: UploadRequestRow = {
      ...r,
      closed_at: null,
      closed_reason: null,
      reserved_files: 0,
      reserved_bytes: 0,
      received_files: 0,
      received_bytes: 0,
    };
    await trx.insertInto('upload_requests').values(row).execute();
    return row;
  }

  insertLink(trx: Db, l: NewRequestLink): Promise<RequestLinkRow> {
    return trx
      .insertInto('request_links')
      .values({
        request_id: l.requestId,
        token_hash: l.tokenHash,
        token_sealed: l.tokenSealed,
        recipient_email: l.email,
        recipient_mobile: l.mobile,
        pin_hash: null,
        pin_expires_at: null,
        pin_sent_at: null,
        pin_failures: 0,
        locked_until: 0,
        created_at: l.createdAt,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  /**
   * An account read inside a request's transaction (the requester): on SQLite a read through
   * another handle would wait for this very transaction.
   */
  account(db: Db, id: number): Promise<UserRow | undefined> {
    return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
  }

  byId(id: string, db: Db = this.db): Promise<UploadRequestRow | undefined> {
    return db.selectFrom('upload_requests').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** A user's requests (or everyone's), newest first. */
  list(userId: number | null, limit: number): Promise<UploadRequestRow[]> {
    let q = this.db.selectFrom('upload_requests').selectAll();
    if (userId !== null) q = q.where('user_id', '=', userId);
    return q.orderBy('created_at', 'desc').orderBy('id').limit(limit).execute();
  }

  linksOf(requestIds: string[]): Promise<RequestLinkRow[]> {
    if (requestIds.length === 0) return Promise.resolve([]);
    return this.db
      .selectFrom('request_links')
      .selectAll()
      .where('request_id', 'in', requestIds)
      .orderBy('id')
      .execute();
  }

  linkByTokenHash(hash: string): Promise<RequestLinkRow | undefined> {
    return this.db.selectFrom('request_links').selectAll().where('token_hash', '=', hash).executeTakeFirst();
  }

  linkById(id: number, db: Db = this.db): Promise<RequestLinkRow | undefined> {
    return db.selectFrom('request_links').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** The files that arrived through a request, oldest first. */
  arrived(requestId: string): Promise<ArrivedFile[]> {
    return this.db
      .selectFrom('files')
      .select(['id', 'name', 'length', 'origin_from as from', 'created_at as time'])
      .where('origin_request', '=', requestId)
      .orderBy('id')
      .execute();
  }

  /**
   * Reserves one file of `length` bytes, only while the request is open, unexpired and within its
   * limits: one statement, so concurrent reservations (several instances) never overfill it.
   */
  async reserve(trx: Db, id: string, length: number, now: number): Promise<boolean> {
    const r = await trx
      .updateTable('upload_requests')
      .set((eb) => ({
        reserved_files: eb('reserved_files', '+', 1),
        reserved_bytes: eb('reserved_bytes', '+', length),
      }))
      .where('id', '=', id)
      .where('closed_at', 'is', null)
      .where('expires_at', '>', now)
      .where((eb) => eb(eb('reserved_files', '+', 1), '<=', eb.ref('max_files')))
      .where((eb) => eb(eb('reserved_bytes', '+', length), '<=', eb.ref('max_total_bytes')))
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  async unreserve(trx: Db, id: string, length: number): Promise<void> {
    await trx
      .updateTable('upload_requests')
      .set((eb) => ({
        reserved_files: eb('reserved_files', '-', 1),
        reserved_bytes: eb('reserved_bytes', '-', length),
      }))
      .where('id', '=', id)
      .execute();
  }

  /** Counts a stored file; the request as it is afterwards. */
  received(trx: Db, id: string, length: number): Promise<UploadRequestRow> {
    return trx
      .updateTable('upload_requests')
      .set((eb) => ({
        received_files: eb('received_files', '+', 1),
        received_bytes: eb('received_bytes', '+', length),
      }))
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  /** Closes an open request; false when it already was (only one closer records it). */
  async close(trx: Db, id: string, now: number, reason: string): Promise<boolean> {
    const r = await trx
      .updateTable('upload_requests')
      .set({ closed_at: now, closed_reason: reason })
      .where('id', '=', id)
      .where('closed_at', 'is', null)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  /** The gathering batch of a link, joined by one more upload, or a new one. */
  async joinBatch(trx: Db, requestId: string, linkId: number, now: number): Promise<number> {
    const joined = await trx
      .updateTable('request_batches')
      .set((eb) => ({ pending: eb('pending', '+', 1), last_at: now }))
      .where('link_id', '=', linkId)
      .where('sealed_at', 'is', null)
      .returning('id')
      .executeTakeFirst();
    if (joined) return joined.id;
    const made = await trx
      .insertInto('request_batches')
      .values({ request_id: requestId, link_id: linkId, pending: 1, files: 0, created_at: now, last_at: now })
      .returning('id')
      .executeTakeFirstOrThrow();
    return made.id;
  }

  /** One upload of a batch ended: stored (`stored`) or released. */
  async leaveBatch(trx: Db, batchId: number, stored: boolean, now: number): Promise<void> {
    await trx
      .updateTable('request_batches')
      .set((eb) => ({
        pending: eb('pending', '-', 1),
        files: stored ? eb('files', '+', 1) : eb.ref('files'),
        last_at: now,
      }))
      .where('id', '=', batchId)
      .execute();
  }

  async batchSealed(trx: Db, batchId: number): Promise<boolean> {
    const b = await trx
      .selectFrom('request_batches')
      .select('sealed_at')
      .where('id', '=', batchId)
      .executeTakeFirst();
    return b !== undefined && b.sealed_at !== null;
  }

  async moveUpload(trx: Db, uploadId: string, batchId: number): Promise<void> {
    await trx
      .updateTable('request_uploads')
      .set({ batch_id: batchId })
      .where('upload_id', '=', uploadId)
      .execute();
  }

  /**
   * Batches whose message is due: nothing pending and quiet since `quietSince`, or nothing
   * happened since `stalledSince` (an upload left unfinished does not hold the message for ever).
   */
  dueBatches(quietSince: number, stalledSince: number, limit: number): Promise<RequestBatchRow[]> {
    return this.db
      .selectFrom('request_batches')
      .selectAll()
      .where('sealed_at', 'is', null)
      .where((eb) =>
        eb.or([
          eb.and([eb('pending', '=', 0), eb('last_at', '<=', quietSince)]),
          eb('last_at', '<=', stalledSince),
        ]),
      )
      .orderBy('last_at')
      .limit(limit)
      .execute();
  }

  /** Seals a due batch; true for the one instance of racing ones that did. */
  async seal(
    trx: Db,
    batchId: number,
    now: number,
    quietSince: number,
    stalledSince: number,
  ): Promise<boolean> {
    const r = await trx
      .updateTable('request_batches')
      .set({ sealed_at: now })
      .where('id', '=', batchId)
      .where('sealed_at', 'is', null)
      .where((eb) =>
        eb.or([
          eb.and([eb('pending', '=', 0), eb('last_at', '<=', quietSince)]),
          eb('last_at', '<=', stalledSince),
        ]),
      )
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  /** The names of the files a batch stored. */
  async batchFiles(trx: Db, batchId: number): Promise<string[]> {
    const rows = await trx
      .selectFrom('request_uploads')
      .innerJoin('uploads', 'uploads.id', 'request_uploads.upload_id')
      .innerJoin('files', 'files.id', 'uploads.file_id')
      .select('files.name')
      .where('request_uploads.batch_id', '=', batchId)
      .where('request_uploads.state', '=', 'done')
      .orderBy('files.id')
      .execute();
    return rows.map((r) => r.name);
  }

  async insertUpload(trx: Db, u: Omit<RequestUploadRow, 'state'>): Promise<void> {
    await trx
      .insertInto('request_uploads')
      .values({ ...u, state: 'open' })
      .execute();
  }

  uploadOf(uploadId: string, db: Db = this.db): Promise<RequestUploadRow | undefined> {
    return db.selectFrom('request_uploads').selectAll().where('upload_id', '=', uploadId).executeTakeFirst();
  }

  /** Ends an open upload of a request ('done' or 'released'); false when it had ended already. */
  async endUpload(trx: Db, uploadId: string, state: 'done' | 'released'): Promise<boolean> {
    const r = await trx
      .updateTable('request_uploads')
      .set({ state })
      .where('upload_id', '=', uploadId)
      .where('state', '=', 'open')
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  /** Marks a stored file with the request it came through and who sent it. */
  async markOrigin(trx: Db, fileId: number, requestId: string, from: string | null): Promise<void> {
    await trx
      .updateTable('files')
      .set({ origin_request: requestId, origin_from: from })
      .where('id', '=', fileId)
      .execute();
  }

  async clearPinFailures(id: number): Promise<void> {
    await this.db.updateTable('request_links').set({ pin_failures: 0 }).where('id', '=', id).execute();
  }

  /** Locks a link that reached `maxFailures` and kills its PIN; true for the one caller that did. */
  async lockAfterPinFailures(id: number, until: number, maxFailures: number): Promise<boolean> {
    const res = await this.db
      .updateTable('request_links')
      .set({ locked_until: until, pin_failures: 0, pin_hash: null })
      .where('id', '=', id)
      .where('pin_failures', '>=', maxFailures)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }
}
