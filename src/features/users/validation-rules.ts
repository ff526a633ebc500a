// The value rules the portal checks in the browser before it sends anything, and the server
// enforces (src/features/users/validation.ts): one copy. No imports, so the portal bundle can take it.

export const USER_NAME = /^[A-Za-z0-9._@-]{1,64}$/;

// Deliberately plain: one @, no spaces, a dotted domain. Full RFC 5322 is not what users type.
const EMAIL =
  /^[^\s@<>(),;:"\\[\]]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/;
// E.164-like: optional +, 8 to 15 digits; spaces, dots, dashes and parentheses are dropped first.
const MOBILE = /^\+?[1-9]\d{7,14}$/;

export function isEmail(v: string): boolean {
  return v.length <= 254 && EMAIL.test(v);
}

export function normalizeMobile(v: string): string | null {
  const compact = v.replace(/[\s().-]/g, '');
  return MOBILE.test(compact) ? compact : null;
}

/** The entries of a "a, b; c" list, trimmed, empty ones dropped. */
export function listItems(raw: string): string[] {
  return raw
    .split(/[,;]/)
    .map((s) => s.trim())
    .filter(Boolean);
}
