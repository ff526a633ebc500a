// Queries built and compiled once, run many times with new parameter values. Kysely otherwise
// rebuilds the query tree and recompiles its SQL on every call, which was about half the CPU of a
// small request; hot paths (authentication on every request) use this instead.
import type SQLite from 'better-sqlite3';
import { type Compilable, type CompiledQuery, SelectQueryNode } from 'kysely';
import type { Db } from './database.js';

/**
 * SQLite databases whose prepared queries may skip Kysely's executor (db/database.ts registers
 * each). better-sqlite3 is synchronous and has one connection, so Kysely's per-query promise
 * chain (connection provider, mutex, driver) was overhead on every statement of every request;
 * the statement itself comes from the same statement cache.
 */
const directSqlite = new WeakMap<Db, { sqlite: SQLite.Database; reads: SharedReads }>();

export function runPreparedDirectly(db: Db, sqlite: SQLite.Database): void {
  directSqlite.set(db, { sqlite, reads: new SharedReads(sqlite) });
}

interface QueuedRead {
  stmt: SQLite.Statement;
  parameters: unknown[];
  /** rows as arrays of column values (Prepared.firstValues) */
  raw: boolean;
  resolve(rows: unknown[]): void;
  reject(err: unknown): void;
  /** Runs the read through Kysely instead (the connection is in a transaction at flush time). */
  alone(): void;
}

/**
 * Prepared reads on the database itself share one read transaction per turn of the event loop.
 * In WAL mode each statement outside a transaction begins and ends a read transaction of its own
 * (read-mark locks in the shared memory, by fcntl): 15-25 µs inside a busy server, against 1-4 µs
 * for the statement itself, and a small download made two such reads. Whatever reads
 * are asked for in one turn (requests parsed together) run back to back in one BEGIN…COMMIT, on
 * one snapshot no older than the turn.
 */
class SharedReads {
  private queue: QueuedRead[] = [];
  private readonly begin;
  private readonly commit;

  constructor(private readonly sqlite: SQLite.Database) {
    this.begin = () => sqlite.prepare('BEGIN');
    this.commit = () => sqlite.prepare('COMMIT');
  }

  read(read: QueuedRead): void {
    if (this.queue.push(read) === 1) setImmediate(() => this.flush());
  }

  private flush(): void {
    const batch = this.queue;
    this.queue = [];
    // A transaction left open across an await (Kysely's, on the one connection) would let these
    // reads see its uncommitted writes: they wait for it in Kysely's queue instead.
    if (this.sqlite.inTransaction || !this.sqlite.open) {
      for (const r of batch) r.alone();
      return;
    }
    const shared = batch.length > 1 && this.attempt(() => this.begin().run());
    for (const r of batch) this.run(r);
    // Ending a read transaction does not fail; if it ever did, what it read is answered already,
    // and a throw here (a timer's callback) would end the process.
    if (shared && this.sqlite.inTransaction && !this.attempt(() => this.commit().run()))
      this.attempt(() => this.sqlite.exec('ROLLBACK'));
  }

  /** Runs `step`; false if it threw. */
  private attempt(step: () => void): boolean {
    try {
      step();
      return true;
    } catch {
      return false;
    }
  }

  private run(r: QueuedRead): void {
    try {
      r.resolve(allRows(r.stmt, r.parameters, r.raw));
    } catch (err) {
      r.reject(err);
    }
  }
}

/**
 * Runs a statement that returns rows; `raw`: each row as its column values. The statement comes
 * from the shared cache (one per SQL text), so raw mode is set only for this run.
 */
function allRows(stmt: SQLite.Statement, parameters: unknown[], raw: boolean): unknown[] {
  if (!raw) return stmt.all(parameters);
  stmt.raw(true);
  try {
    return stmt.all(parameters);
  } finally {
    stmt.raw(false);
  }
}

/**
 * Makes objects with `columns` as keys from a row's values (from `offset` on), all of one shape.
 * better-sqlite3 builds each row object key by key through V8's API, which for a thirty-column
 * row cost more than the query itself, and splitting such a row into two objects key by key left
 * both in V8's slow dictionary mode; an object literal is made at once with a fixed shape. The
 * literal is compiled from column names written in this code, never from input.
 */
export function rowOfValues<T>(columns: readonly string[], offset = 0): (values: unknown[]) => T {
  const fields = columns.map((c, i) => `${JSON.stringify(c)}: values[${offset + i}]`);
  return new Function('values', `return { ${fields.join(', ')} };`) as (values: unknown[]) => T;
}

