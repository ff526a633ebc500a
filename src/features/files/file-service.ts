// Files in user areas: storing uploads, resolving download tokens, listing areas.
// Knows nothing of HTTP: routes hand it streams and present what it returns.

import { Readable } from 'node:stream';
import mime from 'mime-types';
import type { Config } from '../../app/config.js';
import type { ByteRange, StoredBlob } from '../../platform/blobs/blob-store.js';
import { type BlobWriter, IN_DATABASE } from '../../platform/blobs/blob-writer.js';
import { overByteLimit } from '../../platform/blobs/metered.js';
import type { Clock } from '../../platform/clock.js';
import { DomainError, invalid, isOutOfSpace, isUnavailable, unauthorized } from '../../platform/errors.js';
import { type Keys, randomToken, sha256 } from '../../platform/security/keys.js';
import { type Db, isUniqueViolation } from '../../platform/sql/database.js';
import type { GroupCommit, MergedWork } from '../../platform/sql/group-commit.js';
import type { FileRow, LinkRow, UserRow } from '../../platform/sql/schema.js';
import { CommitUnknownError, inTransaction } from '../../platform/sql/transaction.js';
import type { AuditEntry, AuditLog, DetailedEntry } from '../audit/audit-log.js';
import type { UserService } from '../users/user-service.js';
import type { BlobAccess, DownloadOutcome } from './download.js';
import { areaLock, type FileStore, type FileWithLink, type NewFile } from './file-store.js';
import { sanitizeFileName } from './names.js';

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

/** A file with the token of one of its links, ready to present. */
export interface FileWithToken {
  file: FileRow;
  link: LinkRow;
  /**
   * null: the stored copy of the token could not be opened (sealed with a server secret that was
   * replaced without REMESSA_PREVIOUS_SECRET, docs/operations.md); the link itself still works.
   */
  token: string | null;
}

/** Runs inside the upload transaction after the file rows exist (recipients, notifications). */
export type UploadHook = (trx: Db, stored: FileWithToken[], req: UploadRequest) => Promise<void>;

/**
 * Runs after a complete download was counted (sender confirmation). `first`: its count moved the
 * link's from 0, decided in the count's transaction (a snapshot read before the download would
 * call two overlapping downloads, or a late retry, the first).
 */
export type DownloadHook = (found: FileWithLink, remote: string | null, first: boolean) => Promise<void>;

/** A download's outcome, written by downloadFinished(). */
interface Outcome {
  /** its audit row (begun by downloadStarting) */
  row: number;
  entry: AuditEntry;
  /** the link whose download count it adds one to (a complete download), or null */
  countedLink: number | null;
}

/**
 * A finished download's bookkeeping that failed with the database out of reach: what is left of
 * it, from `step` on (0 the outcome, then each download hook, then the mailbox retirement).
 */
interface UnfinishedBookkeeping {
  found: FileWithLink;
  row: number;
  outcome: DownloadOutcome;
  remote: string | null;
  step: number;
  /** Set once the outcome committed: whether this was the link's first complete download. */
  first: boolean;
}

/** Finished downloads whose bookkeeping waits for the database; past this, the oldest are dropped. */
const MAX_UNFINISHED = 10_000;

export interface FileDeps {
  db: Db;
  store: FileStore;
  writer: BlobWriter;
  audit: AuditLog;
  users: UserService;
  keys: Keys;
  clock: Clock;
  config: Pick<
    Config,
    'linkDays' | 'backupDays' | 'maxFileSize' | 'retireOnDownload' | 'verifyDownloads' | 'stallSeconds'
  >;
  /** Download rows and counts, and upload rows, share commits with other requests'. */
  commits: GroupCommit;
  /**
   * How the audit log names an upload's failure. The server names it as its HTTP answer
   * (src/platform/http/error-mapping.ts); without one, the error's kind and detail.
   */
  describeFailure?: (err: unknown) => string;
}

const describeByKind = (err: unknown) =>
  err instanceof DomainError ? `${err.kind} ${err.detail ?? ''}`.trim() : 'internal error';

