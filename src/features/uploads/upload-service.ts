// Resumable uploads (tus 1.0), without HTTP: src/features/uploads/routes.ts speaks the
// protocol and hands this service streams. Design (docs/decisions.md):
// - Each PATCH streams its bytes into a blob of their own (a chunk) through the BlobWriter, under a
//   write intent, and commits "chunk row + new offset" in one transaction: the offset a client is
//   told is always durable, on any blob store (local, S3, memory), and a crash leaves nothing the
//   reconciler cannot name. A PATCH cut short keeps what arrived (the protocol's resumption point).
// - When the last byte is in, the chunks are read back in order into one new blob (hashed on the
//   way, as POST /upload's are) and FileService.commitWritten records it exactly like POST /upload;
//   the same transaction marks the upload done and turns its chunks into intents, which are then
//   deleted (or, after a crash, by the reconciler).
// - The upload's lock (a lease in its row) serializes writers across processes and instances.
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import type { Config } from '../../app/config.js';
import type { BlobStore, StoredBlob } from '../../platform/blobs/blob-store.js';
import { type BlobWriter, WRITER } from '../../platform/blobs/blob-writer.js';
import type { IntentStore } from '../../platform/blobs/intent-store.js';
import type { Clock } from '../../platform/clock.js';
import {
  checksumMismatch,
  conflict,
  DomainError,
  forbidden,
  gone,
  invalid,
  locked,
  notFound,
  tooLarge,
  unauthorized,
} from '../../platform/errors.js';
import type { Logger } from '../../platform/logger.js';
import type { Keys } from '../../platform/security/keys.js';
import type { Db } from '../../platform/sql/database.js';
import { keepRenewing } from '../../platform/sql/lease.js';
import type { UploadRow, UserRow } from '../../platform/sql/schema.js';
import { inTransaction } from '../../platform/sql/transaction.js';
import type { FileWithToken } from '../files/file-links.js';
import type { FileService } from '../files/file-service.js';
import type { FileStore } from '../files/file-store.js';
import { sanitizeFileName } from '../files/names.js';
import type { Recipients, UploadRequest } from '../files/upload-commit.js';
import { parseRecipients } from '../links/recipients.js';
import type { UserService } from '../users/user-service.js';
import type { RequestGate } from './request-gate.js';
import { createForRequest } from './request-uploads.js';
import { checkMetadataLengths, type UploadMetadata } from './upload-metadata.js';
import { deleteChunkBlobs, dropUpload } from './upload-removal.js';
import type { UploadStore } from './upload-store.js';

const HOUR = 3600 * 1000;
/**
 * A writer's hold on an upload, renewed every RENEW_MS while its bytes arrive: a writer whose
 * client has gone silent (a connection left half-open by a cut on the way) stops renewing, so a
 * resume through another instance takes the upload over within seconds, inside a client's
 * usual retry schedule; the silent writer's own commit then fails on the lock it lost.
 */
const LEASE_MS = 6 * 1000;
const RENEW_MS = 2 * 1000;
const LOCK_WAIT_MS = 3000;
/**
 * Each PATCH is a blob (a file on a local store) and a row until the upload completes: past this
 * many pieces, or one per MiB of the upload if that is more, a PATCH that does not complete the
 * upload is refused, so one client cannot make thousands of files out of one-byte PATCHes.
 */
const MIN_PIECES_ALLOWED = 1000;
const maxPieces = (length: number) => Math.max(MIN_PIECES_ALLOWED, Math.ceil(length / (1024 * 1024)));

export interface UploadDeps {
  db: Db;
  store: UploadStore;
  files: FileService;
  fileStore: FileStore;
  writer: BlobWriter;
  blobs: BlobStore;
  intents: IntentStore;
  users: Pick<UserService, 'byId'>;
  keys: Keys;
  clock: Clock;
  log: Logger;
  config: Pick<Config, 'maxFileSize' | 'uploadExpiryHours' | 'uploadMaxOpen'>;
  /** Upload requests: uploads made with a request's token instead of an account. */
  requests?: RequestGate;
}

export interface Checksum {
  /** hex SHA-256 the bytes of this PATCH must have */
  sha256: string;
}

