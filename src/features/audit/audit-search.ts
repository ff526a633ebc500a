// Searching the audit trail: the filters `remessa audit` and the admin API share (an event prefix,
// a user matched case-insensitively), and the admin's keyset pages, newest first (by time, then
// id: the order of the index on `at`, which holds the row id), that the JSON list and the streamed
// CSV export read (src/features/admin/audit-report.ts).
import { type Expression, type ExpressionBuilder, type SqlBool, sql } from 'kysely';
import type { Db } from '../../platform/sql/database.js';
import type { AuditRow, Database } from '../../platform/sql/schema.js';

type AuditEb = ExpressionBuilder<Database, 'audit'>;

export interface AuditSearchFilter {
  /** Rows whose user or actor is this account (case-insensitive). */
  user?: string;
  /** An event prefix: `login` takes login and login.failed; `login.` only the sub-events. */
  event?: string;
  fileId?: number;
  /** failed: the refusals and failures (FAILURE_SUFFIXES); ok: the rest. */
  outcome?: 'ok' | 'failed';
  /** ms since the epoch, inclusive */
  from?: number;
  /** ms since the epoch (whole milliseconds), exclusive */
  to?: number;
}

/** The endings of the events that record a refusal or a failure (docs/admin.md, "Audit"). */
export const FAILURE_SUFFIXES = [
  '.failed',
  '.locked',
  '.corrupt',
  '.refused',
  '.change_failed',
  '.recovery_locked',
] as const;

/** `text` with LIKE's wildcards (and the escape character) taken literally (ESCAPE '\'). */
export const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/** A LIKE with '\' as its escape character, in either dialect. */
export const like = (column: string, pattern: string) =>
  sql<SqlBool>`${sql.ref(column)} like ${pattern} escape '\\'`;

/** Rows whose event is `prefix` or one of its sub-events (`prefix.` alone: only the sub-events). */
export function eventPrefix(eb: AuditEb, prefix: string) {
  if (prefix.endsWith('.')) return like('event', `${likeLiteral(prefix)}%`);
  return eb.or([eb('event', '=', prefix), like('event', `${likeLiteral(prefix)}.%`)]);
}

/** Rows of refusals and failures. */
export function failureEvent(eb: AuditEb) {
  return eb.or(FAILURE_SUFFIXES.map((suffix) => like('event', `%${likeLiteral(suffix)}`)));
}

/**
 * Rows whose user is `name`, case-insensitively, read through the index on lower(user_name) of the
 * rows that have one (migrations 0019 and 0021).
 */
export function userIs(eb: AuditEb, name: string) {
  return eb.and([
    eb(eb.fn('lower', ['user_name']), '=', name.toLowerCase()),
    eb('user_name', 'is not', null),
  ]);
}

/** Rows whose acting account is `name`, case-insensitively (the index of migration 0024). */
export function actorIs(eb: AuditEb, name: string) {
  return eb.and([eb(eb.fn('lower', ['actor']), '=', name.toLowerCase()), eb('actor', 'is not', null)]);
}

/** Where a page of the trail starts: below this row, in the trail's order (time, then id). */
export interface AuditCursor {
  at: number;
  id: number;
}

export class AuditSearch {
  constructor(private readonly db: Db) {}

  /**
   * At most `limit` rows matching `filter` below `after` (null: from the newest), newest first by
   * time then id: the next page starts below the last row. Every read is an index scan in that
   * order, resumed where the last one stopped, so reading a whole search costs one pass, however
   * many pages it takes. A user's rows are those naming it as user and those naming it as actor:
   * two such scans, merged.
   */
  async page(filter: AuditSearchFilter, after: AuditCursor | null, limit: number): Promise<AuditRow[]> {
    const { user } = filter;
    if (user === undefined) return this.selection(filter, after, limit).execute();
    const [named, acting] = await Promise.all([
      this.selection(filter, after, limit, (eb) => userIs(eb, user)).execute(),
      this.selection(filter, after, limit, (eb) => actorIs(eb, user)).execute(),
    ]);
    const seen = new Set<number>();
    return [...named, ...acting]
      .sort((a, b) => b.at - a.at || b.id - a.id)
      .filter((row) => !seen.has(row.id) && seen.add(row.id))
      .slice(0, limit);
  }

  /** page()'s query, without the user filter but `who` (a test reads its plan). */
  selection(
    filter: AuditSearchFilter,
    after: AuditCursor | null,
    limit: number,
    who?: (eb: AuditEb) => Expression<SqlBool>,
  ) {
    const { event, fileId, outcome, from, to } = filter;
    // One upper bound on the time, `to`'s or the cursor's, whichever is lower: given both, SQLite
    // bounded its index range by `to` alone and read every row of the earlier pages again.
    const upper = Math.min(to === undefined ? Infinity : to - 1, after === null ? Infinity : after.at);
    return (
      this.db
        .selectFrom('audit')
        .selectAll()
        .$if(who !== undefined, (q) => q.where((eb) => who!(eb)))
        .$if(event !== undefined, (q) => q.where((eb) => eventPrefix(eb, event!)))
        .$if(fileId !== undefined, (q) => q.where('file_id', '=', fileId!))
        .$if(outcome === 'failed', (q) => q.where((eb) => failureEvent(eb)))
        .$if(outcome === 'ok', (q) => q.where((eb) => eb.not(failureEvent(eb))))
        .$if(from !== undefined, (q) => q.where('at', '>=', from!))
        .$if(upper !== Infinity, (q) => q.where('at', '<=', upper))
        // Below the cursor: an earlier time, or the same time and a lower id.
        .$if(after !== null, (q) =>
          q.where((eb) => eb.or([eb('at', '<', after!.at), eb('id', '<', after!.id)])),
        )
        .orderBy('at', 'desc')
        .orderBy('id', 'desc')
        .limit(limit)
    );
  }
}
