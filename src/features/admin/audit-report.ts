// The admin's audit search (docs/admin.md, "Audit"): pages of the trail as JSON, or the whole
// search as CSV read from the database a page at a time as the client takes it, so an export of
// any size holds one page in memory.
import { invalid } from '../../platform/errors.js';
import type { AuditRow } from '../../platform/sql/schema.js';
import type { AuditCursor, AuditSearch, AuditSearchFilter } from '../audit/audit-search.js';
import { csvLine } from './csv.js';
import {
  detailOf,
  iso,
  type Page,
  pageOf,
  parseLimit,
  parseRange,
  parseTimeCursor,
} from './report-params.js';

export interface AuditQuery {
  user?: string;
  event?: string;
  file?: number;
  outcome?: 'ok' | 'failed';
  from?: string;
  to?: string;
  limit?: number;
  cursor?: string;
}

export interface AuditEntryView {
  id: number;
  time: string;
  event: string;
  user: string | null;
  actor: string | null;
  remote: string | null;
  fileId: number | null;
  detail: Record<string, unknown> | string | null;
}

export interface AuditReportDeps {
  search: AuditSearch;
}

export const AUDIT_CSV_HEADER = ['id', 'time', 'event', 'user', 'actor', 'remote', 'file_id', 'detail'];
/** Rows per read of a CSV export: each read is short, and only one page is held at a time. */
const CSV_PAGE = 1000;

export class AuditReport {
  private readonly search: AuditSearch;

  constructor(deps: AuditReportDeps) {
    ({ search: this.search } = deps);
  }

  async list(query: AuditQuery): Promise<Page<AuditEntryView>> {
    const filter = filterOf(query);
    const limit = parseLimit(query.limit);
    const rows = await this.search.page(filter, parseTimeCursor(query.cursor), limit + 1);
    return pageOf(rows, limit, viewOf, (row) => `${row.at}.${row.id}`);
  }

  /**
   * The search as CSV lines, header first. The query is checked now (a bad one throws before any
   * byte); the rows are read as the lines are taken, a page at a time, newest first.
   */
  csv(query: Omit<AuditQuery, 'limit' | 'cursor'>): AsyncIterable<string> {
    return this.csvLines(filterOf(query));
  }

  private async *csvLines(filter: AuditSearchFilter): AsyncGenerator<string> {
    yield csvLine(AUDIT_CSV_HEADER);
    for (let after: AuditCursor | null = null; ; ) {
      const rows = await this.search.page(filter, after, CSV_PAGE);
      let chunk = '';
      for (const r of rows)
        chunk += csvLine([r.id, iso(r.at), r.event, r.user_name, r.actor, r.remote, r.file_id, r.detail]);
      if (chunk) yield chunk;
      if (rows.length < CSV_PAGE) return;
      const last = rows[rows.length - 1]!;
      after = { at: last.at, id: last.id };
    }
  }
}

function filterOf(query: AuditQuery): AuditSearchFilter {
  const { user, event, file, outcome } = query;
  if (user !== undefined && (user.trim() === '' || user.length > 254)) throw invalid('user: an account name');
  if (event !== undefined && !/^[a-z][a-z0-9_.]{0,63}$/.test(event))
    throw invalid('event: an event name or prefix');
  if (file !== undefined && !(Number.isSafeInteger(file) && file > 0)) throw invalid('file: a file id');
  if (outcome !== undefined && outcome !== 'ok' && outcome !== 'failed')
    throw invalid('outcome: ok or failed');
  return {
    ...(user !== undefined && { user: user.trim() }),
    ...(event !== undefined && { event }),
    ...(file !== undefined && { fileId: file }),
    ...(outcome !== undefined && { outcome }),
    ...parseRange(query.from, query.to),
  };
}

function viewOf(row: AuditRow): AuditEntryView {
  return {
    id: row.id,
    time: iso(row.at)!,
    event: row.event,
    user: row.user_name,
    actor: row.actor,
    remote: row.remote,
    fileId: row.file_id,
    detail: detailOf(row.detail),
  };
}
