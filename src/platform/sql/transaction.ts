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
  let worked = false;
  let result: T;
  try {
    result = await db.transaction().execute(async (trx) => {
      pending.set(trx, effects);
      const out = await fn(trx);
      worked = true;
      return out;
    });
  } catch (err) {
    // Failing after its work was done, the COMMIT itself (or the sync that makes it durable) failed.
    if (worked && !rolledBack(err)) throw new CommitUnknownError(err, () => runEffects(effects));
    throw err;
  }
  runEffects(effects);
  return result;
}

function runEffects(effects: (() => void)[]): void {
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
}

/**
 * A transaction's work was done and its COMMIT sent, but the database's answer was lost (the
 * connection broke) or its commit was not made durable (the WAL sync failed): it may or may not
 * have committed. Whoever holds one must neither run the work again (it may be there already) nor
 * undo what the work relied on (a blob a committed row may own).
 */
export class CommitUnknownError extends Error {
  constructor(
    cause: unknown,
    /** Runs what the transaction registered with afterCommit(), once it is known to have committed. */
    readonly committed: () => void,
  ) {
    super(`the database did not confirm the commit, which may or may not have happened: ${String(cause)}`, {
      cause,
    });
    this.name = 'CommitUnknownError';
  }
}

/**
 * Whether a failed COMMIT is known not to have committed: the database answered it with an error
 * that ends the transaction. SQLite commits in this process, atomically: any error of its own. From
 * PostgreSQL, an integrity (23), data (22) or rollback (40) class SQLSTATE. Anything else (a broken
 * connection has no SQLSTATE; a server shutting down answers 57P01 whenever it stops) is unknown.
 */
function rolledBack(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  if (typeof code !== 'string') return false;
  return code.startsWith('SQLITE_') || /^(22|23|40)[0-9A-Z]{3}$/.test(code);
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