export class FileService {
  readonly store: FileStore;
  private readonly db: Db;
  private readonly writer: BlobWriter;
  private readonly audit: AuditLog;
  private readonly users: UserService;
  private readonly keys: Keys;
  private readonly clock: Clock;
  private readonly config: FileDeps['config'];
  private readonly commits: GroupCommit;
  private readonly describeFailure: (err: unknown) => string;
  private readonly uploadHooks: UploadHook[] = [];
  private readonly downloadHooks: DownloadHook[] = [];
  private unfinished: UnfinishedBookkeeping[] = [];
  /** Bookkeeping given up since takeDropped() was last asked (past the cap, or failed for good). */
  private dropped = 0;
  /** After a pass that still failed, the next waits this long (doubling, up to 5 minutes). */
  private retryDelayMs = 0;
  private retryNotBefore = 0;
  private retrying: Promise<number> | null = null;
  /** The outcomes of one batch, written together (on PostgreSQL a few statements for them all). */
  private readonly outcomes: MergedWork<Outcome, { first: boolean }> = {
    runAll: async (trx, outcomes) => {
      await this.audit.finishAll(
        outcomes.map(({ row, entry }) => ({ id: row, entry })),
        trx,
      );
      const counts = new Map<number, number>();
      for (const { countedLink } of outcomes)
        if (countedLink !== null) counts.set(countedLink, (counts.get(countedLink) ?? 0) + 1);
      // Each link's count before this batch; within it, the first of its outcomes is the first.
      const running = await this.store.countDownloads(counts, trx);
      return outcomes.map(({ countedLink }) => {
        if (countedLink === null) return { first: false };
        const before = running.get(countedLink) ?? 1;
        running.set(countedLink, before + 1);
        return { first: before === 0 };
      });
    },
  };

  constructor(deps: FileDeps) {
    ({
      db: this.db,
      store: this.store,
      writer: this.writer,
      audit: this.audit,
      users: this.users,
      keys: this.keys,
      clock: this.clock,
      config: this.config,
      commits: this.commits,
    } = deps);
    this.describeFailure = deps.describeFailure ?? describeByKind;
  }

  onUpload(hook: UploadHook): void {
    this.uploadHooks.push(hook);
  }

  onDownload(hook: DownloadHook): void {
    this.downloadHooks.push(hook);
  }

  /**
   * Before the first byte of a download: its audit row, committed, saying the outcome is unknown
   * (what it keeps saying if the process dies mid-response). Returns the row for downloadFinished.
   * Throws (a full disk: 503) when it cannot be written, and then no byte may be sent.
   */
  async downloadStarting(
    found: FileWithLink,
    range: ByteRange | null,
    remote: string | null,
  ): Promise<number> {
    return this.audit.begin(downloadEntry(found, remote, range ? rangeDetail(range) : {}));
  }

  /**
   * After a download response is over: its audit row gets the outcome (complete or not, bytes,
   * range) and a complete one is counted, in one transaction; then the download hooks run and, in
   * mailbox mode, the file is retired. A step that fails with the database out of reach, busy or
   * full is tried again (with those after it) by retryBookkeeping; not one whose commit's outcome is
   * unknown, where a second try could count the download twice. Throws the failure either way.
   */
  async downloadFinished(
    found: FileWithLink,
    row: number,
    outcome: DownloadOutcome,
    remote: string | null,
  ): Promise<void> {
    const work: UnfinishedBookkeeping = { found, row, outcome, remote, step: 0, first: false };
    try {
      await this.bookkeep(work);
      // The database is back: what waited for it need not wait for the job's next pass.
      if (this.unfinished.length > 0) {
        this.retryNotBefore = 0;
        void this.retryBookkeeping().catch(() => {});
      }
    } catch (err) {
      if (mayTryAgain(err)) this.keep([work]);
      throw err;
    }
  }

