// The upload commit path: every incoming file streamed to the blob store, then all their rows
// (files, owner links, the upload hooks' recipients and messages, audit rows) in one transaction.

import type { Readable } from 'node:stream';
import mime from 'mime-types';
import type { Config } from '../../app/config.js';
import type { StoredBlob } from '../../platform/blobs/blob-store.js';
import type { BlobWriter } from '../../platform/blobs/blob-writer.js';
import { overByteLimit } from '../../platform/blobs/metered.js';
import type { Clock } from '../../platform/clock.js';
import { DomainError, invalid } from '../../platform/errors.js';
import { type Db, isUniqueViolation } from '../../platform/sql/database.js';
import type { GroupCommit } from '../../platform/sql/group-commit.js';
import type { UserRow } from '../../platform/sql/schema.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { FileLinks, FileWithToken } from './file-links.js';
import { areaLock, type FileStore, type NewFile } from './file-store.js';
import { sanitizeFileName } from './names.js';
import { HELD_BY_ROW, type QuotaHold, type Quotas, quotaExceeded } from './quotas.js';

const DAY = 24 * 3600 * 1000;

/** The keys of blobs written to the store (contents kept for the database have none there). */
const storeKeys = (blobs: StoredBlob[]) => blobs.filter((b) => !b.contents).map((b) => b.key);

/** One incoming file: the name the client gave for it (if any) and its contents. */
export interface IncomingFile {
  filename: string | undefined;
  stream: Readable;
  /** At most this many bytes, when known before reading (the request's Content-Length). */
  sizeBound?: number;
  /** Exactly this many bytes, when declared before reading (a raw body's Content-Length). */
  declaredSize?: number;
}

/** Who an upload is announced to (query `m` and `c`, already validated and normalised). */
export interface Recipients {
  emails: string[];
  mobiles: string[];
}

export interface UploadRequest {
  uploader: UserRow;
  owner: UserRow;
  /** query `file`: names the file when the request carries exactly one */
  queryName: string | undefined;
  message: string | null;
  remote: string | null;
  /** query `m` / `c`: each gets a link of their own per file */
  recipients?: Recipients;
}

/** Runs inside the upload transaction after the file rows exist (recipients, notifications). */
export type UploadHook = (trx: Db, stored: FileWithToken[], req: UploadRequest) => Promise<void>;

export interface UploadCommitDeps {
  store: FileStore;
  writer: BlobWriter;
  audit: AuditLog;
  clock: Clock;
  links: FileLinks;
  quotas: Quotas;
  config: Pick<Config, 'linkDays' | 'maxFileSize'>;
  /** Upload rows share commits with other requests'. */
  commits: GroupCommit;
  /**
   * How the audit log names an upload's failure. The server names it as its HTTP answer
   * (src/platform/http/error-mapping.ts); without one, the error's kind and detail.
   */
  describeFailure?: (err: unknown) => string;
}

const describeByKind = (err: unknown) =>
  err instanceof DomainError ? `${err.kind} ${err.detail ?? ''}`.trim() : 'internal error';

export class UploadCommit {
  private readonly hooks: UploadHook[] = [];
  private readonly describeFailure: (err: unknown) => string;

  constructor(private readonly d: UploadCommitDeps) {
    this.describeFailure = d.describeFailure ?? describeByKind;
  }

  onUpload(hook: UploadHook): void {
    this.hooks.push(hook);
  }

  /**
   * Streams every incoming file to the blob store, then records them all in one transaction.
   * Any failure (bad name, size limit, abort, disk full, database) removes every blob written for
   * this request: the area is either given all the files or none.
   */
  async upload(req: UploadRequest, files: AsyncIterable<IncomingFile>): Promise<FileWithToken[]> {
    const written: { filename: string | undefined; blob: StoredBlob }[] = [];
    const maxFile = this.d.quotas.maxFileOf(req.owner);
    let hold: QuotaHold | undefined;
    try {
      for await (const f of files) {
        // Fail fast on a bad client-side name, a declared size past the limit or the quota, before
        // spending disk (and the client's time) on it.
        if (f.filename) sanitizeFileName(f.filename);
        if (f.declaredSize !== undefined && f.declaredSize > maxFile) throw overByteLimit(maxFile);
        hold ??= await this.d.quotas.hold(
          req.owner,
          f.declaredSize ?? f.sizeBound,
          f.declaredSize !== undefined,
        );
        const room = hold.bytes - written.reduce((n, w) => n + w.blob.length, 0);
        written.push({ filename: f.filename, blob: await this.write(f, maxFile, room) });
      }
      if (written.length === 0) throw invalid('no file in the request');
      const names = written.map((w) => {
        const raw = written.length === 1 ? req.queryName || w.filename : w.filename;
        if (!raw) throw invalid('file: no file name given');
        return sanitizeFileName(raw);
      });
      return await this.commit(
        req,
        written.map((w) => w.blob),
        names,
        hold ?? HELD_BY_ROW,
      );
    } catch (err) {
      await this.failed(req, storeKeys(written.map((w) => w.blob)), err);
      throw err;
    } finally {
      await hold?.release();
    }
  }