export const uploadLocked = () => locked('another request is writing to this upload; retry shortly', 1);

export class UploadService {
  constructor(private readonly d: UploadDeps) {}

  /** creation: checks everything POST /upload would check before the first byte (or a request's). */
  async create(
    uploader: UserRow | null,
    meta: UploadMetadata,
    length: number,
    remote: string | null = null,
  ): Promise<UploadRow> {
    if (meta.request !== undefined && this.d.requests)
      return createForRequest({ ...this.d, gate: this.d.requests }, meta, length, remote);
    if (!uploader) throw unauthorized('authorization required');
    checkMetadataLengths(meta);
    if (!Number.isSafeInteger(length) || length < 0) throw invalid('Upload-Length must be a whole number');
    if (length > this.d.config.maxFileSize)
      throw tooLarge(`file larger than ${this.d.config.maxFileSize} bytes`);
    if (!meta.filename) throw invalid('file: no file name given');
    const filename = sanitizeFileName(meta.filename);
    const owner = await this.d.files.destination(uploader, meta.d);
    const recipients: Recipients = parseRecipients(meta.m, meta.c) ?? { emails: [], mobiles: [] };
    const maxFile = this.d.files.quotas.maxFileOf(owner);
    if (length > maxFile) throw tooLarge(`file larger than ${maxFile} bytes`);
    const now = this.d.clock.now();
    if ((await this.d.store.countOpen(uploader.id, now)) >= this.d.config.uploadMaxOpen)
      throw forbidden(
        `at most ${this.d.config.uploadMaxOpen} unfinished uploads per user: finish or delete one first`,
      );
    // The row holds the room in the area's quota until the upload finishes or expires.
    const insert = (trx: Db) => this.d.store.insert(row, trx);
    const row = {
      id: randomBytes(18).toString('base64url'),
      uploader_id: uploader.id,
      owner_id: owner.id,
      filename,
      message: meta.i ?? null,
      recipients: JSON.stringify(recipients),
      length,
      created_at: now,
      expires_at: now + this.d.config.uploadExpiryHours * HOUR,
    };
    return this.d.files.quotas.withRoom(owner.id, length, insert);
  }

  /** The caller's upload (or a request's: its URL suffices); another's is a 404; expired → 410. */
  async get(user: UserRow | null, id: string): Promise<UploadRow> {
    const row = id.length <= 64 ? await this.d.store.byId(id) : undefined;
    const viaRequest = row !== undefined && (await this.d.requests?.check(row.id)) === true;
    if (!row || (!viaRequest && row.uploader_id !== user?.id)) throw notFound('no such upload');
    if (row.file_id === null && row.expires_at <= this.d.clock.now()) throw gone('upload expired');
    return row;
  }

  /** Whether an upload was made under a request (410 when that request is closed or expired). */
  async madeUnderRequest(id: string): Promise<boolean> {
    return id.length <= 64 && (await this.d.requests?.check(id)) === true;
  }

  /**
   * HEAD: the durable offset. An upload whose bytes are all in but whose commit never happened
   * (its writer died) is committed now, so a client told "complete" always finds its file.
   */
  async status(user: UserRow | null, id: string, remote: string | null): Promise<UploadRow> {
    const row = await this.get(user, id);
    if (row.file_id === null && row.received === row.length) return this.finishNow(row, remote);
    return row;
  }

  /** GET: the finished file with its owner link (the POST /upload answer for it). */
  async result(user: UserRow, id: string, remote: string | null): Promise<FileWithToken> {
    let row = await this.get(user, id);
    if (row.file_id === null && row.received === row.length) row = await this.finishNow(row, remote);
    if (row.file_id === null)
      throw conflict(`upload not complete: ${row.received} of ${row.length} bytes received`);
    const found = await this.d.fileStore.withOwnerLink(row.file_id);
    if (!found) throw gone('the file of this upload no longer exists');
    return { ...found, token: this.d.keys.unseal(found.link.token_sealed) };
  }

