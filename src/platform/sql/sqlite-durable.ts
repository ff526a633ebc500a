// SQLite with commits made durable off the event loop.
//
// With synchronous=FULL, every COMMIT fsyncs the WAL inside better-sqlite3's synchronous call: the
// whole process stops for the disk, a few milliseconds per commit, and nothing else (HTTP parsing,
// other requests' reads, responses) runs meanwhile. That was the ceiling of small requests.
// Here SQLite runs with synchronous=NORMAL, which in WAL mode writes a commit's frames
// to the WAL file without syncing it, and the caller who wrote is answered only after an
// fdatasync of that file has completed on libuv's thread pool. The guarantee is FULL's (an
// acknowledged write is on disk: the WAL holds every committed frame, and checkpoints sync the WAL
// before copying it), the wait is the same, but the event loop keeps serving, and one fdatasync
// covers every commit made before it started (group commit across requests for free).
//
// Who waits: whoever held the connection and ran a write statement, when Kysely releases the
// connection (after the transaction's COMMIT, or after an autocommit write). Reads never wait.
// Another request may read a committed row before its writer has been answered; that row was
// never acknowledged, so a crash that loses it loses nothing anyone was promised.
import { closeSync, fsyncSync, openSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import path from 'node:path';
import type SQLite from 'better-sqlite3';
import { type DatabaseConnection, SqliteDialect, SqliteDriver } from 'kysely';
import { WalCheckpointer } from './wal-checkpointer.js';

/**
 * Statements that do not write rows themselves (a transaction's writes mark it dirty). SQLite calls
 * most of them read-only already, but not BEGIN IMMEDIATE or EXCLUSIVE.
 */
const CONTROL = /^\s*(begin|commit|end|rollback|savepoint|release)\b/i;

/** Pages in the WAL past which this connection checkpoints by itself (SQLite's default: 1,000). */
const BACKSTOP_PAGES = 10_000;

/** Write statements after which checkpoints move to their own thread (a few seconds of uploads). */
export const WRITES_BEFORE_CHECKPOINT_THREAD = 2_000;

/**
 * fdatasyncs of the WAL running at once: a write after the latest sync began need not wait for it.
 * Durable group commits on SQLite run as many batches at once (db/database.ts), each holding its
 * slot until its sync is done. Four of each were no better on a disk whose sync takes 250-600 µs
 * (docs/benchmarks.md), nor four syncs behind two batches on one of 80-90 µs.
 */
export const SYNCS_IN_FLIGHT = 2;

/** fdatasyncs of the WAL: `wait(n)` resolves once a sync that started after write n is done. */
class WalSync {
  private written = 0;
  private synced = 0;
  /** Syncs under way, each with the last write it covers. */
  private readonly running = new Set<{ upTo: number; done: Promise<void> }>();
  private handle: Promise<FileHandle> | null = null;

  constructor(private readonly walPath: string) {}

  /** A write statement ran: returns its sequence number. */
  wrote(): number {
    return ++this.written;
  }

  async wait(seq: number): Promise<void> {
    while (this.synced < seq) {
      let covering = [...this.running].find((sync) => sync.upTo >= seq);
      // One more sync at once (up to SYNCS_IN_FLIGHT) rather than after the one under way: a
      // small download then cost ~20% less CPU (docs/benchmarks.md).
      if (!covering && this.running.size < SYNCS_IN_FLIGHT) covering = this.syncOnce();
      // A failed sync (EIO) fails its waiters; the next wait tries a new one.
      await (covering?.done ?? Promise.race([...this.running].map((sync) => sync.done)));
    }
  }

  private syncOnce(): { upTo: number; done: Promise<void> } {
    const upTo = this.written;
    const done = (async () => {
      this.handle ??= open(this.walPath, 'r+');
      const fh = await this.handle;
      await fh.datasync();
      // Syncs may end out of order: what is durable is the most any finished one covered.
      this.synced = Math.max(this.synced, upTo);
    })();
    const sync = { upTo, done };
    this.running.add(sync);
    const forget = () => this.running.delete(sync);
    void done.then(forget, forget);
    return sync;
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.running].map((sync) => sync.done));
    const fh = await this.handle?.catch(() => null);
    await fh?.close();
    this.handle = null;
  }
}

/** How long writes released without waiting may stay unsynced when no other sync covers them. */
const UNWAITED_SYNC_MS = 20;

