// Opens the metadata database: embedded SQLite in the data dir by default, PostgreSQL when
// REMESSA_DATABASE_URL is set. Everything above this file speaks Kysely and is dialect-agnostic.
import { mkdirSync } from 'node:fs';
import type { Socket } from 'node:net';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect } from 'kysely';
import type { Config } from '../../app/config.js';
import { CommitMarks } from './commit-marks.js';
import { runPreparedDirectly } from './compiled.js';
import { GroupCommit } from './group-commit.js';
import { type Dialect, migrate } from './migrations.js';
import type { Database } from './schema.js';
import { durableSqliteDialect, SYNCS_IN_FLIGHT } from './sqlite-durable.js';

export type Db = Kysely<Database>;

export interface OpenDatabase {
  db: Db;
  dialect: Dialect;
  /** PostgreSQL: connections of the pool by state (metrics); null for SQLite, which has none. */
  poolStats(): { total: number; idle: number; waiting: number } | null;
  /** Small writes of many requests in one transaction (audit rows, counters, upload rows). */
  commits: GroupCommit;
  /**
   * Group commits of units that only insert rows no one else writes (the audit row a download
   * commits before its first byte): on PostgreSQL a queue of its own whose batches may run side by
   * side, so a download never waits behind other work's batch; on SQLite the same as `commits`.
   */
  appends: GroupCommit;
  close(): Promise<void>;
}

/** Bounds on waiting for PostgreSQL (config.ts); absent, the defaults of REMESSA_*_TIMEOUT_SECONDS. */
type Timeouts = Partial<Pick<Config, 'connectTimeoutSeconds' | 'backendTimeoutSeconds'>>;

export async function openDatabase(
  config: Pick<Config, 'dataDir' | 'databaseUrl'> & Timeouts,
  onPoolError?: (err: Error) => void,
): Promise<OpenDatabase> {
  let db: Db;
  let dialect: Dialect;
  let poolStats: OpenDatabase['poolStats'] = () => null;
  let releaseUnwaited: (() => void) | undefined;
  if (config.databaseUrl) {
    dialect = 'postgres';
    // Loaded only for PostgreSQL: the embedded default need not carry the driver.
    const { default: pg } = await import('pg');
    // int8 (bigint) columns hold millisecond times and byte lengths: all well inside 2^53.
    pg.types.setTypeParser(20, (v) => Number.parseInt(v, 10));
    const pool = new pg.Pool({
      connectionString: config.databaseUrl,
      max: 10,
      // Opening a connection (TCP and PostgreSQL's handshake) and waiting for a free one are
      // bounded: a server that accepts and never answers held them for the whole outage.
      connectionTimeoutMillis: (config.connectTimeoutSeconds ?? 5) * 1000,
      // The kernel probes idle connections, so one a firewall or a dead host dropped is noticed.
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    });
    const silenceMs = (config.backendTimeoutSeconds ?? 30) * 1000;
    // An idle connection dropped by the server (restart, idle timeout) is an 'error' event on the
    // pool; unhandled it would crash the process. The pool discards that client and the next query
    // opens a fresh one.
    pool.on('error', (err) => onPoolError?.(err));
    // A client checked out when the connection drops emits 'error' too, and the pool listens only
    // to idle ones: unhandled, a PostgreSQL restart in the middle of a query killed the process.
    // The query itself fails with the same error, so the request gets its 500.
    pool.on('connect', (client) => {
      client.on('error', (err) => onPoolError?.(err));
      boundSilence(client, silenceMs);
    });
    poolStats = () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount });
    db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  } else {
    dialect = 'sqlite';
    mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
    const file = path.join(config.dataDir, 'remessa.db');
    const sqlite = new SQLite(file);
    sqlite.pragma('busy_timeout = 5000');
    sqlite.pragma('foreign_keys = ON');
    cacheStatements(sqlite);
    // WAL lets the CLI and the server share the file; a writer is answered once its commit is
    // synced to disk, without stopping the event loop for the sync (sqlite-durable.ts).
    const durable = durableSqliteDialect(sqlite, file);
    releaseUnwaited = durable.releaseUnwaited;
    db = new Kysely<Database>({ dialect: durable.dialect });
    runPreparedDirectly(db, sqlite);
  }
  try {
    await migrate(db, dialect);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  // PostgreSQL: one batch at a time per instance; batches of several instances run side by side.
  // Two batches could take uploads' area locks in opposite orders (a deadlock, found only after
  // deadlock_timeout, then every unit again alone), so a batch takes every lock its units declare,
  // in ascending order, before any unit runs (RunOptions.locks). Four batches at once in one
  // instance were slower for uploads into one area (docs/benchmarks.md): they only
  // queue on its lock, in smaller batches. SQLite runs one transaction at a time on its one
  // connection anyway, but a batch keeps its slot while its WAL sync runs: as many batches as
  // syncs may be in flight, so a batch commits while earlier ones wait for the disk.
  const commits = new GroupCommit(db, {
    concurrency: dialect === 'sqlite' ? SYNCS_IN_FLIGHT : 1,
    releaseUnwaited,
    dialect,
    // A COMMIT whose answer a broken connection lost: did it commit? (SQLite's commit is local.)
    marks: dialect === 'postgres' ? new CommitMarks(db) : undefined,
  });
  // Inserts into a table without unique keys or foreign keys take no lock another batch could wait
  // for, so on PostgreSQL their batches need not take turns with the others (or with each other).
  // Queued behind an outcome or upload batch, a download's first row waited for several round
  // trips per unit of that batch: 450-650 small downloads/s with one queue, 900-1,100 with this one
  // (docs/benchmarks.md). SQLite writes on one connection: nothing to gain there.
  const appends =
    dialect === 'postgres'
      ? new GroupCommit(db, { concurrency: 4, dialect, marks: new CommitMarks(db) })
      : commits;
  const close = async () => {
    // Work queued by requests that ended just before (a download's closing audit row) commits first.
    await Promise.all([commits.idle(), appends.idle()]);
    await db.destroy();
  };
  return { db, dialect, poolStats, commits, appends, close };
}

