// Hot queries: built and compiled once, run many times with new parameter values. Kysely
// otherwise rebuilds the query tree and recompiles its SQL on every call, which was about half the
// CPU of a small request; hot paths (authentication on every request, every upload's and
// download's rows) use this instead.
//
// The contract (compiledQuery is the only way code outside src/platform/sql/ prepares a query):
// - `compiledQuery(db, (param: Param<P>) => query)` builds `query` once and compiles it. P names
//   the parameters and their types, e.g. `Param<{ fileId: number; size: number }>`; the rows' type
//   is the query's own.
// - `param('fileId')` stands for the parameter fileId wherever the query takes a value of its type;
//   a name may stand in several places. `param.list('names', n)` stands for a list parameter of
//   exactly n values (an `in (…)`). Any other value in the query is a constant of the compiled SQL.
// - Each run takes the parameters as one object of type P (`q.first({ fileId, size })`): a
//   misspelt or missing name, a value of another type, or (in an object literal) a name P does
//   not have is a type error, so two values of one type cannot be swapped unseen. A parameter the
//   query never uses, or one not given after all, fails its first run.
// - A run may be given a transaction instead of the database (`q.first(params, trx)`).
// - SQLite: the statement is better-sqlite3's, prepared once per SQL text (database.ts) and run
//   straight on it where that is safe (inside a transaction, or a read while none is open, the
//   reads of one event-loop turn sharing one read transaction); otherwise, and on PostgreSQL, the
//   compiled query goes through Kysely's executor as it is, never rebuilt or recompiled.
// - How it runs stays in this file: features see compiledQuery, Param, HotQuery and rowOfValues,
//   and nothing outside src/platform/sql/ compiles a query or prepares a statement itself
//   (test/compiled-queries.test.ts checks).
import type SQLite from 'better-sqlite3';
import { type Compilable, type CompiledQuery, SelectQueryNode } from 'kysely';
import type { Db } from './database.js';

/**
 * SQLite databases whose compiled queries may skip Kysely's executor (database.ts registers
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
  /** rows as arrays of column values (HotQuery.firstValues) */
  raw: boolean;
  resolve(rows: unknown[]): void;
  reject(err: unknown): void;
  /** Runs the read through Kysely instead (the connection is in a transaction at flush time). */
  alone(): void;
}

/**
 * Compiled reads on the database itself share one read transaction per turn of the event loop.
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

/** The parameters of a query by name, with their types. */
type Params = object;

/** The names of P's list parameters. */
type ListName<P> = { [K in keyof P & string]: P[K] extends readonly unknown[] ? K : never }[keyof P & string];

/**
 * Stands for a parameter in the query being built: `param('fileId')` as a value of P's fileId, to
 * be bound by name in each run; replaced in the compiled parameters, never sent.
 */
export interface Param<P extends Params> {
  <K extends keyof P & string>(name: K): P[K];
  /** The list parameter `name` of exactly `count` values, each a parameter of its own. */
  list<K extends ListName<P>>(name: K, count: number): P[K];
}

/** The rows a query builder answers (its execute()'s). */
type RowOf<Q> = Q extends { execute(): Promise<(infer R)[]> } ? R : unknown;

export interface HotQuery<P extends Params, R> {
  /** Every row. `db` may be a transaction. */
  all(params: P, db?: Db): Promise<R[]>;
  /** The first row, or undefined. */
  first(params: P, db?: Db): Promise<R | undefined>;
  /**
   * The first row's column values in the order the query selects them, or undefined: for a hot
   * read of many columns, made into objects with rowOfValues.
   */
  firstValues(params: P, db?: Db): Promise<unknown[] | undefined>;
  /**
   * Runs an INSERT of one row, written without RETURNING, and resolves with the new row's id.
   * SQLite only (PostgreSQL reports no such id): SQLite's RETURNING first collects its rows in a
   * temporary table, which made a download's audit insert cost half as much again.
   */
  insertId(params: P, db?: Db): Promise<number>;
}

/** Where a compiled parameter's value comes from: a parameter (an item of a list one), or a constant. */
type Source = { name: string; index?: number } | { value: unknown };

/**
 * Compiles the query `build(param)` returns, once; each run binds its parameters by name (the
 * contract at the top of this file).
 */