  /**
   * Tries the bookkeeping of downloads that failed for want of the database again (a background
   * job, and at shutdown with `force`). After a pass that still fails, passes back off (10 s, 20 s
   * … 5 minutes): on SQLite each try against a lock held elsewhere stops the process for the 5 s
   * busy timeout. Returns how many are still waiting.
   */
  retryBookkeeping({ force = false } = {}): Promise<number> {
    // One pass at a time: two would take the same downloads and count them twice.
    this.retrying ??= this.retryPass(force).finally(() => {
      this.retrying = null;
    });
    return this.retrying;
  }

  private async retryPass(force: boolean): Promise<number> {
    if (this.unfinished.length === 0 || (!force && this.clock.now() < this.retryNotBefore))
      return this.unfinished.length;
    const waiting = this.unfinished;
    this.unfinished = [];
    for (const [i, work] of waiting.entries()) {
      try {
        await this.bookkeep(work);
      } catch (err) {
        if (!mayTryAgain(err)) {
          this.dropped++;
          continue;
        }
        // Still out of reach: this one and the rest wait for a later pass, in their order.
        const later = this.unfinished;
        this.unfinished = [];
        this.keep([...waiting.slice(i), ...later]);
        this.retryDelayMs = Math.min(Math.max(10_000, this.retryDelayMs * 2), 5 * 60_000);
        this.retryNotBefore = this.clock.now() + this.retryDelayMs;
        return this.unfinished.length;
      }
    }
    this.retryDelayMs = 0;
    return this.unfinished.length;
  }

  /** Keeps `works` for a later pass; past MAX_UNFINISHED the oldest are given up. */
  private keep(works: UnfinishedBookkeeping[]): void {
    this.unfinished = this.unfinished.concat(works);
    const over = this.unfinished.length - MAX_UNFINISHED;
    if (over > 0) {
      this.unfinished.splice(0, over);
      this.dropped += over;
    }
  }

  /**
   * How many downloads' bookkeeping was given up since the last call (their audit rows keep saying
   * the outcome is unknown, their count and hooks never happen): for the log.
   */
  takeDropped(): number {
    const n = this.dropped;
    this.dropped = 0;
    return n;
  }

  /** Runs the steps of a download's bookkeeping from `work.step` on, advancing it as each commits. */
  private async bookkeep(work: UnfinishedBookkeeping): Promise<void> {
    const { found, row, outcome, remote } = work;
    if (work.step === 0) {
      const entry = downloadEntry(found, remote, {
        bytes: outcome.bytes,
        complete: outcome.complete,
        ...(outcome.range ? rangeDetail(outcome.range) : {}),
      });
      // Nobody waits on this (the response is over): it commits without holding a commit slot for
      // the disk, which syncs it soon after (group-commit.ts, RunOptions.durable).
      const { first } = await this.commits.runMerged(
        this.outcomes,
        { row, entry, countedLink: outcome.complete ? found.link.id : null },
        { durable: false },
      );
      work.first = first;
      work.step = 1;
    }
    if (!outcome.complete) return;
    for (; work.step <= this.downloadHooks.length; work.step++)
      await this.downloadHooks[work.step - 1]!(found, remote, work.first);
    if (this.config.retireOnDownload && found.file.state === 'area')
      await this.retire(found.file, 'downloaded');
    work.step++;
  }

  /** Access to a file's blob for the download response, reporting damage to the audit trail. */
  blobAccess(file: FileRow, remote: string | null): BlobAccess {
    const blobs = this.writer.store;
    const directBody = blobs.directBody?.bind(blobs);
    const stored = file.contents_in_db ? this.contentsInDatabase(file) : null;
    return {
      open: stored?.open ?? ((range) => blobs.read(file.blob_key, range)),
      directBody:
        stored || !directBody
          ? undefined
          : (res, offset, length) => directBody(file.blob_key, res, offset, length),
      stat: stored?.stat ?? (() => blobs.stat(file.blob_key)),
      readSmall: stored?.readSmall ?? ((maxBytes) => blobs.readSmall(file.blob_key, maxBytes)),
      verified: (fingerprint) => this.store.setFingerprint(file.id, fingerprint),
      verify: this.config.verifyDownloads,
      stallSeconds: this.config.stallSeconds,
      now: () => this.clock.now(),
      corrupt: (reason) =>
        this.audit.record({
          event: 'file.corrupt',
          fileId: file.id,
          remote,
          detail: { name: file.name, reason },
        }),
    };
  }

