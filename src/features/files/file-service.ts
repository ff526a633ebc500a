// Files in user areas: storing uploads, resolving download tokens, listing areas.
// Knows nothing of HTTP: routes hand it streams and present what it returns. The work is done by
// upload-commit.ts (the upload commit path), file-links.ts (link tokens, lists),
// download-bookkeeping.ts and blob-access.ts (downloads); this is the one face callers see.

import type { Config } from '../../app/config.js';
import type { ByteRange, StoredBlob } from '../../platform/blobs/blob-store.js';
import type { BlobWriter } from '../../platform/blobs/blob-writer.js';
import type { Clock } from '../../platform/clock.js';
import { invalid } from '../../platform/errors.js';
import type { Keys } from '../../platform/security/keys.js';
import type { Db } from '../../platform/sql/database.js';
import type { GroupCommit } from '../../platform/sql/group-commit.js';
import type { FileRow, LinkRow, UserRow } from '../../platform/sql/schema.js';
import { inTransaction } from '../../platform/sql/transaction.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { UserService } from '../users/user-service.js';
import { blobAccess } from './blob-access.js';
import type { BlobAccess, DownloadOutcome } from './download.js';
import { DownloadBookkeeping, type DownloadHook } from './download-bookkeeping.js';
import { FileLinks, type FileWithToken } from './file-links.js';
import type { FileStore, FileWithLink } from './file-store.js';
import { Quotas } from './quotas.js';
import { type IncomingFile, UploadCommit, type UploadHook, type UploadRequest } from './upload-commit.js';

const DAY = 24 * 3600 * 1000;

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
    | 'linkDays'
    | 'linkMaxDownloads'
    | 'backupDays'
    | 'maxFileSize'
    | 'quotaDefault'
    | 'retireOnDownload'
    | 'verifyDownloads'
    | 'stallSeconds'
  >;
  /** Download rows and counts, and upload rows, share commits with other requests'. */
  commits: GroupCommit;
  /**
   * How the audit log names an upload's failure. The server names it as its HTTP answer
   * (src/platform/http/error-mapping.ts); without one, the error's kind and detail.
   */
  describeFailure?: (err: unknown) => string;
}

export class FileService {
  readonly store: FileStore;
  /** Usage, quotas and their warnings (quotas.ts). */
  readonly quotas: Quotas;
  private readonly links: FileLinks;
  private readonly uploads: UploadCommit;
  private readonly downloads: DownloadBookkeeping;

  constructor(private readonly d: FileDeps) {
    this.store = d.store;
    this.links = new FileLinks(d);
    this.quotas = new Quotas({ usage: d.store.quota, clock: d.clock, config: d.config });
    this.uploads = new UploadCommit({ ...d, links: this.links, quotas: this.quotas });
    this.downloads = new DownloadBookkeeping({ ...d, retire: (file, reason) => this.retire(file, reason) });
  }

  onUpload(hook: UploadHook): void {
    this.uploads.onUpload(hook);
  }

  onDownload(hook: DownloadHook): void {
    this.downloads.onDownload(hook);
  }

  /** The download's audit row, committed before the first byte (DownloadBookkeeping.starting). */
  downloadStarting(found: FileWithLink, range: ByteRange | null, remote: string | null): Promise<number> {
    return this.downloads.starting(found, range, remote);
  }

  /** Outcome, count, hooks and mailbox retirement once the response is over (DownloadBookkeeping.finished). */
  downloadFinished(
    found: FileWithLink,
    row: number,
    outcome: DownloadOutcome,
    remote: string | null,
  ): Promise<void> {
    return this.downloads.finished(found, row, outcome, remote);
  }

  /** Tries the bookkeeping that waited for the database again (DownloadBookkeeping.retry). */
  retryBookkeeping(opts: { force?: boolean } = {}): Promise<number> {
    return this.downloads.retry(opts);
  }

  /** How many downloads' bookkeeping was given up since the last call: for the log. */
  takeDropped(): number {
    return this.downloads.takeDropped();
  }

  /** Access to a file's blob for the download response, reporting damage to the audit trail. */
  blobAccess(file: FileRow, remote: string | null): BlobAccess {
    return blobAccess(this.d, file, remote);
  }

  /** The area an upload goes to: the caller's, or that of `d` (an existing, enabled user). */
  async destination(caller: UserRow, d: string | undefined): Promise<UserRow> {
    if (d === undefined || d === '') return caller;
    const owner = await this.d.users.find(d);
    if (!owner?.enabled) throw invalid('d: no such user');
    return owner;
  }

  /** Every incoming file stored, or none (UploadCommit.upload). */
  upload(req: UploadRequest, files: AsyncIterable<IncomingFile>): Promise<FileWithToken[]> {
    return this.uploads.upload(req, files);
  }

  /** A blob already written (a finished tus upload) becomes a file (UploadCommit.commitWritten). */
  commitWritten(
    req: UploadRequest,
    blob: StoredBlob,
    filename: string,
    within: (trx: Db, stored: FileWithToken[]) => Promise<void>,
  ): Promise<FileWithToken[]> {
    return this.uploads.commitWritten(req, blob, filename, within);
  }

  /** A new link to a file; the token is returned once and kept only hashed and sealed. */
  createLink(
    trx: Db,
    fileId: number,
    kind: 'owner' | 'recipient',
    recipient: { email?: string; mobile?: string } = {},
  ): Promise<{ link: LinkRow; token: string }> {
    return this.links.createLink(trx, fileId, kind, recipient);
  }

  /** The file a download token opens in the given area (FileLinks.resolve). */
  resolve(token: string | undefined, area: 'area' | 'backup'): Promise<FileWithLink> {
    return this.links.resolve(token, area);
  }

  list(owner: UserRow, area: 'area' | 'backup', page: number): Promise<FileWithToken[]> {
    return this.links.list(owner, area, page);
  }

  /**
   * Deletes a file now, from the area or the backup (its owner, or an admin, asked): every link
   * stops at the claim, on every instance; then the contents, then the rows with the audit row
   * `file.deleted`. False when it was already being deleted or purged. If the store fails after the
   * claim, the sweeper finishes the deletion (a 'purging' row past its claim).
   */
  async removeNow(
    file: FileRow,
    who: { user: string | null; actor?: string | undefined; remote: string | null; via: string },
  ): Promise<boolean> {
    const now = this.d.clock.now();
    if (!(await this.store.claimRemoval(file.id, now))) return false;
    if (!file.contents_in_db) await this.d.writer.store.delete(file.blob_key);
    const detail = { name: file.name, from: file.state, via: who.via };
    const entry = {
      event: 'file.deleted' as const,
      user: who.user,
      actor: who.actor ?? null,
      remote: who.remote,
    };
    return this.store.deleteFile(file.id, now, (trx) =>
      this.d.audit.record({ ...entry, fileId: file.id, detail }, trx),
    );
  }

  /** area → backup (link validity over, or first complete download in mailbox mode). */
  async retire(file: FileRow, reason: string): Promise<boolean> {
    const now = this.d.clock.now();
    // The move and its audit row (and the webhook event made from it) commit together.
    return inTransaction(this.d.db, async (trx) => {
      const moved = await this.store.retire(file.id, now, now + this.d.config.backupDays * DAY, trx);
      if (moved)
        await this.d.audit.record(
          { event: 'file.retired', fileId: file.id, detail: { name: file.name, reason } },
          trx,
        );
      return moved;
    });
  }
}