  /**
   * PATCH: appends `body` at `offset`. A body cut short still counts up to where it stopped (the
   * route ends `body` quietly then, unless a checksum makes the whole PATCH all-or-nothing).
   */
  async append(
    user: UserRow | null,
    id: string,
    offset: number,
    body: Readable,
    checksum: Checksum | null,
    remote: string | null,
    /** Bytes the client has delivered so far (any count that grows while the body arrives). */
    delivered?: () => number,
  ): Promise<UploadRow> {
    const row = await this.get(user, id);
    let bodyRead = false;
    let seen = -1;
    const silent = () => {
      if (bodyRead || !delivered) return false;
      const now = delivered();
      const same = now === seen;
      seen = now;
      return same;
    };
    if (row.file_id !== null) throw conflict('the upload is complete already', row.received);
    if (offset !== row.received) throw conflict(`Upload-Offset must be ${row.received}`, row.received);
    return this.holding(
      row,
      async (owner) => {
        // What another writer did before we got the lock counts.
        const current = (await this.d.store.byId(id))!;
        if (current.received !== offset)
          throw conflict(`Upload-Offset must be ${current.received}`, current.received);
        const blob = await this.d.writer.write(body, current.length - offset);
        bodyRead = true;
        if (checksum && checksum.sha256 !== blob.sha256) {
          await this.d.writer.discard([blob.key]);
          throw checksumMismatch('Upload-Checksum does not match the bytes received');
        }
        if (blob.length === 0) {
          await this.d.writer.discard([blob.key]);
          return current;
        }
        const completes = offset + blob.length === current.length;
        if (!completes && (await this.d.store.chunkCount(id)) >= maxPieces(current.length)) {
          await this.d.writer.discard([blob.key]);
          throw invalid('this upload is in too many pieces: send the rest in one PATCH');
        }
        if (offset === 0 && completes) {
          // The whole file in one PATCH (tus-js-client's default): this blob becomes the file's, as
          // POST /upload's does, instead of being staged as a chunk and copied into a new blob.
          await this.commitFile(current, blob, [], remote, owner);
          return (await this.d.store.byId(id))!;
        }
        try {
          const recorded = await inTransaction(this.d.db, async (trx) => {
            const ok = await this.d.store.addChunk(
              trx,
              id,
              owner,
              { start: offset, length: blob.length, blobKey: blob.key },
              this.d.clock.now() + this.d.config.uploadExpiryHours * HOUR,
            );
            if (ok) await this.d.writer.settle(trx, [blob.key]);
            return ok;
          });
          if (!recorded) throw conflict('the upload changed while this request was writing');
        } catch (err) {
          await this.d.writer.discard([blob.key], err).catch(() => {});
          throw err;
        }
        const after = (await this.d.store.byId(id))!;
        return after.received === after.length ? this.finish(after, remote) : after;
      },
      silent,
    );
  }

  /** termination: the upload and its bytes go (a finished one's file stays). */
  async terminate(user: UserRow | null, id: string): Promise<void> {
    const row = await this.get(user, id);
    await this.holding(row, () => dropUpload(this.d, row.id));
  }

  /** Sweeper pass: expired uploads lose their bytes and rows. */
  async sweep(): Promise<number> {
    let n = 0;
    for (const row of await this.d.store.expired(this.d.clock.now(), 200)) {
      try {
        await this.holding(row, () => dropUpload(this.d, row.id));
        n++;
      } catch (err) {
        if (!(err instanceof DomainError && err.kind === 'locked')) throw err;
      }
    }
    return n;
  }

  private async finishNow(row: UploadRow, remote: string | null): Promise<UploadRow> {
    return this.holding(row, async () => {
      const current = (await this.d.store.byId(row.id))!;
      return current.file_id === null ? this.finish(current, remote) : current;
    });
  }

