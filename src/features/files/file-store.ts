// Persistence of files and their links, in one class for its callers; each concern in its own
// file under store/: the lookups every download runs (lookups.ts), what an upload writes
// (inserts.ts), the lifecycle's conditional claims (lifecycle-claims.ts) and listings (listing.ts).

import type { BlobCatalog } from '../../platform/blobs/reconciler.js';
import type { Db } from '../../platform/sql/database.js';
import type { Dialect } from '../../platform/sql/migrations.js';
import type { FileRow, LinkRow } from '../../platform/sql/schema.js';
import { FileInserts, type NewFile, type NewLink } from './store/inserts.js';
import { FileClaims } from './store/lifecycle-claims.js';
import { type AccountUsage, FileListing } from './store/listing.js';
import { FileLookups, type FileWithLink } from './store/lookups.js';
import { FileUsage } from './store/usage.js';

export { areaLock, type NewFile, type NewLink } from './store/inserts.js';
export { type AccountUsage, PAGE_SIZE } from './store/listing.js';
export type { FileWithLink } from './store/lookups.js';
export type { UsageCount, UsageRow } from './store/usage.js';

export type FileState = 'area' | 'backup' | 'purging';

export class FileStore implements BlobCatalog {
  private readonly lookups: FileLookups;
  private readonly inserts: FileInserts;
  private readonly claims: FileClaims;
  private readonly listing: FileListing;
  /** Usage counters and the room held by uploads arriving (quotas). */
  readonly quota: FileUsage;

  constructor(db: Db, dialect: Dialect) {
    this.quota = new FileUsage(db, dialect);
    this.lookups = new FileLookups(db, dialect);
    this.inserts = new FileInserts(db, dialect);
    this.claims = new FileClaims(db, dialect);
    this.listing = new FileListing(db);
  }

  /**
   * The contents of a file kept in the database (files.contents_in_db), or undefined. `cached`:
   * may come from the copies of recently read ones (a file's contents never change under its id).
   */
  contents(fileId: number, opts?: { cached?: boolean }): Promise<Buffer | undefined> {
    return this.lookups.contents(fileId, opts);
  }

  /** Serialises name choice within one area until the transaction ends (FileInserts.lockArea). */
  lockArea(trx: Db, ownerId: number): Promise<void> {
    return this.inserts.lockArea(trx, ownerId);
  }

  /** Inserts the file under the first free name of its area, inside a transaction. */
  insertFile(trx: Db, f: NewFile): Promise<FileRow> {
    return this.inserts.insertFile(trx, f);
  }

  insertLink(trx: Db, l: NewLink): Promise<LinkRow> {
    return this.inserts.insertLink(trx, l);
  }

  byTokenHash(tokenHash: string): Promise<FileWithLink | undefined> {
    return this.lookups.byTokenHash(tokenHash);
  }

  byId(id: number, db?: Db): Promise<FileRow | undefined> {
    return this.lookups.byId(id, db);
  }

  /** A file with its owner link (a finished tus upload's answer). */
  withOwnerLink(fileId: number): Promise<FileWithLink | undefined> {
    return this.lookups.withOwnerLink(fileId);
  }

  /** One page (1-based) of an area or backup area, oldest first, each with its owner link. */
  listPage(ownerId: number, state: 'area' | 'backup', page: number): Promise<FileWithLink[]> {
    return this.listing.listPage(ownerId, state, page);
  }

  /** How many files, and bytes, an account holds in its area and backup area. */
  usage(ownerId: number): Promise<AccountUsage> {
    return this.listing.usage(ownerId);
  }

  /** area → backup; false when another caller already moved it. `db` may be a transaction. */
  retire(fileId: number, now: number, purgeAt: number, db?: Db): Promise<boolean> {
    return this.claims.retire(fileId, now, purgeAt, db);
  }

  dueForRetirement(now: number, limit: number): Promise<FileRow[]> {
    return this.claims.dueForRetirement(now, limit);
  }

  /** Backup files whose time is up, plus 'purging' ones a crashed sweeper left behind. */
  dueForPurge(now: number, staleMs: number, limit: number): Promise<FileRow[]> {
    return this.claims.dueForPurge(now, staleMs, limit);
  }

  /** Claims a file of the area or the backup for deletion now (FileClaims.claimRemoval). */
  claimRemoval(fileId: number, now: number): Promise<boolean> {
    return this.claims.claimRemoval(fileId, now);
  }

  /** A file's link validity, while it is in the area (FileClaims.setExpiry). */
  setExpiry(fileId: number, expiresAt: number): Promise<boolean> {
    return this.claims.setExpiry(fileId, expiresAt);
  }

  /** Claims a file for purging; only one caller gets true. */
  claimPurge(file: FileRow, now: number): Promise<boolean> {
    return this.claims.claimPurge(file, now);
  }

  /**
   * Deletes a file claimed for purging at `claimedAt`, its links and contents (FileClaims.deleteFile),
   * and the copy of its contents; false, with nothing written, when the claim is no longer this
   * caller's.
   */
  async deleteFile(fileId: number, claimedAt: number, before?: (trx: Db) => Promise<void>): Promise<boolean> {
    const deleted = await this.claims.deleteFile(fileId, claimedAt, before);
    this.lookups.forget(fileId);
    return deleted;
  }

  /** Files whose owner account was removed go to backup with an immediate purge. */
  orphansToPurge(now: number): Promise<number> {
    return this.claims.orphansToPurge(now);
  }

  setFingerprint(fileId: number, fingerprint: string): Promise<void> {
    return this.claims.setFingerprint(fileId, fingerprint);
  }

  /** Adds complete downloads to links' counts; returns each link's count before. */
  countDownloads(counts: Map<number, number>, db?: Db): Promise<Map<number, number>> {
    return this.lookups.countDownloads(counts, db);
  }

  owned(keys: string[]): Promise<Set<string>> {
    return this.listing.owned(keys);
  }

  /** Every file's blob, a page at a time (storage check). */
  owners(): AsyncIterable<{ key: string; length: number; createdAt: number }> {
    return this.listing.owners();
  }
}
