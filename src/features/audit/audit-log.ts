// The audit trail: one row per security- or transfer-relevant event (docs/operations.md).
import { sql } from 'kysely';
import type { Clock } from '../../platform/clock.js';
import { compiledQuery, type Param } from '../../platform/sql/compiled.js';
import type { Db } from '../../platform/sql/database.js';
import type { GroupCommit, MergedWork } from '../../platform/sql/group-commit.js';
import type { Dialect } from '../../platform/sql/migrations.js';
import type { AuditRow } from '../../platform/sql/schema.js';
import { afterCommit } from '../../platform/sql/transaction.js';
import { eventPrefix, userIs } from './audit-search.js';

export type AuditEventName =
  | 'user.created'
  | 'user.updated'
  | 'user.disabled'
  | 'user.enabled'
  | 'user.removed'
  | 'user.unlocked'
  | 'token.issued'
  | 'key.created'
  | 'key.revoked'
  | 'login'
  | 'login.failed'
  | 'login.oidc'
  | 'login.oidc.failed'
  | 'user.locked'
  | 'logout'
  | 'password.changed'
  | 'password.change_failed'
  | 'password.link_issued'
  | 'password.recovery_locked'
  | 'upload'
  | 'upload.failed'
  | 'download'
  | 'download.failed'
  | 'download.refused'
  | 'file.corrupt'
  | 'file.retired'
  | 'file.purged'
  | 'file.deleted'
  | 'pin.sent'
  | 'pin.failed'
  | 'link.created'
  | 'link.locked'
  | 'link.resent'
  | 'link.revoked'
  | 'link.changed'
  | 'notify.queued'
  | 'notify.sent'
  | 'notify.logged'
  | 'notify.failed'
  | 'notify.retried'
  | 'quota.warning'
  | 'request.created'
  | 'request.file_received'
  | 'request.closed'
  | 'request.completed';

export interface AuditEntry {
  event: AuditEventName;
  user?: string | null;
  /** The account that acted when it is not `user` (an admin changing another account or retrying a message). */
  actor?: string | null;
  remote?: string | null;
  fileId?: number | null;
  /** Free text or an object (stored as JSON). Never put a password, PIN or token here. */
  detail?: string | Record<string, unknown> | null;
}

/** An entry whose detail is an object (begin() adds to it). */
export type DetailedEntry = Omit<AuditEntry, 'detail'> & { detail: Record<string, unknown> };

export interface AuditFilter {
  user?: string;
  event?: string;
  since?: number;
  until?: number;
  limit?: number;
}

/**
 * Sees every row as it is written, with the same handle (a caller's transaction or the database),
 * so what it writes commits with the row: webhook events (src/features/webhooks/) are made this way.
 */
export type AuditTap = (db: Db, entry: AuditEntry, at: number) => Promise<void>;

/**
 * Told of every row once it has committed (db/transaction.ts): a rolled-back row, or a unit a
 * failed group commit ran again alone, is told once or never. Must not throw. The metrics count
 * this way.
 */
export type AuditObserver = (entry: AuditEntry) => void;

export interface AuditDeps {
  db: Db;
  dialect: Dialect;
  clock: Clock;
  /** Rows written on their own share commits with other requests' (src/platform/sql/group-commit.ts). */
  commits: GroupCommit;
  /** begin()'s rows, which only insert: OpenDatabase.appends. */
  appends: GroupCommit;
}

export class AuditLog {
  private readonly taps: AuditTap[] = [];
  private readonly observers: AuditObserver[] = [];
  // Every request writes audit rows (a download two statements): compiled once (src/platform/sql/compiled.ts).
  /**
   * Inserts one row, resolving with its id: on SQLite without RETURNING (HotQuery.insertId), on
   * PostgreSQL, which reports no such id, with it.
   */
  private readonly insertRow: (row: AuditRowValues, db: Db) => Promise<number>;
  private readonly setDetail;

