// Storage reconciliation: the one mechanism behind start-up recovery, the sweeper and
// `remessa storage check [--fix]`. It compares three things: the write intents (blob-writer.ts),
// the objects and partial writes the store lists, and the rows that own blobs (BlobCatalog).
//
// - reconcile() (start-up and every sweep): an intent whose writer is dead — same host and its
//   process gone, or untouched for STALE_MS on any host — loses its blob and partial writes, then
//   the intent itself. A partial write goes with its dead writer, or when it has no intent and
//   has been untouched for STALE_MS (never a live writer's: intents come before partial writes).
// - check(fix): lists every object too: a row without its object (or with the wrong size) is
//   reported; an object with neither row nor live intent is an orphan, removed by --fix once older
//   than STALE_MS (younger ones may be a commit the listing raced with).
// Safe with several instances on one directory or bucket: nothing alive is ever judged dead,
// because a live writer's intent is on its host's process table or touched within the hour.
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import type { Db } from '../sql/database.js';
import type { BlobIntentRow } from '../sql/schema.js';
import type { BlobStore, PartialWrite } from './blob-store.js';
import { type BlobWriter, STALE_MS, WRITER } from './blob-writer.js';
import type { IntentStore } from './intent-store.js';
import { HOST } from './local/local-blob-store.js';

/** The rows that own blobs (files/file-store.ts implements it). */
export interface BlobCatalog {
  /** Which of `keys` a row owns. */
  owned(keys: string[]): Promise<Set<string>>;
  /** Every owned blob with its expected length and when its row was written. */
  owners(): AsyncIterable<{ key: string; length: number; createdAt: number }>;
}

