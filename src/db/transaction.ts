// Transactions that know when they have committed. Some effects of a write belong to its commit,
// not to the statement: a metric counted when an audit row is inserted was counted twice when the
// group commit's batch failed and each unit ran again alone (group-commit.ts), and counted for
// rows a rollback took back. Such effects are registered with afterCommit() and run only once the
// transaction has committed (and, on SQLite, its WAL sync is done: the driver's release).
import type { Db } from './database.js';

/** What afterCommit() queued for each open transaction made by inTransaction(). */
const pending = new WeakMap<Db, (() => void)[]>();

/**
 * Runs `fn` in a new transaction; once it has committed, runs what `fn` registered with
 * afterCommit(), in order. If it rolls back, those never run. Every transaction in the code base is
 * opened here (test/group-commit.test.ts checks that none opens its own).
 */
export async function inTransaction<T>(db: Db, fn: (trx: Db) => Promise<T>): Promise<T> {
  const effects: (() => void)[] = [];
  const result = await db.transaction().execute((trx) => {
    pending.set(trx, effects);
    return fn(trx);
  });
  for (const effect of effects) {
    // The transaction has committed: a failing effect must not make it look failed (a group
    // commit would then run its units again, writing every row twice).
    try {
      effect();
    } catch (err) {
      const warning = new Error(`an effect after commit failed: ${String(err)}`, { cause: err });
      warning.name = 'AfterCommitWarning';
      process.emitWarning(warning);
    }
  }
  return result;
}

/**
 * Runs `effect` once what `db` wrote is committed: after the commit of a transaction opened by
 * inTransaction(), at once for the database itself (its statements commit as they run). Throws
 * for a transaction opened any other way (or a handle derived from one), whose commit it cannot
 * see: running the effect at once would tell of writes that may yet roll back.
 */
export function afterCommit(db: Db, effect: () => void): void {
  if (!db.isTransaction) {
    effect();
    return;
  }
  const queue = pending.get(db);
  if (!queue) throw new Error('afterCommit: a transaction not opened by inTransaction()');
  queue.push(effect);
}
