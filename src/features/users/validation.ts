// Value rules shared by the CLI, the API and the portal.
import { LANGS, type Lang } from '../../app/config.js';
import { parseSize } from '../../app/config-reader.js';
import { invalid } from '../../platform/errors.js';
import { isEmail, listItems, normalizeMobile, USER_NAME } from './validation-rules.js';

export { isEmail, normalizeMobile, USER_NAME };

export function isUserName(v: string): boolean {
  return USER_NAME.test(v);
}

export function isLang(v: string): v is Lang {
  return (LANGS as readonly string[]).includes(v);
}

/** Splits "a@x.com, b@y.com; c@z.com" into addresses; any invalid entry rejects the whole list. */
export function parseEmailList(raw: string): string[] {
  const items = listItems(raw);
  if (items.length === 0) throw invalid('m: no e-mail address given');
  for (const item of items) if (!isEmail(item)) throw invalid(`m: invalid e-mail address "${item}"`);
  return [...new Set(items.map((e) => e.toLowerCase()))];
}

export function parseMobileList(raw: string): string[] {
  const items = listItems(raw);
  if (items.length === 0) throw invalid('c: no mobile number given');
  return [
    ...new Set(
      items.map((item) => {
        const m = normalizeMobile(item);
        if (!m) throw invalid(`c: invalid mobile number "${item}"`);
        return m;
      }),
    ),
  ];
}

/**
 * How an e-mail address or mobile number is shown where only its owner's counterpart should
 * recognise it (delivery tracking, webhook events): "a***@example.com", "+55*******4321".
 */
export function maskAddress(address: string): string {
  const at = address.lastIndexOf('@');
  if (at > 0) return `${address[0]}***${address.slice(at)}`;
  if (address.length <= 6) return '*'.repeat(address.length);
  const head = address.startsWith('+') ? 3 : 2;
  return address.slice(0, head) + '*'.repeat(address.length - head - 4) + address.slice(-4);
}

/**
 * An account's size setting (`quota`, `maxFileSize`) as the CLI and the admin API take it: a size
 * in REMESSA_MAX_FILE_SIZE's syntax (10GiB, 500MB, 1048576), or null / "" / "none" / "default"
 * for the installation's default.
 */
export function parseAccountSize(field: string, raw: string | null, min: number): number | null {
  if (raw === null || ['', 'none', 'default'].includes(raw.trim().toLowerCase())) return null;
  try {
    return parseSize(field, raw, min);
  } catch {
    throw invalid(`${field} must be a size such as 10GiB or 1048576 (at least ${min}), or "default"`);
  }
}
