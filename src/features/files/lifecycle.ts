// The sweeper: retires files whose link validity ended (area → backup) and purges backup files
// whose time is up (contents, then row). Every step is a conditional claim, so any number of
// instances can run it at once without double work; a crash mid-purge is picked up again later.
// Each pass also reconciles storage (storage/reconciler.ts): uploads left half-done by a crashed
// instance, incomplete multipart uploads among them, are removed once their writer is dead.

import type { BlobStore } from '../../platform/blobs/blob-store.js';
import type { StorageReconciler } from '../../platform/blobs/reconciler.js';
import type { Clock } from '../../platform/clock.js';
import type { Logger } from '../../platform/logger.js';
import type { BackgroundJob } from '../../platform/worker.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { FileService } from './file-service.js';
import type { FileStore } from './file-store.js';

const BATCH = 500;
/** A 'purging' claim older than this belongs to a crashed sweeper. */
const STALE_CLAIM_MS = 10 * 60 * 1000;

export interface FileSweeperDeps {
  files: FileService;
  store: FileStore;
  blobs: BlobStore;
  reconciler: StorageReconciler;
  audit: AuditLog;
  clock: Clock;
  log: Logger;
  intervalMs: number;
}

export class FileSweeper implements BackgroundJob {
  readonly name = 'file-sweeper';
  readonly intervalMs: number;
  private readonly files: FileService;
  private readonly store: FileStore;
  private readonly blobs: BlobStore;
  private readonly reconciler: StorageReconciler;
  private readonly audit: AuditLog;
  private readonly clock: Clock;
  private readonly log: Logger;

  constructor(deps: FileSweeperDeps) {
    ({
      files: this.files,
      store: this.store,
      blobs: this.blobs,
      reconciler: this.reconciler,
      audit: this.audit,
      clock: this.clock,
      log: this.log,
      intervalMs: this.intervalMs,
    } = deps);
  }

  async run(): Promise<void> {
    const now = this.clock.now();
    await this.store.orphansToPurge(now);
    let retired = 0;
    for (const file of await this.store.dueForRetirement(now, BATCH)) {
      if (await this.files.retire(file, 'link expired')) retired++;
    }
    let purged = 0;
    // A fresh time: files retired just above with REMESSA_BACKUP_DAYS=0 are due at once.
    const purgeNow = this.clock.now();
    for (const file of await this.store.dueForPurge(purgeNow, STALE_CLAIM_MS, BATCH)) {
      if (!(await this.store.claimPurge(file, purgeNow))) continue;
      // Contents first: a crash after this leaves a 'purging' row that a later pass finishes.
      if (!file.contents_in_db) await this.blobs.delete(file.blob_key);
      // The audit row (and the webhook event made from it) commits with the deletion, if this
      // claim still holds: another sweeper may have taken it over while this one stalled.
      const deleted = await this.store.deleteFile(file.id, purgeNow, (trx) =>
        this.audit.record({ event: 'file.purged', fileId: file.id, detail: { name: file.name } }, trx),
      );
      if (deleted) purged++;
    }
    // Reservations of uploads whose instance died hold nothing past their lease; their rows go.
    await this.files.quotas.prune();
    if (retired || purged) this.log.info({ retired, purged }, 'file sweep');
    await this.reconciler.reconcile();
  }
}