/**
 * A query that receives no byte for `ms` fails with ETIMEDOUT (a 503 to its request) and its
 * connection is closed: the pool opens a fresh one, and nothing else runs on a connection whose
 * answer is still out (a ROLLBACK queued behind the silent statement would never be sent, and the
 * next user would inherit the open transaction). The socket's own inactivity timer does the
 * counting, so a query costs nothing more; an idle connection is silent by right and is left alone.
 */
function boundSilence(client: object, ms: number): void {
  const c = client as { connection: { stream: Socket }; _getActiveQuery?(): unknown };
  const socket = c.connection.stream;
  socket.setTimeout(ms);
  socket.on('timeout', () => {
    if (c._getActiveQuery && c._getActiveQuery() == null) return;
    const err = Object.assign(new Error(`PostgreSQL sent nothing for ${ms / 1000} s`), { code: 'ETIMEDOUT' });
    socket.destroy(err);
  });
}

/**
 * Kysely's SQLite driver prepares every query anew, which cost more CPU than running it (a third of
 * a small download's). The same SQL text gets the same prepared statement; the cache is bounded,
 * as `in (…)` lists make texts of every length. (Nothing here streams: a statement in the middle
 * of iterate() could not be reused.)
 */
function cacheStatements(sqlite: SQLite.Database, max = 500): void {
  const prepare = sqlite.prepare.bind(sqlite);
  const cache = new Map<string, SQLite.Statement>();
  sqlite.prepare = ((source: string) => {
    let stmt = cache.get(source);
    if (!stmt) {
      if (cache.size >= max) cache.clear();
      stmt = prepare(source);
      cache.set(source, stmt);
    }
    return stmt;
  }) as typeof sqlite.prepare;
}

/** Where a postgres:// URL points, for messages: host:port/database, never the credentials. */
export function postgresAddress(databaseUrl: string): string {
  try {
    const url = new URL(databaseUrl);
    // `?host=/run/postgresql` names a socket directory instead of a host.
    const host = url.searchParams.get('host') ?? (url.hostname || 'localhost');
    return `${host}:${url.port || '5432'}${url.pathname.length > 1 ? url.pathname : ''}`;
  } catch {
    return 'REMESSA_DATABASE_URL';
  }
}

/** True when a write failed on a unique constraint, in either dialect. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return (
    e?.code === '23505' ||
    e?.code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    /UNIQUE constraint/.test(e?.message ?? '')
  );
}
