// API keys for integrations (docs/api-keys.md): created for an account, shown once, kept only as
// a SHA-256, listed with their last use, revoked at once on every instance. Knows nothing of HTTP.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../../platform/clock.js';
import { invalid, notFound, unauthorized } from '../../platform/errors.js';
import { secureRandom } from '../../platform/security/keys.js';
import type { GroupCommit, MergedWork } from '../../platform/sql/group-commit.js';
import type { ApiKeyRow, UserRow } from '../../platform/sql/schema.js';
import { isoOrNull as iso, isoInstant } from '../../platform/time.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { ChangedBy } from '../users/user-service.js';
import type { UserStore } from '../users/user-store.js';
import { KEY_PREFIX, parseKey, parseScopes, type Scope } from './api-keys.js';
import type { KeyStore } from './key-store.js';

/** A key's last use is written at most this often (per key and instance). */
const LAST_USE_EVERY_MS = 60_000;
const MAX_NAME = 100;
/** Keys one account may hold (revoked ones included until removed with the account). */
const MAX_KEYS_PER_USER = 100;

/** A key as lists show it: never its secret or hash. */
export interface KeyView {
  id: string;
  name: string;
  user: string;
  scopes: Scope[] | null;
  created: string;
  expires: string | null;
  lastUsed: string | null;
  revoked: string | null;
}

export interface NewKey {
  name: string;
  /** ms since the epoch, or null: never expires */
  expiresAt: number | null;
  scopes: Scope[] | null;
}

/** Who presented a key, and what the key allows. */
export interface KeyPrincipal {
  user: UserRow;
  keyId: string;
  scopes: Scope[] | null;
}

export interface KeyDeps {
  store: KeyStore;
  users: UserStore;
  audit: AuditLog;
  clock: Clock;
  commits: GroupCommit;
}

const hashOf = (key: string) => createHash('sha256').update(key).digest();
const scopesOf = (row: ApiKeyRow): Scope[] | null =>
  row.scopes === null ? null : parseScopes(row.scopes.split(',')).scopes;

export class KeyService {
  private readonly lastUseWritten = new Map<string, number>();
  private readonly uses: MergedWork<{ id: string; at: number }, void>;

  constructor(private readonly deps: KeyDeps) {
    this.uses = {
      runAll: async (trx, items) => {
        await deps.store.recordUses(trx, items);
        return items.map(() => undefined);
      },
    };
  }

  /** Makes a key for `owner`; the returned secret is the only copy there will ever be. */
  async create(owner: UserRow, spec: NewKey, by: ChangedBy): Promise<{ key: KeyView; secret: string }> {
    const name = spec.name.trim();
    if (name === '' || name.length > MAX_NAME || /\p{Cc}/u.test(name))
      throw invalid(`key name must be 1 to ${MAX_NAME} printable characters`);
    const now = this.deps.clock.now();
    if (spec.expiresAt !== null && spec.expiresAt <= now) throw invalid('expiry must be in the future');
    if (spec.scopes !== null && spec.scopes.length === 0)
      throw invalid('scopes must name at least one scope');
    if ((await this.deps.store.list(owner.id)).length >= MAX_KEYS_PER_USER)
      throw invalid(`an account holds at most ${MAX_KEYS_PER_USER} keys`);
    const id = secureRandom(8).toString('hex');
    const secret = `${KEY_PREFIX}${id}_${secureRandom(32).toString('base64url')}`;
    const row: ApiKeyRow = {
      id,
      user_id: owner.id,
      name,
      key_hash: hashOf(secret).toString('hex'),
      scopes: spec.scopes === null ? null : spec.scopes.join(','),
      created_at: now,
      expires_at: spec.expiresAt,
      last_used_at: null,
      revoked_at: null,
    };
    await this.deps.store.insert(row);
    await this.deps.audit.record({
      event: 'key.created',
      user: owner.name,
      actor: by.actor ?? null,
      remote: by.remote ?? null,
      detail: { id, name, scopes: row.scopes, expires: iso(row.expires_at), via: by.via },
    });
    return { key: this.view(row, owner.name), secret };
  }

  /** The keys of `owner`, or of every account. */
  async list(owner?: UserRow): Promise<KeyView[]> {
    const rows = await this.deps.store.list(owner?.id);
    const names = new Map<number, string>();
    if (owner) names.set(owner.id, owner.name);
    const views: KeyView[] = [];
    for (const row of rows) {
      if (!names.has(row.user_id))
        names.set(row.user_id, (await this.deps.users.byId(row.user_id))?.name ?? `#${row.user_id}`);
      views.push(this.view(row, names.get(row.user_id)!));
    }
    return views;
  }