  /** The reads of BlobAccess for contents kept in the database with the row. */
  private contentsInDatabase(file: FileRow): Pick<BlobAccess, 'open' | 'stat' | 'readSmall'> {
    // REMESSA_VERIFY_DOWNLOADS=always is there to catch damage on the media: it reads them anew.
    const cached = this.config.verifyDownloads !== 'always';
    const read = () => this.store.contents(file.id, { cached });
    const small = async (maxBytes: number) => {
      const data = await read();
      if (!data) return null;
      return {
        stat: { size: data.length, fingerprint: IN_DATABASE },
        data: data.length <= maxBytes ? data : null,
      };
    };
    return {
      readSmall: small,
      stat: async () => (await small(0))?.stat ?? null,
      open: async (range) => {
        const data = await read();
        if (!data) throw new Error(`contents of file ${file.id} missing from the database`);
        return Readable.from([range ? data.subarray(range.start, range.end + 1) : data]);
      },
    };
  }

  /** The area an upload goes to: the caller's, or that of `d` (an existing, enabled user). */
  async destination(caller: UserRow, d: string | undefined): Promise<UserRow> {
    if (d === undefined || d === '') return caller;
    const owner = await this.users.find(d);
    if (!owner?.enabled) throw invalid('d: no such user');
    return owner;
  }

  /**
   * Streams every incoming file to the blob store, then records them all in one transaction.
   * Any failure (bad name, size limit, abort, disk full, database) removes every blob written for
   * this request: the area is either given all the files or none.
   */
  async upload(req: UploadRequest, files: AsyncIterable<IncomingFile>): Promise<FileWithToken[]> {
    const written: { filename: string | undefined; blob: StoredBlob }[] = [];
    try {
      for await (const f of files) {
        // Fail fast on a bad client-side name or a declared size past the limit, before spending
        // disk (and the client's time) on it.
        if (f.filename) sanitizeFileName(f.filename);
        if (f.declaredSize !== undefined && f.declaredSize > this.config.maxFileSize)
          throw overByteLimit(this.config.maxFileSize);
        written.push({
          filename: f.filename,
          blob: await this.writer.write(f.stream, this.config.maxFileSize, f.sizeBound),
        });
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
      );
    } catch (err) {
      await this.failed(req, storeKeys(written.map((w) => w.blob)), err);
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
      return await this.commit(req, [blob], [sanitizeFileName(req.queryName || filename)], within);
    } catch (err) {
      await this.failed(req, [blob.key], err);
      throw err;
    }
  }