  private readonly db: Db;
  private readonly dialect: Dialect;
  private readonly clock: Clock;
  private readonly commits: GroupCommit;
  private readonly appends: GroupCommit;

  /**
   * begin()'s rows of one batch, inserted together (GroupCommit.runMerged). SQLite runs in-process:
   * a prepared insert per row costs less than compiling one for many. PostgreSQL: one statement
   * for the batch instead of a round trip per row.
   */
  private readonly beginRows: MergedWork<AuditRowValues, number> = {
    runAll: async (trx, rows) => {
      if (this.dialect === 'postgres' && rows.length > 1) return this.insertMany(trx, rows);
      const ids: number[] = [];
      for (const row of rows) ids.push(await this.insert(trx, row));
      return ids;
    },
  };

  constructor(deps: AuditDeps) {
    ({
      db: this.db,
      dialect: this.dialect,
      clock: this.clock,
      commits: this.commits,
      appends: this.appends,
    } = deps);
    const { db } = deps;
    const columns = (param: Param<AuditRowValues>) => ({
      at: param('at'),
      event: param('event'),
      user_name: param('user_name'),
      remote: param('remote'),
      file_id: param('file_id'),
      detail: param('detail'),
      actor: param('actor'),
      bytes: param('bytes'),
    });
    if (deps.dialect === 'sqlite') {
      const insert = compiledQuery(db, (param: Param<AuditRowValues>) =>
        db.insertInto('audit').values(columns(param)),
      );
      this.insertRow = (row, on) => insert.insertId(row, on);
    } else {
      const insert = compiledQuery(db, (param: Param<AuditRowValues>) =>
        db.insertInto('audit').values(columns(param)).returning('id'),
      );
      this.insertRow = async (row, on) => (await insert.first(row, on))!.id;
    }
    this.setDetail = compiledQuery(
      db,
      (param: Param<{ id: number; detail: string | null; bytes: number | null }>) =>
        db
          .updateTable('audit')
          .set({ detail: param('detail'), bytes: param('bytes') })
          .where('id', '=', param('id')),
    );
  }

  tap(fn: AuditTap): void {
    this.taps.push(fn);
  }

  observe(fn: AuditObserver): void {
    this.observers.push(fn);
  }

  /** Tells the observers of `entry` once `db` has committed it. */
  private committed(db: Db, entry: AuditEntry): void {
    for (const observer of this.observers) afterCommit(db, () => observer(entry));
  }

  /**
   * Pass `db` to record inside a caller's transaction. Without one, the row and what the taps
   * write commit together, in a group commit: durable when this resolves.
   */
  async record(entry: AuditEntry, db?: Db): Promise<void> {
    if (!db) return this.commits.run((trx) => this.record(entry, trx));
    const at = this.clock.now();
    await this.insert(db, rowOf(entry, at));
    for (const tap of this.taps) await tap(db, entry, at);
    this.committed(db, entry);
  }

  /** Writes one row (in `db`, a transaction or the database); returns its id. */
  private insert(db: Db, row: AuditRowValues): Promise<number> {
    return this.insertRow(row, db);
  }

  /**
   * Writes rows with one statement; returns their ids in the order of `rows`. The ids come from
   * the table's sequence as the rows are inserted, in the order of the VALUES list, so they rise
   * in that order, whatever order RETURNING lists them in.
   */
  private async insertMany(db: Db, rows: AuditRowValues[]): Promise<number[]> {
    const inserted = await db.insertInto('audit').values(rows).returning('id').execute();
    return inserted.map((r) => Number(r.id)).sort((a, b) => a - b);
  }

  /**
   * Writes the row of an event whose outcome is not known yet (a download about to send its first
   * byte) and returns its id. Its detail is `entry.detail` plus `"outcome":"unknown"` until
   * finishAll() replaces it, so a crash in between leaves a row that says so. The taps run once, at
   * finishAll(): a webhook event tells what happened, not that something began.
   */
  async begin(entry: DetailedEntry): Promise<number> {
    const row = rowOf({ ...entry, detail: { ...entry.detail, outcome: 'unknown' } }, this.clock.now());
    // Only an insert (the taps run at finishAll()): it may commit beside other batches.
    return this.appends.runMerged(this.beginRows, row);
  }