  /**
   * Runs `fn` holding the upload's lock (423 when someone alive holds it), renewing the lease
   * except while `silent()` says the client has brought nothing since the last renewal.
   */
  private async holding<T>(
    row: UploadRow,
    fn: (owner: string) => Promise<T>,
    silent: () => boolean = () => false,
  ): Promise<T> {
    const owner = `${WRITER}/${randomBytes(4).toString('hex')}`;
    const { store, clock } = this.d;
    // A client that lost its connection comes back at once, often while this side is still
    // storing what the cut request brought: wait that out briefly rather than answer 423 at once.
    for (let waited = 0; !(await store.acquire(row.id, owner, clock.now(), clock.now() + LEASE_MS)); ) {
      if (waited >= LOCK_WAIT_MS) throw uploadLocked();
      await new Promise((r) => setTimeout(r, 100));
      waited += 100;
    }
    const stopRenewing = keepRenewing({
      clock,
      everyMs: RENEW_MS,
      skip: silent,
      renew: (now) => store.renew(row.id, owner, now + LEASE_MS),
    });
    try {
      return await fn(owner);
    } finally {
      stopRenewing();
      await store.release(row.id, owner).catch(() => {});
    }
  }

  /** All bytes are in: one blob from the chunks, committed exactly like POST /upload's file. */
  private async finish(row: UploadRow, remote: string | null): Promise<UploadRow> {
    const { store, blobs, writer } = this.d;
    const chunks = await store.chunks(row.id);
    let at = 0;
    for (const c of chunks) {
      if (c.start !== at) throw new Error(`upload ${row.id}: chunk at ${c.start}, expected ${at}`);
      at += c.length;
    }
    if (at !== row.length) throw new Error(`upload ${row.id}: ${at} of ${row.length} bytes in chunks`);
    await this.owners(row);
    const keys = chunks.map((c) => c.blob_key);
    const source = Readable.from(
      (async function* () {
        for (const k of keys) yield* await blobs.read(k);
      })(),
      { objectMode: false },
    );
    const blob = await writer.write(source, row.length);
    if (blob.length !== row.length) {
      await writer.discard([blob.key]);
      throw new Error(`upload ${row.id}: composed ${blob.length} of ${row.length} bytes`);
    }
    await this.commitFile(row, blob, keys, remote, null);
    await deleteChunkBlobs(this.d, keys);
    return (await store.byId(row.id))!;
  }

  /** The uploader and the area's owner, as POST /upload would check them. */
  private async owners(row: UploadRow): Promise<{ uploader: UserRow; areaOwner: UserRow }> {
    const uploader = await this.d.users.byId(row.uploader_id);
    const areaOwner = await this.d.users.byId(row.owner_id);
    if (!uploader || !areaOwner?.enabled) throw invalid('d: no such user');
    return { uploader, areaOwner };
  }

  /**
   * Records `blob` as the upload's file exactly like POST /upload (rows, link, recipients' messages,
   * audit) and marks the upload done in the same transaction. `chunkKeys` (their rows go with it)
   * become intents until they are deleted; `whole` is the lock owner when the blob came from one
   * PATCH and no chunk was ever staged.
   */
  private async commitFile(
    row: UploadRow,
    blob: StoredBlob,
    chunkKeys: string[],
    remote: string | null,
    whole: string | null,
  ): Promise<void> {
    const { store, files, intents, clock, writer } = this.d;
    let people: { uploader: UserRow; areaOwner: UserRow };
    try {
      people = await this.owners(row);
    } catch (err) {
      await writer.discard([blob.key]).catch(() => {});
      throw err;
    }
    const recipients = JSON.parse(row.recipients) as Recipients;
    const req: UploadRequest = {
      uploader: people.uploader,
      owner: people.areaOwner,
      queryName: undefined,
      message: row.message,
      remote,
      ...(recipients.emails.length + recipients.mobiles.length > 0 ? { recipients } : {}),
    };
    await files.commitWritten(req, blob, row.filename, async (trx, stored) => {
      const fileId = stored[0]!.file.id;
      const done = whole
        ? await store.markDoneWhole(trx, row.id, whole, fileId)
        : await store.markDone(trx, row.id, fileId);
      if (!done) throw conflict('the upload changed while this request was writing');
      await this.d.requests?.stored(trx, row.id, fileId);
      // The chunks' rows go with this transaction; intents name their blobs until they are deleted.
      if (chunkKeys.length > 0) await intents.add(chunkKeys, WRITER, clock.now(), trx);
    });
  }
}