  /** One file to the blob store, stopped at the account's largest file or at the quota's room. */
  private async write(f: IncomingFile, maxFile: number, room: number): Promise<StoredBlob> {
    const limit = Math.min(maxFile, room);
    try {
      return await this.d.writer.write(f.stream, limit, f.sizeBound);
    } catch (err) {
      if (limit < maxFile && err instanceof DomainError && err.kind === 'too-large') throw quotaExceeded();
      throw err;
    }
  }

  /**
   * A blob already written through the BlobWriter (a finished tus upload) becomes a file exactly
   * as upload()'s files do: names, SHA-256, links, recipients' messages, audit rows, events.
   * `within` runs in the same transaction (the tus upload is marked done there, so its recipients
   * are told once). On failure the blob is discarded and the failure audited, as in upload().
   */
  async commitWritten(
    req: UploadRequest,
    blob: StoredBlob,
    filename: string,
    within: (trx: Db, stored: FileWithToken[]) => Promise<void>,
  ): Promise<FileWithToken[]> {
    try {
      const names = [sanitizeFileName(req.queryName || filename)];
      return await this.commit(req, [blob], names, HELD_BY_ROW, within);
    } catch (err) {
      await this.failed(req, [blob.key], err);
      throw err;
    }
  }

  private async failed(req: UploadRequest, keys: string[], err: unknown): Promise<void> {
    // If this fails too, the intents stay and the reconciler finishes the job.
    await this.d.writer.discard(keys, err).catch(() => {});
    await this.d.audit
      .record({
        event: 'upload.failed',
        user: req.uploader.name,
        remote: req.remote,
        detail: this.describeFailure(err),
      })
      .catch(() => {});
  }

  private async commit(
    req: UploadRequest,
    blobs: StoredBlob[],
    names: string[],
    hold: QuotaHold,
    within?: (trx: Db, stored: FileWithToken[]) => Promise<void>,
  ): Promise<FileWithToken[]> {
    const now = this.d.clock.now();
    for (let attempt = 1; ; attempt++) {
      try {
        // In a group commit: many uploads' rows, one commit (their blobs are already durable).
        return await this.d.commits.run(
          async (trx) => {
            // The area's lock (name choice, FileStore.lockArea) is taken by the batch, below.
            const out: FileWithToken[] = [];
            for (const [i, blob] of blobs.entries()) {
              const file = await this.d.store.insertFile(trx, this.newFile(req, blob, names[i]!, now));
              out.push({ file, ...(await this.d.links.createLink(trx, file.id, 'owner')) });
            }
            await this.d.writer.settle(trx, storeKeys(blobs));
            const bytes = blobs.reduce((n, b) => n + b.length, 0);
            await this.d.quotas.counted(trx, req.owner.id, bytes, hold);
            for (const hook of this.hooks) await hook(trx, out, req);
            await within?.(trx, out);
            for (const s of out) await this.audited(trx, req, s);
            return out;
          },
          // Taken by the batch before any unit runs (also when it runs alone), in order with the
          // other units' areas.
          { locks: [areaLock(req.owner.id)] },
        );
      } catch (err) {
        // Another upload took the same name between our read and insert: pick the next free one.
        if (isUniqueViolation(err) && attempt < 5) continue;
        throw err;
      }
    }
  }

  private newFile(req: UploadRequest, blob: StoredBlob, name: string, now: number): NewFile {
    return {
      ownerId: req.owner.id,
      uploaderId: req.uploader.id,
      name,
      length: blob.length,
      sha256: blob.sha256,
      contentType: mime.lookup(name) || 'application/octet-stream',
      blobKey: blob.key,
      blobFingerprint: blob.fingerprint,
      createdAt: now,
      expiresAt: now + this.d.config.linkDays * DAY,
      message: req.message,
      contents: blob.contents,
    };
  }

  /** The audit row of one stored file, in the upload's transaction. */
  private async audited(trx: Db, req: UploadRequest, s: FileWithToken): Promise<void> {
    const detail = {
      name: s.file.name,
      bytes: s.file.length,
      area: req.owner.name,
      sha256: s.file.sha256,
    };
    await this.d.audit.record(
      { event: 'upload', user: req.uploader.name, remote: req.remote, fileId: s.file.id, detail },
      trx,
    );
  }
}
