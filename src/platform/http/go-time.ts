// Go's time.Time.String() for the envelope `time` field, e.g.
// "2022-06-13 19:37:52.366591 -0300 -03 m=+25968.263316625".
import { performance } from 'node:perf_hooks';

const pad = (n: number, w = 2) => String(Math.trunc(Math.abs(n))).padStart(w, '0');

function numericOffset(minutes: number): string {
  const sign = minutes < 0 ? '-' : '+';
  return `${sign}${pad(minutes / 60)}${pad(minutes % 60)}`;
}

// Building an Intl formatter and formatting with it was a twentieth of an upload's CPU: the
// abbreviation is kept for the quarter hour it was asked in (zones change on such boundaries).
const QUARTER_HOUR = 15 * 60_000;
let zoneFormat: Intl.DateTimeFormat | undefined;
let cached: { quarter: number; offset: number; abbreviation: string } | undefined;

/** Zone abbreviation as Go prints it: alphabetic when the zone has one, else "-03" / "+0530". */
function zoneAbbreviation(date: Date, offsetMinutes: number): string {
  const quarter = Math.floor(date.getTime() / QUARTER_HOUR);
  if (cached?.quarter === quarter && cached.offset === offsetMinutes) return cached.abbreviation;
  const abbreviation = abbreviate(date, offsetMinutes);
  cached = { quarter, offset: offsetMinutes, abbreviation };
  return abbreviation;
}

function abbreviate(date: Date, offsetMinutes: number): string {
  zoneFormat ??= new Intl.DateTimeFormat('en-US', { timeZoneName: 'short' });
  const part = zoneFormat.formatToParts(date).find((p) => p.type === 'timeZoneName')?.value;
  if (part && /^[A-Z]{2,5}$/.test(part)) return part;
  if (offsetMinutes === 0) return 'UTC';
  const sign = offsetMinutes < 0 ? '-' : '+';
  return offsetMinutes % 60 === 0 ? `${sign}${pad(offsetMinutes / 60)}` : numericOffset(offsetMinutes);
}

/** @param epochMicros wall-clock time in microseconds; @param monotonicSeconds seconds since process start */
export function goTimeString(date: Date, micros: number, monotonicSeconds: number): string {
  const offsetMinutes = -date.getTimezoneOffset();
  const ymd = `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
  const hms = `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
  return `${ymd} ${hms}.${pad(micros, 6)} ${numericOffset(offsetMinutes)} ${zoneAbbreviation(date, offsetMinutes)} m=+${monotonicSeconds.toFixed(9)}`;
}

export function nowGoTime(): string {
  // performance.timeOrigin + now() gives sub-millisecond wall time; now() alone is the monotonic clock.
  const mono = performance.now();
  const wallMicros = Math.floor((performance.timeOrigin + mono) * 1000);
  const date = new Date(Math.floor(wallMicros / 1000));
  return goTimeString(date, wallMicros % 1_000_000, mono / 1000);
}