/** Marks where the i-th argument goes; replaced in the compiled parameters, never sent. */
const slot = (i: number) => `\u0000remessa-param-${i}\u0000`;

export interface Prepared<A extends unknown[], R> {
  /** Every row. `db` may be a transaction. */
  all(args: A, db?: Db): Promise<R[]>;
  /** The first row, or undefined. */
  first(args: A, db?: Db): Promise<R | undefined>;
  /**
   * The first row's column values in the order the query selects them, or undefined: for a hot
   * read of many columns, made into objects with rowOfValues.
   */
  firstValues(args: A, db?: Db): Promise<unknown[] | undefined>;
  /**
   * Runs an INSERT of one row, written without RETURNING, and resolves with the new row's id.
   * SQLite only (PostgreSQL reports no such id): SQLite's RETURNING first collects its rows in a
   * temporary table, which made a download's audit insert cost half as much again.
   */
  insertId(args: A, db?: Db): Promise<number>;
}

/**
 * Compiles `build(p)` once, where `p(i)` stands for the i-th argument of each run (as a value of
 * whatever type the query expects). Other values in the query are constants of the compiled SQL.
 */
export function prepare<A extends unknown[], R>(
  db: Db,
  arity: A['length'],
  build: (p: <T>(i: number) => T) => Compilable<R>,
): Prepared<A, R> {
  const compiled: CompiledQuery<R> = build(<T>(i: number) => slot(i) as T).compile();
  // For each compiled parameter: the argument it takes, or its constant value.
  const sources = compiled.parameters.map((value): { arg: number } | { value: unknown } => {
    for (let i = 0; i < arity; i++) if (value === slot(i)) return { arg: i };
    return { value };
  });
  const used = new Set(sources.flatMap((s) => ('arg' in s ? [s.arg] : [])));
  if (used.size !== arity) throw new Error(`prepared query uses ${used.size} of its ${arity} arguments`);
  const registered = directSqlite.get(db);
  const sqlite = registered?.sqlite;
  const isRead = SelectQueryNode.is(compiled.query);
  /**
   * May this run skip Kysely? Inside a transaction (`on` is one): yes, it holds the one connection
   * and the durable driver sees the write (db/sqlite-durable.ts marks it on prepare). On the
   * database itself: only a read, and only while no transaction is open, which it would otherwise
   * see uncommitted; a write there goes through Kysely, whose release waits for the WAL sync.
   */
  const direct = (on: Db) => sqlite && (on.isTransaction || (isRead && on === db && !sqlite.inTransaction));
  const query = (on: Db, parameters: unknown[]) => on.executeQuery<R>({ ...compiled, parameters });
  const viaKysely = async (on: Db, parameters: unknown[]) => (await query(on, parameters)).rows;
  const argsOf = (args: A) => sources.map((s) => ('arg' in s ? args[s.arg] : s.value));
  const run = async (args: A, on: Db, raw: boolean): Promise<unknown[]> => {
    const parameters = argsOf(args);
    const kysely = async () => {
      const rows = await viaKysely(on, parameters);
      return raw ? rows.map((row) => Object.values(row as object)) : rows;
    };
    if (!direct(on)) return kysely();
    const stmt = sqlite!.prepare(compiled.sql);
    if (on === db && isRead)
      return new Promise<unknown[]>((resolve, reject) =>
        registered!.reads.read({
          stmt,
          parameters,
          raw,
          resolve,
          reject,
          alone: () => kysely().then(resolve, reject),
        }),
      );
    if (stmt.reader) return allRows(stmt, parameters, raw);
    stmt.run(parameters);
    return [];
  };
  return {
    all: (args, on = db) => run(args, on, false) as Promise<R[]>,
    first: async (args, on = db) => (await run(args, on, false))[0] as R | undefined,
    firstValues: async (args, on = db) => (await run(args, on, true))[0] as unknown[] | undefined,
    insertId: async (args, on = db) => {
      const parameters = argsOf(args);
      const id = direct(on)
        ? sqlite!.prepare(compiled.sql).run(parameters).lastInsertRowid
        : (await query(on, parameters)).insertId;
      if (id === undefined) throw new Error('insertId: the database reported no id for the new row');
      return Number(id);
    },
  };
}
