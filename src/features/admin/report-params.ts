// The parameters every admin report shares (docs/admin.md, "The admin API"): times as ISO 8601
// or epoch milliseconds, pages of 1–500 rows, and the cursor a page hands out. A value that is not
// one of these is refused (`invalid`) before anything is read.
import { invalid } from '../../platform/errors.js';
import { isoOrNull } from '../../platform/time.js';

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 500;

/** A page of a list: its rows and where the next one starts (null on the last page). */
export interface Page<T> {
  items: T[];
  next: string | null;
}

/** Times outside any row's (before 1970, after 9999) are refused rather than read as a range. */
const MIN_TIME = 0;
const MAX_TIME = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
const EPOCH_MS = /^\d{1,15}$/;
const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * `value` as ms since the epoch: digits are milliseconds, anything else must be ISO 8601 (a date,
 * or a date and time; without an offset, UTC). Undefined when absent.
 */
export function parseTime(name: string, value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined;
  const ms = EPOCH_MS.test(value) ? Number(value) : isoTime(value);
  if (!Number.isFinite(ms) || ms < MIN_TIME || ms > MAX_TIME)
    throw invalid(`${name}: ISO 8601 or epoch milliseconds`);
  return ms;
}

/** An ISO 8601 date or date-time as ms since the epoch (UTC without an offset), NaN if not one. */
function isoTime(value: string): number {
  const m = ISO.exec(value);
  if (!m) return NaN;
  const [, y, mo, d, h = '00', mi = '00', s = '00', zone] = m;
  const month = Number(mo);
  const day = Number(d);
  const valid =
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= new Date(Date.UTC(Number(y), month, 0)).getUTCDate() &&
    Number(h) <= 23 &&
    Number(mi) <= 59 &&
    Number(s) <= 59;
  if (!valid) return NaN;
  // Without an offset the time is UTC, as every time in the answers is.
  return Date.parse(m[4] === undefined ? `${value}T00:00:00Z` : zone ? value : `${value}Z`);
}

/** `from` and `to` of a search: `from` inclusive, `to` exclusive, `from` before `to`. */
export function parseRange(from: string | undefined, to: string | undefined): { from?: number; to?: number } {
  const range = { from: parseTime('from', from), to: parseTime('to', to) };
  if (range.from !== undefined && range.to !== undefined && range.from >= range.to)
    throw invalid('from: must be before to');
  return range;
}

/** A page size: 1 to 500, 50 when absent. */
export function parseLimit(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw invalid(`limit: 1 to ${MAX_LIMIT}`);
  return limit;
}

/**
 * The cursor of a list ordered by a rising id, newest first: the last id of the previous page,
 * below which the next page starts. Null when absent.
 */
export function parseCursor(cursor: string | undefined): number | null {
  if (cursor === undefined || cursor === '') return null;
  if (!/^[1-9]\d{0,14}$/.test(cursor)) throw invalid('cursor: not one a previous page gave');
  return Number(cursor);
}

/**
 * The cursor of the audit trail, ordered by time then id, newest first: `<time>.<id>` of the last
 * row of the previous page. Null when absent.
 */
export function parseTimeCursor(cursor: string | undefined): { at: number; id: number } | null {
  if (cursor === undefined || cursor === '') return null;
  const m = /^(\d{1,15})\.([1-9]\d{0,14})$/.exec(cursor);
  if (!m) throw invalid('cursor: not one a previous page gave');
  return { at: Number(m[1]), id: Number(m[2]) };
}

/**
 * The page of `rows` (read with `limit + 1`, so one more means there is a next page); `cursorOf`
 * names where the next page starts (the last row's id, by default).
 */
export function pageOf<R extends { id: number }, T>(
  rows: R[],
  limit: number,
  view: (row: R) => T,
  cursorOf: (row: R) => string = (row) => String(row.id),
): Page<T> {
  const items = rows.slice(0, limit);
  const next = rows.length > limit ? cursorOf(items[items.length - 1]!) : null;
  return { items: items.map(view), next };
}

/** A time for an answer: ISO 8601 UTC, or null. */
export const iso = isoOrNull;

/** A row's detail as an answer shows it: a JSON object parsed, any other text as it is. */
export function detailOf(text: string | null): Record<string, unknown> | string | null {
  if (text === null || !text.startsWith('{')) return text;
  try {
    const value = JSON.parse(text) as unknown;
    return value && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : text;
  } catch {
    return text;
  }
}