  /**
   * Revokes key `id`; with `owner`, only one of that account's (another's key is "not found",
   * as an unknown one). Bearer tokens obtained with the key stop with it (AuthService).
   */
  async revoke(id: string, by: ChangedBy, owner?: UserRow): Promise<KeyView> {
    const row = /^[0-9a-f]{16}$/.test(id) ? await this.deps.store.byId(id) : undefined;
    if (!row || (owner && row.user_id !== owner.id)) throw notFound(`no API key ${id}`);
    const at = this.deps.clock.now();
    const user = owner ?? (await this.deps.users.byId(row.user_id));
    if (await this.deps.store.revoke(id, at))
      await this.deps.audit.record({
        event: 'key.revoked',
        user: user?.name ?? null,
        actor: by.actor ?? null,
        remote: by.remote ?? null,
        detail: { id, name: row.name, via: by.via },
      });
    return this.view({ ...row, revoked_at: row.revoked_at ?? at }, user?.name ?? `#${row.user_id}`);
  }

  /**
   * The account and rights of a presented key, or 401. Read from the rows on every call, so a
   * revoked key, an expired one, or a disabled or removed account is refused at once everywhere.
   * `value` must look like a key (parseKey); the comparison of hashes takes constant time.
   */
  async verify(value: string): Promise<KeyPrincipal> {
    const parts = parseKey(value);
    const row = parts ? await this.deps.store.byId(parts.id) : undefined;
    const matches = row !== undefined && timingSafeEqual(hashOf(value), Buffer.from(row.key_hash, 'hex'));
    if (!row || !matches) throw unauthorized('invalid, expired or revoked API key');
    const principal = await this.active(row);
    this.noteUse(row);
    return principal;
  }

  /** The rights of key `id` for a bearer token obtained with it, or 401 once it stopped. */
  async stillValid(id: string, userId: number): Promise<Scope[] | null> {
    const row = await this.deps.store.byId(id);
    if (!row || row.user_id !== userId) throw unauthorized('token revoked');
    return (await this.active(row)).scopes;
  }

  private async active(row: ApiKeyRow): Promise<KeyPrincipal> {
    const now = this.deps.clock.now();
    if (row.revoked_at !== null || (row.expires_at !== null && row.expires_at <= now))
      throw unauthorized('invalid, expired or revoked API key');
    const user = await this.deps.users.byId(row.user_id);
    if (!user?.enabled) throw unauthorized('invalid, expired or revoked API key');
    return { user, keyId: row.id, scopes: scopesOf(row) };
  }

  /** Records the last use in a later group commit, without holding up the request. */
  private noteUse(row: ApiKeyRow): void {
    const now = this.deps.clock.now();
    const written = Math.max(row.last_used_at ?? 0, this.lastUseWritten.get(row.id) ?? 0);
    if (now - written < LAST_USE_EVERY_MS) return;
    this.lastUseWritten.set(row.id, now);
    if (this.lastUseWritten.size > 10_000) this.lastUseWritten.clear();
    this.deps.commits.runMerged(this.uses, { id: row.id, at: now }).catch(() => {
      // Informational only: the next use after a minute writes it again.
      this.lastUseWritten.delete(row.id);
    });
  }

  private view(row: ApiKeyRow, user: string): KeyView {
    return {
      id: row.id,
      name: row.name,
      user,
      scopes: scopesOf(row),
      created: iso(row.created_at)!,
      expires: iso(row.expires_at),
      lastUsed: iso(row.last_used_at),
      revoked: iso(row.revoked_at),
    };
  }
}

/** An expiry given as an ISO 8601 date or time, or as a count of days (`30d`) or hours (`12h`). */
export function parseExpiry(value: string, now: number): number {
  const rel = /^(\d{1,5})([dh])$/.exec(value.trim());
  if (rel) return now + Number(rel[1]) * (rel[2] === 'd' ? 86_400_000 : 3_600_000);
  const at = isoInstant(value);
  if (!Number.isFinite(at))
    throw invalid(`expiry must be an ISO 8601 date or time, or like 30d or 12h: "${value}"`);
  return at;
}

/** A new key's fields as the API, the portal and the CLI give them: scopes listed or comma-separated. */
export function keySpec(
  input: { name: string; expires?: string | undefined; scopes?: string | readonly string[] | undefined },
  now: number,
): NewKey {
  let scopes: Scope[] | null = null;
  if (input.scopes !== undefined) {
    const list = typeof input.scopes === 'string' ? input.scopes.split(',') : input.scopes;
    const parsed = parseScopes(list);
    if (parsed.unknown.length > 0)
      throw invalid(`unknown scope ${parsed.unknown.map((s) => `"${s.slice(0, 20)}"`).join(', ')}`);
    scopes = parsed.scopes;
  }
  const expires = input.expires?.trim();
  return { name: input.name, expiresAt: expires ? parseExpiry(expires, now) : null, scopes };
}
