// Advisory locks held until their transaction ends: PostgreSQL's pg_advisory_xact_lock, which
// serialises work of every instance (an area's name choice, say). SQLite runs one writer at a time
// and takes none, but keeps the same bookkeeping, so the rule below is checked on both dialects,
// where every test sees it.
//
// The rule: a group-commit batch takes every lock its units declared (RunOptions.locks), in
// ascending order, before any unit runs (group-commit.ts). A unit that took a lock it had not
// declared would take it midway through the batch, out of that order, and two instances' batches
// could then wait on each other in a cycle: PostgreSQL aborts one after deadlock_timeout and every
// unit of it runs again. So, in a batch's transaction, taking an undeclared lock throws.
import { sql } from 'kysely';
import type { Db } from './database.js';
import type { Dialect } from './migrations.js';

/** An advisory lock's two-number key (PostgreSQL's pg_advisory_xact_lock(a, b)). */
export type LockKey = readonly [number, number];

interface Held {
  keys: Set<string>;
  /** A group-commit batch's transaction: its units may take only what it holds. */
  declaredOnly: boolean;
}

/** The locks each open transaction holds (a transaction's handle is the one its work is given). */
const held = new WeakMap<Db, Held>();

const idOf = (key: LockKey) => `${key[0]}/${key[1]}`;

async function acquire(trx: Db, dialect: Dialect, [a, b]: LockKey): Promise<void> {
  if (dialect === 'postgres') await sql`select pg_advisory_xact_lock(${a}, ${b})`.execute(trx);
}

/**
 * For a group-commit batch (or a unit of one run alone): takes `keys`, each once, in ascending
 * order; from then on the transaction's work may take only these (takeLock).
 */
export async function takeBatchLocks(trx: Db, dialect: Dialect, keys: readonly LockKey[]): Promise<void> {
  const unique = new Map(keys.map((key) => [idOf(key), key]));
  const sorted = [...unique.values()].sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  held.set(trx, { keys: new Set(unique.keys()), declaredOnly: true });
  for (const key of sorted) await acquire(trx, dialect, key);
}

/**
 * Takes `key` until `trx` ends (again: nothing to do). In a group-commit batch's transaction, only
 * a lock its units declared, which the batch already holds: any other throws.
 */
export async function takeLock(trx: Db, dialect: Dialect, key: LockKey): Promise<void> {
  if (!trx.isTransaction) throw new Error('an advisory lock needs a transaction to hold it');
  const id = idOf(key);
  const state = held.get(trx);
  if (state?.keys.has(id)) return;
  if (state?.declaredOnly)
    throw new Error(`lock ${id} taken in a group-commit unit that did not declare it (RunOptions.locks)`);
  if (state) state.keys.add(id);
  else held.set(trx, { keys: new Set([id]), declaredOnly: false });
  await acquire(trx, dialect, key);
}
