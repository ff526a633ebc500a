// What an API key looks like and what it may do. No imports: the portal's bundle takes the scopes.
//
// A key is `rmk_<id>_<secret>`: the id (16 hex digits) finds the row with one indexed read, the
// secret (256 random bits) is what the row's SHA-256 is compared with. A random 256-bit secret
// cannot be guessed or found from its hash, so a fast hash suffices where a password needs argon2.

export const KEY_PREFIX = 'rmk_';

/**
 * What a key with scopes may call (a key without scopes acts with its owner's rights, and never
 * beyond them: the owner's role is checked as for a password).
 * - upload: POST /upload and resumable uploads (/uploads)
 * - download: the lists of one's files (/download/list, /download/backup)
 * - webhooks: one's webhook subscriptions
 * - admin-read: the admin API's reads; admin: all of the admin API
 */
export const SCOPES = ['upload', 'download', 'webhooks', 'admin-read', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

export const isScope = (value: string): value is Scope => (SCOPES as readonly string[]).includes(value);

/**
 * Whether a key holding `held` (null: no scopes, the owner's rights) may make a request that
 * needs `needed`. A request that names no scope (managing keys, the portal's own calls) needs a
 * key without scopes, so a narrow key cannot mint a wider one. 'any' is for what every key may do
 * (signing in with it, signing out).
 */
export function scopeAllows(held: readonly Scope[] | null, needed: Scope | 'any' | undefined): boolean {
  if (held === null || needed === 'any') return true;
  if (needed === undefined) return false;
  if (needed === 'admin-read' && held.includes('admin')) return true;
  return held.includes(needed);
}

/** The parts of something that looks like a key, or null (then it is a password). */
export function parseKey(value: string): { id: string; secret: string } | null {
  const m = /^rmk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/.exec(value);
  return m ? { id: m[1]!, secret: m[2]! } : null;
}

/** Scopes from `upload,download`, in their canonical order, or the unknown names. */
export function parseScopes(list: readonly string[]): { scopes: Scope[]; unknown: string[] } {
  const names = list.map((s) => s.trim()).filter((s) => s !== '');
  return {
    scopes: SCOPES.filter((s) => names.includes(s)),
    unknown: names.filter((s) => !isScope(s)),
  };
}
