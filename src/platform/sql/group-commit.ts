// Group commit: small writes of many requests (audit rows, counters, upload rows) share one
// transaction, so one commit, one fsync, makes all of them durable. Every caller still gets its
// answer only after that commit: nothing is acknowledged before it is on disk (for SQLite, after
// its WAL sync: db/sqlite-durable.ts). What gets batched is whatever arrived while the previous
// commit was running (or in the same turn of the event loop), so an idle server adds no waiting.
import type { CommitMarks } from './commit-marks.js';
import type { Db } from './database.js';
import { type LockKey, takeBatchLocks } from './locks.js';
import type { Dialect } from './migrations.js';
import { CommitUnknownError, inTransaction } from './transaction.js';

export type { LockKey } from './locks.js';

/** A unit of work: runs in a transaction shared with others, so it must only use `trx`. */
export type Work<T> = (trx: Db) => Promise<T>;

/**
 * Work of which a batch may hold many units, done for all of them at once: one multi-row statement
 * instead of one per unit (on PostgreSQL each statement is a round trip). `runAll` gets the items
 * in queue order and returns one result per item, in the same order.
 */
export interface MergedWork<I, R> {
  runAll(trx: Db, items: I[]): Promise<R[]>;
}

interface Pending {
  /** The unit's work, on its own (a merged unit: its kind's runAll for its item alone). */
  work: Work<unknown>;
  /** A unit of merged work: runs with the batch's other units of the same kind. */
  merged?: { kind: MergedWork<unknown, unknown>; item: unknown };
  /** false: resolve once committed, without waiting for the disk (RunOptions.durable). */
  durable: boolean;
  /** RunOptions.locks */
  locks: readonly LockKey[];
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

export interface GroupCommitOptions {
  /** Batches committing at once: 1 for SQLite (one connection), a few for PostgreSQL's pool. */
  concurrency: number;
  /** Most units in one transaction (bounds how long one commit holds the database). */
  maxBatch?: number;
  /**
   * Lets the transaction holding the connection go without waiting for the disk (SQLite:
   * db/sqlite-durable.ts). Absent: every commit is waited for (PostgreSQL's is synchronous).
   */
  releaseUnwaited?: () => void;
  /**
   * The database's dialect, for the locks a batch takes: every lock its units declared
   * (RunOptions.locks), in ascending order, before any of them runs (db/locks.ts), so two batches,
   * of this process or of another instance, never wait on each other in a cycle and may run side
   * by side. A unit that takes a lock it did not declare fails, on either dialect.
   */
  dialect: Dialect;
  /**
   * PostgreSQL: each batch writes a mark, so a batch whose COMMIT went unanswered learns whether it
   * committed (db/commit-marks.ts) instead of failing its units or, worse, running them again.
   * Absent (SQLite, whose commit is in this process): such a batch fails its units with
   * CommitUnknownError, and none runs again.
   */
  marks?: CommitMarks;
}

export interface RunOptions {
  /**
   * false: for writes nobody is answered about (a download's outcome after its response). The
   * unit resolves once committed; the disk gets it with a sync that follows soon after
   * (sqlite-durable.ts), so a batch of such units does not hold a commit slot for a sync.
   */
  durable?: boolean;
  /**
   * Locks the unit takes (advisory keys, e.g. an area's name lock): its batch takes them, with the
   * other units', in ascending order before any unit runs (db/locks.ts). The unit may take them
   * again itself (nothing to do then); taking any other lock fails.
   */
  locks?: readonly LockKey[];
}

export class GroupCommit {
  private queue: Pending[] = [];
  private running = 0;
  private scheduled = false;
  private readonly maxBatch: number;

  constructor(
    private readonly db: Db,
    private readonly options: GroupCommitOptions,
  ) {
    this.maxBatch = options.maxBatch ?? 256;
  }

  /** Runs `work` in the next shared transaction; resolves once that transaction has committed. */
  run<T>(work: Work<T>, options: RunOptions = {}): Promise<T> {
    return this.enqueue(work, undefined, options);
  }

  /** Like run(), for one item of merged work: the batch's items of `kind` run in one runAll call. */
  runMerged<I, R>(kind: MergedWork<I, R>, item: I, options: RunOptions = {}): Promise<R> {
    const work: Work<R> = async (trx) => (await kind.runAll(trx, [item]))[0]!;
    return this.enqueue(work, { kind: kind as MergedWork<unknown, unknown>, item }, options);
  }

