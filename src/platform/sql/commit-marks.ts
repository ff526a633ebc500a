// How a group-commit batch learns whether it committed when the answer to its COMMIT was lost
// (PostgreSQL: the connection broke after the COMMIT was sent). Each batch writes a fresh mark in
// its own transaction; the mark exists exactly when the batch committed. Asking inserts the same
// mark in a transaction that is then rolled back: the primary key makes the insert wait while the
// batch's transaction is still ending, then it finds the mark (the batch committed) or not (the
// batch's transaction is over without committing, and never will: its units may run again). The
// probe never commits, so asking twice cannot find a mark the first asking left. SQLite commits
// in this process and needs none (db/transaction.ts).
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from './database.js';

/** Marks are cleared after this long; asking about one takes seconds at most. */
const KEEP_MS = 10 * 60_000;

/** How long asking waits for the batch's transaction to end (a half-open connection's may not). */
const LOCK_TIMEOUT = '10s';

/** Attempts at asking, with growing waits between them (the database may be restarting). */
const ASK_DELAYS_MS = [0, 250, 1000, 2000, 4000];

export class CommitMarks {
  // Real time, not the server's clock (which tests move forward by days): a mark must outlive the
  // asking about it.
  constructor(private readonly db: Db) {}

  /** In a batch's transaction: writes a fresh mark (clearing old ones) and returns it. */
  async write(trx: Db): Promise<string> {
    const mark = randomBytes(12).toString('base64url');
    const now = Date.now();
    await sql`with old as (delete from commit_marks where at < ${now - KEEP_MS})
      insert into commit_marks (id, at) values (${mark}, ${now})`.execute(trx);
    return mark;
  }

  /**
   * Whether the transaction that wrote `mark` committed. Throws when that cannot be learned (the
   * database stays unreachable, or the transaction does not end within LOCK_TIMEOUT).
   */
  async committed(mark: string): Promise<boolean> {
    let lastError: unknown;
    for (const delay of ASK_DELAYS_MS) {
      if (delay) await new Promise((resolve) => setTimeout(resolve, delay));
      try {
        return await this.db.connection().execute(async (conn) => {
          await sql`begin`.execute(conn);
          try {
            await sql.raw(`set local lock_timeout = '${LOCK_TIMEOUT}'`).execute(conn);
            const probe = await sql`insert into commit_marks (id, at) values (${mark}, ${Date.now()})
              on conflict (id) do nothing returning id`.execute(conn);
            return probe.rows.length === 0;
          } finally {
            await sql`rollback`.execute(conn);
          }
        });
      } catch (err) {
        lastError = err;
      }
    }
    throw lastError;
  }
}