/** A catalog's owned(): which of `keys` stand in `table`'s blob_key column (500 keys a query). */
export async function keysIn(db: Db, table: 'files' | 'upload_chunks', keys: string[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (let i = 0; i < keys.length; i += 500) {
    const rows = await db
      .selectFrom(table)
      .select('blob_key')
      .where('blob_key', 'in', keys.slice(i, i + 500))
      .execute();
    for (const r of rows) out.add(r.blob_key);
  }
  return out;
}

export interface ReconcileResult {
  /** dead writers' intents cleared (with their blobs) */
  intents: number;
  /** partial writes removed */
  partial: number;
}

export interface CheckReport extends ReconcileResult {
  rows: number;
  objects: number;
  /** rows whose object is missing or has the wrong size */
  missing: { key: string; problem: string }[];
  /** objects with neither row nor live intent */
  orphans: { key: string; modifiedAt: number }[];
  /** orphans removed by --fix */
  removed: number;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A process on this host (HOST: same name, boot and pid namespace) that no longer runs: another
 * pid that is gone, or our pid in an earlier life. Any other host's, or an unknown one's: not known.
 */
export function deadHere(host: string, pid: number, writer?: string): boolean {
  if (host !== HOST) return false;
  if (pid === process.pid) return writer !== undefined && writer !== WRITER;
  return !isAlive(pid);
}

export interface StorageReconcilerDeps {
  store: BlobStore;
  intents: IntentStore;
  catalog: BlobCatalog;
  clock: Clock;
  log: Logger;
  /** This process's writer, whose failed discards each pass tries again (absent in the CLI). */
  writer?: Pick<BlobWriter, 'retryDiscards'>;
}

export class StorageReconciler {
  private readonly store: BlobStore;
  private readonly intents: IntentStore;
  private readonly catalog: BlobCatalog;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly writer: StorageReconcilerDeps['writer'];

  constructor(deps: StorageReconcilerDeps) {
    ({
      store: this.store,
      intents: this.intents,
      catalog: this.catalog,
      clock: this.clock,
      log: this.log,
      writer: this.writer,
    } = deps);
  }

  private dead(intent: BlobIntentRow, now: number): boolean {
    if (intent.touched_at < now - STALE_MS) return true;
    const [host, pid] = intent.writer.split('/');
    return deadHere(host ?? '', Number(pid), intent.writer);
  }

  async reconcile(): Promise<ReconcileResult> {
    // First what this process failed to discard (the store or database was out of reach): its
    // intents are a live writer's, which the rest of the pass leaves alone for an hour.
    const retried = await this.writer?.retryDiscards().catch((err: unknown) => {
      this.log.warn({ err }, 'discarding the blobs of failed uploads failed again; next pass tries again');
      return 0;
    });
    if (retried) this.log.info({ blobs: retried }, 'discarded the blobs of failed uploads');
    const now = this.clock.now();
    // Partial writes first, intents second: a write that starts in between has its intent in the
    // second snapshot, so it is never taken for an intent-less leftover.
    const partials: PartialWrite[] = [];
    for await (const p of this.store.listPartial()) partials.push(p);
    const intents = await this.intents.all();
    const byKey = new Map(intents.map((i) => [i.blob_key, i]));
    const deadIntents = intents.filter((i) => this.dead(i, now));
    const owned = await this.catalog.owned(deadIntents.map((i) => i.blob_key));
    for (const i of deadIntents) {
      // The intent goes first, and only the one that removed it deletes the blob: a writer taken
      // for dead that commits meanwhile finds its intent gone and rolls back (BlobWriter.settle),
      // or removed it first and keeps its blob. (A crash in between leaves a blob nothing names:
      // `remessa storage check --fix` removes it.)
      const removed = await this.intents.remove([i.blob_key]);
      // A row owns it (the commit removes the intent, so only by hand): keep the blob.
      if (removed === 1 && !owned.has(i.blob_key)) await this.store.delete(i.blob_key);
    }
    let partial = 0;
    // Store times (file mtime, multipart Initiated) are wall-clock, as the clock is.
    const staleBefore = now - STALE_MS;
    for (const p of partials) {
      const intent = byKey.get(p.key);
      const gone = intent
        ? this.dead(intent, now)
        : (p.writer && deadHere(p.writer.host, p.writer.pid)) || p.startedAt < staleBefore;
      if (!gone) continue;
      await this.store.discardPartial(p);
      partial++;
    }
    const result = { intents: deadIntents.length, partial };
    if (result.intents || result.partial)
      this.log.warn(result, 'removed partial uploads and uncommitted blobs left by a crash');
    return result;
  }

  async check(fix: boolean): Promise<CheckReport> {
    const reconciled = await this.reconcile();
    const listedAt = this.clock.now();
    // Objects first, rows second: an upload that commits in between has its row in the second
    // snapshot, so it is not taken for an orphan.
    const objects = new Map<string, { modifiedAt: number; size: number }>();
    for await (const o of this.store.list()) objects.set(o.key, o);
    const missing: CheckReport['missing'] = [];
    const rowKeys = new Set<string>();
    for await (const row of this.catalog.owners()) {
      rowKeys.add(row.key);
      const o = objects.get(row.key);
      // A row written after the listing began may own an object the listing missed.
      if (!o && row.createdAt < listedAt) missing.push({ key: row.key, problem: 'object missing' });
      else if (o && o.size !== row.length)
        missing.push({ key: row.key, problem: `size ${o.size} instead of ${row.length}` });
    }
    const live = new Set((await this.intents.all()).map((i) => i.blob_key));
    const orphans: CheckReport['orphans'] = [];
    for (const [key, o] of objects) {
      if (!rowKeys.has(key) && !live.has(key)) orphans.push({ key, modifiedAt: o.modifiedAt });
    }
    let removed = 0;
    if (fix) {
      const staleBefore = this.clock.now() - STALE_MS;
      for (const o of orphans) {
        if (o.modifiedAt >= staleBefore) continue;
        // Checked once more just before: a row may have claimed it since the listing.
        if ((await this.catalog.owned([o.key])).has(o.key)) continue;
        await this.store.delete(o.key);
        removed++;
      }
    }
    return { ...reconciled, rows: rowKeys.size, objects: objects.size, missing, orphans, removed };
  }
}
