// Persistence of tus uploads (tables uploads and upload_chunks). Everything a resumption needs
// is here and in the blob store, nothing in a process: another instance, or this one after a
// restart, carries on where the last PATCH stopped. A PATCH holds the upload's lock (a lease
// renewed while bytes arrive) so that two writers never append to one upload at once.

import { type BlobCatalog, deadHere, keysIn } from '../../platform/blobs/reconciler.js';
import type { Db } from '../../platform/sql/database.js';
import type { UploadChunkRow, UploadRow } from '../../platform/sql/schema.js';

export type NewUpload = Omit<UploadRow, 'lock_owner' | 'lock_until' | 'file_id' | 'received'>;

/** A lock whose holder is known dead (this host, process gone) may be taken at once. */
function holderDead(owner: string): boolean {
  // owner = host/pid/nonce (the process, as in write intents) + '/' + a per-request nonce.
  const [host, pid, nonce] = owner.split('/');
  return deadHere(host ?? '', Number(pid), `${host}/${pid}/${nonce}`);
}

export class UploadStore implements BlobCatalog {
  constructor(private readonly db: Db) {}

  async insert(u: NewUpload, db: Db = this.db): Promise<UploadRow> {
    const row: UploadRow = { ...u, received: 0, lock_owner: null, lock_until: null, file_id: null };
    await db.insertInto('uploads').values(row).execute();
    return row;
  }

  byId(id: string): Promise<UploadRow | undefined> {
    return this.db.selectFrom('uploads').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Unfinished, unexpired uploads of one user (the quota). */
  async countOpen(uploaderId: number, now: number): Promise<number> {
    const r = await this.db
      .selectFrom('uploads')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('uploader_id', '=', uploaderId)
      .where('file_id', 'is', null)
      .where('expires_at', '>', now)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /**
   * Takes the upload's lock for `owner` until `until`; false while someone alive holds it. A
   * compare-and-set on the holder seen, so two instances racing for a stale lock cannot both win.
   */
  async acquire(id: string, owner: string, now: number, until: number): Promise<boolean> {
    const row = await this.byId(id);
    if (!row) return false;
    const held = row.lock_owner !== null && (row.lock_until ?? 0) >= now && !holderDead(row.lock_owner);
    if (held) return false;
    const q = this.db
      .updateTable('uploads')
      .set({ lock_owner: owner, lock_until: until })
      .where('id', '=', id);
    const r = await (row.lock_owner === null
      ? q.where('lock_owner', 'is', null)
      : q.where('lock_owner', '=', row.lock_owner)
    ).executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  async renew(id: string, owner: string, until: number): Promise<void> {
    await this.db
      .updateTable('uploads')
      .set({ lock_until: until })
      .where('id', '=', id)
      .where('lock_owner', '=', owner)
      .execute();
  }

  async release(id: string, owner: string): Promise<void> {
    await this.db
      .updateTable('uploads')
      .set({ lock_owner: null, lock_until: null })
      .where('id', '=', id)
      .where('lock_owner', '=', owner)
      .execute();
  }

  /**
   * Records a stretch of bytes received from `start`: only if the upload is still where the
   * writer found it and the writer still holds it. False otherwise (the caller drops the blob).
   */
  async addChunk(
    trx: Db,
    id: string,
    owner: string,
    chunk: { start: number; length: number; blobKey: string },
    expiresAt: number,
  ): Promise<boolean> {
    const r = await trx
      .updateTable('uploads')
      .set({ received: chunk.start + chunk.length, expires_at: expiresAt })
      .where('id', '=', id)
      .where('received', '=', chunk.start)
      .where('lock_owner', '=', owner)
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) !== 1) return false;
    await trx
      .insertInto('upload_chunks')
      .values({ upload_id: id, start: chunk.start, length: chunk.length, blob_key: chunk.blobKey })
      .execute();
    return true;
  }

  async chunkCount(id: string): Promise<number> {
    const r = await this.db
      .selectFrom('upload_chunks')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('upload_id', '=', id)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  chunks(id: string, db: Db = this.db): Promise<UploadChunkRow[]> {
    return db.selectFrom('upload_chunks').selectAll().where('upload_id', '=', id).orderBy('start').execute();
  }

  /** The upload became file `fileId` (inside the commit); false if it already had. Its chunks go. */
  async markDone(trx: Db, id: string, fileId: number): Promise<boolean> {
    const r = await trx
      .updateTable('uploads')
      .set({ file_id: fileId })
      .where('id', '=', id)
      .where('file_id', 'is', null)
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) !== 1) return false;
    await trx.deleteFrom('upload_chunks').where('upload_id', '=', id).execute();
    return true;
  }

  /**
   * The whole file came in one PATCH and went straight into the file's blob: the upload is done
   * without a chunk, if `owner` still holds it and nothing was received before.
   */
  async markDoneWhole(trx: Db, id: string, owner: string, fileId: number): Promise<boolean> {
    const r = await trx
      .updateTable('uploads')
      .set((eb) => ({ file_id: fileId, received: eb.ref('length') }))
      .where('id', '=', id)
      .where('received', '=', 0)
      .where('lock_owner', '=', owner)
      .where('file_id', 'is', null)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  /** Removes the upload and its chunk rows; answers the chunks' blob keys. */
  async remove(trx: Db, id: string): Promise<string[]> {
    const chunks = await this.chunks(id, trx);
    await trx.deleteFrom('upload_chunks').where('upload_id', '=', id).execute();
    await trx.deleteFrom('uploads').where('id', '=', id).execute();
    return chunks.map((c) => c.blob_key);
  }

  /** Uploads past their expiry (finished ones too: their rows only served GET). */
  expired(now: number, limit: number): Promise<UploadRow[]> {
    return this.db
      .selectFrom('uploads')
      .selectAll()
      .where('expires_at', '<', now)
      .orderBy('expires_at')
      .limit(limit)
      .execute();
  }

  // BlobCatalog: chunk blobs are owned by their rows, so `storage check` never calls them orphans.
  owned(keys: string[]): Promise<Set<string>> {
    return keysIn(this.db, 'upload_chunks', keys);
  }

  async *owners(): AsyncIterable<{ key: string; length: number; createdAt: number }> {
    let after = '';
    for (;;) {
      const rows = await this.db
        .selectFrom('upload_chunks')
        .innerJoin('uploads', 'uploads.id', 'upload_chunks.upload_id')
        .select(['upload_chunks.blob_key', 'upload_chunks.length', 'uploads.created_at'])
        .where('upload_chunks.blob_key', '>', after)
        .orderBy('upload_chunks.blob_key')
        .limit(1000)
        .execute();
      for (const r of rows) yield { key: r.blob_key, length: r.length, createdAt: r.created_at };
      if (rows.length < 1000) return;
      after = rows[rows.length - 1]!.blob_key;
    }
  }
}

/** Files and upload chunks as one catalog for the reconciler. */
export function catalogOf(...parts: BlobCatalog[]): BlobCatalog {
  return {
    async owned(keys) {
      const out = new Set<string>();
      for (const p of parts) for (const k of await p.owned(keys)) out.add(k);
      return out;
    },
    async *owners() {
      for (const p of parts) yield* p.owners();
    },
  };
}