export interface DurableSqlite {
  dialect: SqliteDialect;
  /**
   * Releases the transaction that holds the connection now without waiting for its WAL sync. For
   * writes nobody is answered about (a download's outcome once its response is over): they are
   * in the OS's hands at once (a killed process loses nothing) and on disk with the next sync,
   * some other writer's or one UNWAITED_SYNC_MS later; only a power cut in between loses them.
   */
  releaseUnwaited(): void;
}

/**
 * Sets the database (at `file`) up for durable commits off the event loop; returns its Kysely
 * dialect and the way to release a transaction without waiting. Call after any other wrapping of
 * `sqlite.prepare` (the statement cache): this one sees which statements write.
 */
export function durableSqliteDialect(sqlite: SQLite.Database, file: string): DurableSqlite {
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  // The WAL exists from the first transaction on; make it, and its directory entry, durable now,
  // so the fd the syncs use is the file SQLite writes for as long as this connection is open.
  sqlite.exec('begin immediate; commit');
  const walPath = `${file}-wal`;
  const dirFd = openSync(path.dirname(file), 'r');
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
  const wal = new WalSync(walPath);
  // Once this connection has written enough for checkpoints to matter, they run in a thread of
  // their own (wal-checkpointer.ts), and SQLite's automatic one here only past 40 MiB (back to the
  // usual 4 MiB if that thread fails). Until then, as SQLite does by default: a process that
  // writes little (the CLI, a server moving large files) does not carry the thread's ~6-10 MiB.
  let checkpointer: WalCheckpointer | null = null;
  const startCheckpointer = () => {
    sqlite.pragma(`wal_autocheckpoint = ${BACKSTOP_PAGES}`);
    checkpointer = new WalCheckpointer(file, () => {
      if (sqlite.open) sqlite.pragma('wal_autocheckpoint = 1000');
    });
  };
  let dirtySeq = 0; // the last write of whoever holds the connection now (0: none)
  let unwaited = false; // releaseUnwaited() was called by whoever holds it
  // The last write released unwaited, and the timer that syncs it if nothing else has by then.
  let unwaitedSeq = 0;
  let unwaitedTimer: NodeJS.Timeout | null = null;
  const syncUnwaited = () => {
    unwaitedTimer = null;
    wal.wait(unwaitedSeq).catch(() => {
      // A failing disk fails the next waiting writer too, who reports it.
    });
  };
  const prepare = sqlite.prepare.bind(sqlite);
  sqlite.prepare = ((source: string) => {
    const stmt = prepare(source);
    // `readonly`, not `!reader`: an INSERT … RETURNING returns rows (a "reader") and writes all the
    // same; judged by `reader`, it was answered before its commit reached the disk.
    if (!stmt.readonly && !CONTROL.test(source)) {
      dirtySeq = wal.wrote();
      if (dirtySeq === WRITES_BEFORE_CHECKPOINT_THREAD) startCheckpointer();
    }
    return stmt;
  }) as typeof sqlite.prepare;

  class DurableSqliteDriver extends SqliteDriver {
    override async releaseConnection(): Promise<void> {
      const seq = dirtySeq;
      const wait = !unwaited;
      dirtySeq = 0;
      unwaited = false;
      // Free the connection first: others read and write while this caller waits for the disk.
      await super.releaseConnection();
      if (!seq) return;
      if (wait) return wal.wait(seq);
      unwaitedSeq = seq;
      unwaitedTimer ??= setTimeout(syncUnwaited, UNWAITED_SYNC_MS);
    }

    /**
     * A failed COMMIT (SQLITE_FULL) may already have ended the transaction: a ROLLBACK would then
     * fail with "no transaction is active" and hide the error that failed the commit.
     */
    override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
      if (sqlite.inTransaction) await super.rollbackTransaction(connection);
    }

    override async destroy(): Promise<void> {
      if (unwaitedTimer) {
        clearTimeout(unwaitedTimer);
        await wal.wait(unwaitedSeq).catch(() => {});
      }
      await checkpointer?.close();
      await wal.close();
      await super.destroy();
    }
  }

  const dialect = new (class extends SqliteDialect {
    override createDriver() {
      return new DurableSqliteDriver({ database: sqlite });
    }
  })({ database: sqlite });
  return {
    dialect,
    releaseUnwaited: () => {
      unwaited = true;
    },
  };
}
