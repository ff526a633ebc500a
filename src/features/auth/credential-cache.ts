// Verified-credential cache for HTTP Basic: argon2id costs ~50 ms and 19 MiB, so a client that
// sends Basic on every request would pay it every time. A successful verification is remembered
// under a keyed hash of name and password (Keys.credentialHash; never the password itself) with a
// stamp of the account row it was checked against. A hit still needs the row, read fresh from the
// shared database on every request (the same indexed read a sign-in makes anyway), and counts only
// while the stamp matches: a password change (new hash, new token generation), a disable (new
// generation), a removal (no row, or a new id) or a lock (new locked_until) on any instance or in
// the CLI turns the next hit into a full verification at once. Failures are never cached.
import type { Clock } from '../../platform/clock.js';
import type { UserRow } from '../../platform/sql/schema.js';

export interface CredentialCacheOptions {
  /** Entries kept at most; the least recently used goes first. */
  maxEntries: number;
  /** A verification is trusted this long, then argon2 runs again. */
  ttlMs: number;
}

export const CREDENTIAL_CACHE_DEFAULTS: CredentialCacheOptions = {
  maxEntries: 10_000,
  ttlMs: 10 * 60_000,
};

interface Entry {
  stamp: string;
  expiresAt: number;
}

/** Everything about an account whose change must end a cached verification. */
function stampOf(user: UserRow): string {
  return `${user.id}|${user.token_generation}|${user.locked_until}|${user.password_hash ?? ''}`;
}

export class CredentialCache {
  // A Map iterates in insertion order: re-inserting on a hit makes its first key the least
  // recently used one.
  private readonly entries = new Map<string, Entry>();
  private readonly opts: CredentialCacheOptions;

  constructor(
    private readonly clock: Clock,
    opts: Partial<CredentialCacheOptions> = {},
  ) {
    this.opts = { ...CREDENTIAL_CACHE_DEFAULTS, ...opts };
  }

  /**
   * True when `key` was verified against this very state of `user`, within the TTL, and the account
   * may sign in now (enabled, not locked). Anything else forgets the entry.
   */
  hit(key: string, user: UserRow | undefined): boolean {
    const entry = this.entries.get(key);
    if (!entry) return false;
    this.entries.delete(key);
    const now = this.clock.now();
    if (
      !user ||
      entry.expiresAt <= now ||
      entry.stamp !== stampOf(user) ||
      !user.enabled ||
      user.locked_until > now
    )
      return false;
    this.entries.set(key, entry);
    return true;
  }

  /** Remembers a successful verification of `user` (call only after argon2 said yes). */
  remember(key: string, user: UserRow): void {
    this.entries.delete(key);
    this.entries.set(key, { stamp: stampOf(user), expiresAt: this.clock.now() + this.opts.ttlMs });
    if (this.entries.size > this.opts.maxEntries) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
  }

  get size(): number {
    return this.entries.size;
  }
}