export function compiledQuery<P extends Params = Record<string, never>, Q extends Compilable = Compilable>(
  db: Db,
  build: (param: Param<P>) => Q,
): HotQuery<P, RowOf<Q>> {
  type R = RowOf<Q>;
  // Each place a parameter stands for: a marker no value of the application's could equal.
  const slots = new Map<string, Source>();
  const slot = (name: string, index?: number) => {
    const marker = `\u0000remessa-param-${name}${index === undefined ? '' : `[${index}]`}\u0000`;
    slots.set(marker, index === undefined ? { name } : { name, index });
    return marker;
  };
  const param = ((name: string) => slot(name)) as Param<P>;
  param.list = ((name: string, count: number) =>
    Array.from({ length: count }, (_, i) => slot(name, i))) as Param<P>['list'];
  const compiled: CompiledQuery<R> = build(param).compile();
  const sources = compiled.parameters.map(
    (value) => (typeof value === 'string' && slots.get(value)) || { value },
  );
  const bindFast = binder(sources);
  // The first run also checks the names it was given against those the query uses.
  let bind = (params: P) => {
    checkNames(params, sources);
    bind = bindFast;
    return bindFast(params);
  };
  const registered = directSqlite.get(db);
  const sqlite = registered?.sqlite;
  const isRead = SelectQueryNode.is(compiled.query);
  /**
   * May this run skip Kysely? Inside a transaction (`on` is one): yes, it holds the one connection
   * and the durable driver sees the write (sqlite-durable.ts marks it on prepare). On the
   * database itself: only a read, and only while no transaction is open, which it would otherwise
   * see uncommitted; a write there goes through Kysely, whose release waits for the WAL sync.
   */
  const direct = (on: Db) => sqlite && (on.isTransaction || (isRead && on === db && !sqlite.inTransaction));
  const query = (on: Db, parameters: unknown[]) => on.executeQuery<R>({ ...compiled, parameters });
  const viaKysely = async (on: Db, parameters: unknown[]) => (await query(on, parameters)).rows;
  const argsOf = (params: P) => bind(params);
  const run = async (params: P, on: Db, raw: boolean): Promise<unknown[]> => {
    const parameters = argsOf(params);
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
    all: (params, on = db) => run(params, on, false) as Promise<R[]>,
    first: async (params, on = db) => (await run(params, on, false))[0] as R | undefined,
    firstValues: async (params, on = db) => (await run(params, on, true))[0] as unknown[] | undefined,
    insertId: async (params, on = db) => {
      const parameters = argsOf(params);
      const id = direct(on)
        ? sqlite!.prepare(compiled.sql).run(parameters).lastInsertRowid
        : (await query(on, parameters)).insertId;
      if (id === undefined) throw new Error('insertId: the database reported no id for the new row');
      return Number(id);
    },
  };
}

/**
 * The compiled parameters of a run from its parameters by name, as one function compiled from
 * the sources (an array literal of property reads: no loop, no closure per value). The names in
 * it are this code's own, written where the query is built, never input.
 */
function binder(sources: Source[]): (params: object) => unknown[] {
  const constants: unknown[] = [];
  const lists = new Map<string, number>();
  const items = sources.map((s) => {
    if ('value' in s) return `c[${constants.push(s.value) - 1}]`;
    const read = `p[${JSON.stringify(s.name)}]`;
    if (s.index === undefined) return read;
    lists.set(s.name, Math.max(lists.get(s.name) ?? 0, s.index + 1));
    return `${read}[${s.index}]`;
  });
  const checks = [...lists].map(([name, count]) => {
    const read = `p[${JSON.stringify(name)}]`;
    return `if (${read}.length !== ${count}) throw new Error(${JSON.stringify(`compiled query: ${name} must have ${count} values`)});`;
  });
  return new Function('c', `return (p) => { ${checks.join(' ')} return [${items.join(', ')}]; };`)(constants);
}

/** Fails unless `params` gives exactly the parameters the query uses. */
function checkNames(params: object, sources: Source[]): void {
  const used = new Set(sources.flatMap((s) => ('name' in s ? [s.name] : [])));
  for (const name of Object.keys(params))
    if (!used.has(name)) throw new Error(`compiled query: parameter ${name} is not used by the query`);
  for (const name of used)
    if (!(name in params)) throw new Error(`compiled query: parameter ${name} not given`);
}