  private enqueue<T>(work: Work<T>, merged: Pending['merged'], options: RunOptions): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({
        work,
        merged,
        durable: options.durable ?? true,
        locks: options.locks ?? [],
        resolve: resolve as (v: unknown) => void,
        reject,
      });
      this.schedule();
    });
  }

  /** Resolves once nothing is queued or committing (before the database closes). */
  async idle(): Promise<void> {
    while (this.queue.length > 0 || this.running > 0 || this.scheduled)
      await new Promise((resolve) => setTimeout(resolve, 5));
  }

  private schedule(): void {
    if (this.scheduled || this.running >= this.options.concurrency || this.queue.length === 0) return;
    this.scheduled = true;
    // After the current turn: what other requests queue meanwhile joins this batch.
    setImmediate(() => {
      this.scheduled = false;
      if (this.running >= this.options.concurrency || this.queue.length === 0) return;
      const batch = this.queue.splice(0, this.maxBatch);
      this.running++;
      void this.flush(batch).finally(() => {
        this.running--;
        this.schedule();
      });
      this.schedule();
    });
  }

  private async flush(batch: Pending[]): Promise<void> {
    if (batch.length === 1) return this.alone(batch[0]!);
    let results: unknown[];
    try {
      results = await this.commitUnits(batch);
    } catch (err) {
      // Perhaps committed: running the units again could write each of them twice.
      if (err instanceof CommitUnknownError) {
        for (const p of batch) p.reject(err);
        return;
      }
      // One unit failed (or the commit did): none of the batch is written. Each runs again in a
      // transaction of its own, so only the units that fail alone fail, with their own error.
      await Promise.all(batch.map((p) => this.alone(p)));
      return;
    }
    for (const [i, p] of batch.entries()) p.resolve(results[i]);
  }

  private async alone(p: Pending): Promise<void> {
    try {
      p.resolve((await this.commitUnits([p]))[0]);
    } catch (err) {
      p.reject(err);
    }
  }

  /**
   * Runs `units` in one transaction; their results once it has committed. A COMMIT that went
   * unanswered is settled by the batch's mark (GroupCommitOptions.marks): committed, the results;
   * not, its error (the units may run again); if that cannot be learned, CommitUnknownError.
   */
  private async commitUnits(units: Pending[]): Promise<unknown[]> {
    const { marks } = this.options;
    let mark: string | undefined;
    let results: unknown[] | undefined;
    try {
      return await this.transact(
        async (trx) => {
          await this.lockFor(trx, units);
          mark = await marks?.write(trx);
          results = await runUnits(trx, units);
          return results;
        },
        units.some((p) => p.durable),
      );
    } catch (err) {
      if (!(err instanceof CommitUnknownError) || !marks || !mark || !results) throw err;
      let committed: boolean;
      try {
        committed = await marks.committed(mark);
      } catch {
        throw err;
      }
      if (!committed) throw err.cause;
      err.committed();
      return results;
    }
  }

  /**
   * (A failed COMMIT keeps its own error: the SQLite driver skips the rollback of a transaction
   * a full disk already ended, which would otherwise hide the SQLITE_FULL that makes a 503.)
   */
  private transact<T>(fn: Work<T>, durable: boolean): Promise<T> {
    const unwaited = durable ? undefined : this.options.releaseUnwaited;
    if (!unwaited) return inTransaction(this.db, fn);
    return inTransaction(this.db, async (trx) => {
      const result = await fn(trx);
      unwaited();
      return result;
    });
  }

  /** Takes the locks that `units` declared; they may take no others (db/locks.ts). */
  private lockFor(trx: Db, units: Pending[]): Promise<void> {
    return takeBatchLocks(
      trx,
      this.options.dialect,
      units.flatMap((p) => p.locks),
    );
  }
}

/**
 * Runs a batch's units in queue order and returns their results. The units of one merged kind run
 * together, where the first of them stands in the queue.
 */
async function runUnits(trx: Db, batch: Pending[]): Promise<unknown[]> {
  const out: unknown[] = new Array(batch.length);
  const done = new Set<MergedWork<unknown, unknown>>();
  for (const [i, p] of batch.entries()) {
    if (!p.merged) {
      out[i] = await p.work(trx);
      continue;
    }
    const { kind } = p.merged;
    if (done.has(kind)) continue;
    done.add(kind);
    const at = [...batch.keys()].filter((j) => batch[j]!.merged?.kind === kind);
    const results = await kind.runAll(
      trx,
      at.map((j) => batch[j]!.merged!.item),
    );
    if (results.length !== at.length)
      throw new Error(`merged work returned ${results.length} of ${at.length} results`);
    for (const [k, j] of at.entries()) out[j] = results[k];
  }
  return out;
}
