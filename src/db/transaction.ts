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
 * opened here (test/units.test.ts checks that none opens its own).
 */
export async function inTransaction<T>(db: Db, fn: (trx: Db) => Promise<T>): Promise<T> {
  const effects: (() => void)[] = [];
  const result = await db.transaction().execute((trx) => {
    pending.set(trx, effects);
    return fn(trx);
  });
  for (const effect of effects) effect();
  return result;
}

/**
 * Runs `effect` once what `db` wrote is committed: after the commit of a transaction opened by
 * inTransaction(), at once for the database itself (its statements commit as they run).
 */
export function afterCommit(db: Db, effect: () => void): void {
  const queue = db.isTransaction ? pending.get(db) : undefined;
  if (queue) queue.push(effect);
  else effect();
}