  /**
   * Gives rows begun with begin() their final detail (the time stays when they began); taps run
   * now. On PostgreSQL the details of several rows are one statement.
   */
  async finishAll(rows: { id: number; entry: AuditEntry }[], db: Db): Promise<void> {
    const at = this.clock.now();
    const details = rows.map(({ id, entry }) => ({ id, ...rowOf(entry, at) }));
    if (this.dialect === 'postgres' && details.length > 1) {
      const values = sql.join(
        details.map((d) => sql`(${d.id}::integer, ${d.detail}::text, ${d.bytes}::bigint)`),
      );
      await sql`update audit set detail = v.detail, bytes = v.bytes
        from (values ${values}) as v(id, detail, bytes) where audit.id = v.id`.execute(db);
    } else {
      for (const { id, detail, bytes } of details) await this.setDetail.all({ id, detail, bytes }, db);
    }
    for (const { entry } of rows) {
      for (const tap of this.taps) await tap(db, entry, at);
      this.committed(db, entry);
    }
  }

  /** Failed sign-ins from `remote` since a time (the per-address failure budget). */
  async countFailedLogins(remote: string, since: number): Promise<number> {
    const row = await this.failedLogins(remote, since).executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /**
   * countFailedLogins()'s query (a test checks which index serves it). The event is a literal, not
   * a parameter: only then can SQLite and PostgreSQL read it through the index that holds only
   * those rows (migration 0021).
   */
  failedLogins(remote: string, since: number) {
    return this.db
      .selectFrom('audit')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('event', '=', sql.lit('login.failed'))
      .where('remote', '=', remote)
      .where('at', '>=', since);
  }

  query(filter: AuditFilter = {}): Promise<AuditRow[]> {
    return this.selection(filter)
      .execute()
      .then((rows) => rows.reverse());
  }

  /** The newest rows query() reads, newest first (a test checks which index serves it). */
  selection(filter: AuditFilter = {}) {
    let q = this.db.selectFrom('audit').selectAll();
    // User names match case-insensitively everywhere, so `--user user1` finds USER1.
    if (filter.user) q = q.where((eb) => userIs(eb, filter.user!));
    // "login" matches login and login.failed; "login." only the sub-events.
    if (filter.event) q = q.where((eb) => eventPrefix(eb, filter.event!));
    if (filter.since !== undefined) q = q.where('at', '>=', filter.since);
    if (filter.until !== undefined) q = q.where('at', '<=', filter.until);
    return q.orderBy('id', 'desc').limit(filter.limit ?? 1000);
  }
}

type AuditRowValues = ReturnType<typeof rowOf>;

/** Events whose detail's `bytes` is also kept in the row's column (the statistics sum it). */
const BYTE_EVENTS: ReadonlySet<AuditEventName> = new Set(['upload', 'download']);

function rowOf(entry: AuditEntry, at: number) {
  const detail =
    entry.detail === undefined || entry.detail === null
      ? null
      : typeof entry.detail === 'string'
        ? entry.detail
        : JSON.stringify(entry.detail);
  return {
    at,
    event: entry.event,
    user_name: entry.user ?? null,
    remote: entry.remote ?? null,
    file_id: entry.fileId ?? null,
    detail,
    actor: entry.actor ?? null,
    bytes: bytesOf(entry),
  };
}

function bytesOf(entry: AuditEntry): number | null {
  if (!BYTE_EVENTS.has(entry.event) || typeof entry.detail !== 'object' || entry.detail === null) return null;
  const bytes = entry.detail['bytes'];
  return typeof bytes === 'number' ? bytes : null;
}