  private async failed(req: UploadRequest, keys: string[], err: unknown): Promise<void> {
    // If this fails too, the intents stay and the reconciler finishes the job.
    await this.writer.discard(keys, err).catch(() => {});
    await this.audit
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
    within?: (trx: Db, stored: FileWithToken[]) => Promise<void>,
  ): Promise<FileWithToken[]> {
    const now = this.clock.now();
    for (let attempt = 1; ; attempt++) {
      try {
        // In a group commit: many uploads' rows, one commit (their blobs are already durable).
        return await this.commits.run(
          async (trx) => {
            // The area's lock (name choice, FileStore.lockArea) is taken by the batch, below.
            const out: FileWithToken[] = [];
            for (const [i, blob] of blobs.entries()) {
              const f: NewFile = {
                ownerId: req.owner.id,
                uploaderId: req.uploader.id,
                name: names[i]!,
                length: blob.length,
                sha256: blob.sha256,
                contentType: mime.lookup(names[i]!) || 'application/octet-stream',
                blobKey: blob.key,
                blobFingerprint: blob.fingerprint,
                createdAt: now,
                expiresAt: now + this.config.linkDays * DAY,
                message: req.message,
                contents: blob.contents,
              };
              const file = await this.store.insertFile(trx, f);
              out.push({ file, ...(await this.createLink(trx, file.id, 'owner')) });
            }
            await this.writer.settle(trx, storeKeys(blobs));
            for (const hook of this.uploadHooks) await hook(trx, out, req);
            await within?.(trx, out);
            for (const s of out) {
              const detail = {
                name: s.file.name,
                bytes: s.file.length,
                area: req.owner.name,
                sha256: s.file.sha256,
              };
              await this.audit.record(
                { event: 'upload', user: req.uploader.name, remote: req.remote, fileId: s.file.id, detail },
                trx,
              );
            }
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

  /** A new link to a file; the token is returned once and kept only hashed and sealed. */
  async createLink(
    trx: Db,
    fileId: number,
    kind: 'owner' | 'recipient',
    recipient: { email?: string; mobile?: string } = {},
  ): Promise<{ link: LinkRow; token: string }> {
    const token = randomToken();
    const link = await this.store.insertLink(trx, {
      fileId,
      tokenHash: sha256(token),
      tokenSealed: this.keys.seal(token),
      kind,
      recipientEmail: recipient.email ?? null,
      recipientMobile: recipient.mobile ?? null,
      createdAt: this.clock.now(),
    });
    return { link, token };
  }

  /**
   * The file a download token opens in the given area. Missing token → 400; unknown, revoked or
   * in the other area → 401 (the same answer, so tokens cannot be probed).
   */
  async resolve(token: string | undefined, area: 'area' | 'backup'): Promise<FileWithLink> {
    if (!token) throw invalid(area === 'area' ? 'k: download token required' : 'z: download token required');
    if (token.length > 200) throw unauthorized('invalid download link');
    const found = await this.store.byTokenHash(sha256(token));
    if (!found || found.link.revoked || found.file.state !== area)
      throw unauthorized('invalid or expired download link');
    return found;
  }

  async list(owner: UserRow, area: 'area' | 'backup', page: number): Promise<FileWithToken[]> {
    const rows = await this.store.listPage(owner.id, area, page);
    // One unreadable copy (an old secret) must not take the whole listing down: that entry shows
    // no link, the others do.
    return rows.map((r) => ({ ...r, token: this.openToken(r.link) }));
  }

  private openToken(link: LinkRow): string | null {
    try {
      return this.keys.unseal(link.token_sealed);
    } catch {
      return null;
    }
  }

  /** area → backup (link validity over, or first complete download in mailbox mode). */
  async retire(file: FileRow, reason: string): Promise<boolean> {
    const now = this.clock.now();
    // The move and its audit row (and the webhook event made from it) commit together.
    return inTransaction(this.db, async (trx) => {
      const moved = await this.store.retire(file.id, now, now + this.config.backupDays * DAY, trx);
      if (moved)
        await this.audit.record(
          { event: 'file.retired', fileId: file.id, detail: { name: file.name, reason } },
          trx,
        );
      return moved;
    });
  }
}

/** A failure that changed nothing and may pass: the database unreachable, busy or full. */
function mayTryAgain(err: unknown): boolean {
  if (err instanceof CommitUnknownError) return false;
  const code = (err as { code?: unknown } | null)?.code;
  return (
    isUnavailable(err) ||
    isOutOfSpace(err) ||
    (typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')))
  );
}

function rangeDetail(range: ByteRange): { range: string } {
  return { range: `${range.start}-${range.end}` };
}

/** A download's audit row: who (the link's recipient, if any), which link, and `detail`. */
function downloadEntry(
  { file, link }: FileWithLink,
  remote: string | null,
  detail: Record<string, unknown>,
): DetailedEntry {
  return {
    event: 'download',
    user: link.recipient_email ?? link.recipient_mobile ?? null,
    remote,
    fileId: file.id,
    detail: { link: link.id, kind: link.kind, ...detail },
  };
}
