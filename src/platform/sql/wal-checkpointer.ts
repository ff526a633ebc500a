// Checkpoints of the SQLite WAL in a worker thread. A checkpoint copies committed pages from the
// WAL into the database file and fsyncs both; run by SQLite's automatic checkpoint, it happened
// inside whichever COMMIT crossed 1,000 pages, on the event loop, and stopped every request for
// two fsyncs (with small uploads kept in the database, about every hundred uploads: 280 µs of
// the JS thread per upload in a micro-benchmark of the upload transaction, 76 µs without).
// Here a second connection, in its own thread (started once a process has written a few thousand
// statements: sqlite-durable.ts), runs PASSIVE checkpoints: they never block the
// writer and copy only what is committed. SQLite's own automatic checkpoint stays as a backstop
// at a much larger size, should this thread stop.
import { Worker } from 'node:worker_threads';

/** How often the worker checkpoints (when nothing is new, a checkpoint only reads the WAL index). */
const INTERVAL_MS = 100;

export class WalCheckpointer {
  private readonly worker: Worker;
  private readonly exited: Promise<void>;
  private closed = false;

  constructor(file: string, onError: (err: Error) => void) {
    this.worker = new Worker(new URL('./wal-checkpoint-worker.js', import.meta.url), {
      workerData: { file, intervalMs: INTERVAL_MS },
      // A thread of a few MiB: it runs one prepared statement.
      resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4 },
    });
    this.exited = new Promise((resolve) => this.worker.once('exit', () => resolve()));
    this.worker.unref();
    this.worker.on('error', (err) => {
      if (!this.closed) onError(err);
    });
  }

  /** Stops the thread and closes its connection (before the main connection closes). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Held open until it has gone, or a process ending now would leave this wait unanswered.
    this.worker.ref();
    this.worker.postMessage('close');
    await this.exited;
  }
}
