// Group commit: small writes of many requests (audit rows, counters, upload rows) share one
// transaction, so one commit, one fsync, makes all of them durable. Every caller still gets its
// answer only after that commit: nothing is acknowledged before it is on disk (for SQLite, after
// its WAL sync: db/sqlite-durable.ts). What gets batched is whatever arrived while the previous
// commit was running (or in the same turn of the event loop), so an idle server adds no waiting.
import type { Db } from './database.js';

/** A unit of work: runs in a transaction shared with others, so it must only use `trx`. */
export type Work<T> = (trx: Db) => Promise<T>;

interface Pending {
  work: Work<unknown>;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

export interface GroupCommitOptions {
  /** Batches committing at once: 1 for SQLite (one connection), a few for PostgreSQL's pool. */
  concurrency: number;
  /** Most units in one transaction (bounds how long one commit holds the database). */
  maxBatch?: number;
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
  run<T>(work: Work<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve: resolve as (v: unknown) => void, reject });
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
      results = await this.transact(async (trx) => {
        const out: unknown[] = [];
        for (const p of batch) out.push(await p.work(trx));
        return out;
      });
    } catch {
      // One unit failed (or the commit did): none of the batch is written. Each runs again in a
      // transaction of its own, so only the units that fail alone fail, with their own error.
      await Promise.all(batch.map((p) => this.alone(p)));
      return;
    }
    for (const [i, p] of batch.entries()) p.resolve(results[i]);
  }

  /**
   * (A failed COMMIT keeps its own error: the SQLite driver skips the rollback of a transaction
   * a full disk already ended, which would otherwise hide the SQLITE_FULL that makes a 503.)
   */
  private transact<T>(fn: Work<T>): Promise<T> {
    return this.db.transaction().execute(fn);
  }

  private async alone(p: Pending): Promise<void> {
    try {
      p.resolve(await this.transact((trx) => p.work(trx)));
    } catch (err) {
      p.reject(err);
    }
  }
}
