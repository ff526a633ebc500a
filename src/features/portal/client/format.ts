// Locale-aware sizes, dates and speeds. Sizes are binary (1 KiB = 1024 bytes) and say so, as the
// server's messages do.
import { currentLang, LOCALES } from './i18n.js';

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

export function formatSize(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const digits = unit === 0 || value >= 100 ? 0 : 1;
  const n = new Intl.NumberFormat(LOCALES[currentLang()], { maximumFractionDigits: digits }).format(value);
  return `${n} ${UNITS[unit]}`;
}

export function formatSpeed(bytesPerSecond: number): string {
  return `${formatSize(Math.max(0, Math.round(bytesPerSecond)))}/s`;
}

export function formatDate(ms: number): string {
  return new Intl.DateTimeFormat(LOCALES[currentLang()], { dateStyle: 'medium', timeStyle: 'short' }).format(
    new Date(ms),
  );
}

/** Accepts ms since epoch, seconds since epoch or an ISO string (the info endpoint may use any). */
export function toMillis(value: unknown): number | null {
  if (typeof value === 'number' && Number.isFinite(value)) return value < 1e12 ? value * 1000 : value;
  if (typeof value === 'string' && value) {
    const n = Date.parse(value);
    return Number.isNaN(n) ? null : n;
  }
  return null;
}
