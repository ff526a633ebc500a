// Times as the API writes and reads them.

/** ms since the epoch as ISO 8601 UTC, or null. */
export const isoOrNull = (ms: number | null | undefined): string | null =>
  ms === null || ms === undefined ? null : new Date(ms).toISOString();

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * An ISO 8601 date or date and time (`2026-01-31`, `2026-01-31T12:00`, with an optional offset)
 * as ms since the epoch, NaN for anything else. Read as Date.parse reads it: a date alone is UTC
 * midnight, a time without an offset the server's local time. (The admin reports' `from`/`to`
 * read a time without an offset as UTC: features/admin/report-params.ts.)
 */
export function isoInstant(value: string): number {
  const v = value.trim();
  return ISO_INSTANT.test(v) ? Date.parse(v) : Number.NaN;
}
