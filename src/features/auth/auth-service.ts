// Credentials, bearer tokens, lockout and revocation. Knows nothing of HTTP.
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import type { Clock } from '../../platform/clock.js';
import { DomainError, invalid, tooMany, unauthorized } from '../../platform/errors.js';
import { type Keys, randomToken } from '../../platform/security/keys.js';
import type { GroupCommit, MergedWork } from '../../platform/sql/group-commit.js';
import type { UserRow } from '../../platform/sql/schema.js';
import type { AuditLog } from '../audit/audit-log.js';
import { parseKey, type Scope } from '../keys/api-keys.js';
import type { KeyService } from '../keys/key-service.js';
import type { UserStore } from '../users/user-store.js';
import { CredentialCache, type CredentialCacheOptions } from './credential-cache.js';
import { verifyPassword } from './passwords.js';
import type { RevokedTokenStore } from './revoked-token-store.js';

const MINUTE = 60_000;
/** Bearer tokens whose signature check is remembered at once (verifySignature). */
const MAX_SIGNED_CLAIMS = 10_000;

/** What a verified token says, all of it fixed by the signature. */
interface SignedClaims {
  uid: number;
  gen: number;
  jti: string;
  /** seconds since the epoch */
  exp: number;
  /** The API key the token was obtained with: it stops with the key. */
  key?: string;
}

/** Failed credential checks one client address may make per minute, on any route (docs/security.md). */
export const CREDENTIAL_FAILURES_PER_MINUTE = 30;

/** The one answer to every failed sign-in: it never tells whether the user exists or is locked. */
export const BAD_CREDENTIALS = 'wrong user name or password, or the account is locked for a while';

/** The audit event of a token issued by each way in. */
const SIGN_IN_EVENT = { token: 'token.issued', login: 'login', oidc: 'login.oidc' } as const;

export interface AuthOptions {
  baseUrl: string;
  /** false: people sign in only through single sign-on; a password is refused, a key still works. */
  passwordLogin: boolean;
  tokenSeconds: number;
  lockoutAttempts: number;
  lockoutSeconds: number;
}

export interface IssuedToken {
  token: string;
  expiresIn: number;
}

/** Who made a request, and with what: a password or token (keyId null), or an API key. */
export interface Principal {
  user: UserRow;
  /** The API key used, directly or to obtain the token; null for a password. */
  keyId: string | null;
  /** The key's scopes; null: the owner's rights (features/keys/api-keys.ts). */
  scopes: readonly Scope[] | null;
}

export interface BearerSession extends Principal {
  /** The token's id; null when the bearer is an API key itself. */
  jti: string | null;
  expiresAt: number;
}

const PASSWORD: Pick<Principal, 'keyId' | 'scopes'> = { keyId: null, scopes: null };

export interface AuthDeps {
  users: UserStore;
  revoked: RevokedTokenStore;
  audit: AuditLog;
  keys: Keys;
  apiKeys: KeyService;
  clock: Clock;
  /** Sign-ins (last_sign_in_at) share commits with other requests' writes, as audit rows do. */
  commits: GroupCommit;
  opts: AuthOptions;
  /** Tests: a smaller or shorter-lived verified-credential cache. */
  cache?: Partial<CredentialCacheOptions>;
}

export class AuthService {
  private readonly users: UserStore;
  private readonly revoked: RevokedTokenStore;
  private readonly audit: AuditLog;
  private readonly keys: Keys;
  private readonly apiKeys: KeyService;
  private readonly clock: Clock;
  private readonly opts: AuthOptions;
  private readonly commits: GroupCommit;
  /** The sign-ins of one group commit, written together (UserStore.recordSignIns). */
  private readonly signIns: MergedWork<{ id: number; at: number }, void>;
  /** Successful Basic verifications of this instance (src/features/auth/credential-cache.ts). */
  private readonly verified: CredentialCache;
  private readonly signedClaims = new Map<string, SignedClaims>();

  constructor(deps: AuthDeps) {
    ({
      users: this.users,
      revoked: this.revoked,
      audit: this.audit,
      keys: this.keys,
      apiKeys: this.apiKeys,
      clock: this.clock,
      opts: this.opts,
      commits: this.commits,
    } = deps);
    this.signIns = {
      runAll: async (trx, items) => {
        await this.users.recordSignIns(trx, items);
        return items.map(() => undefined);
      },
    };
    this.verified = new CredentialCache(deps.clock, deps.cache);
  }

  /**
   * Checks a name with its password or one of its API keys (features/keys). Unknown user, wrong
   * password or key, disabled or locked account all give the same 401 with the same detail, after
   * the same argon2 work, so no answer tells whether a user exists; a lock starts after
   * `lockoutAttempts` consecutive wrong passwords (a wrong key counts only against the address: a
   * key cannot be guessed, and integrations must not lock their owner out). An address with
   * CREDENTIAL_FAILURES_PER_MINUTE failures in the last minute gets 429 before anything is checked.
   * A name and password verified before against the account's current state skip argon2 (the
   * credential cache); a key never needs it. With password sign-in off, only a key passes.
   */
  async checkCredentials(name: string, secret: string, remote: string | null): Promise<Principal> {
    const now = this.clock.now();
    if (remote !== null) {
      const recent = await this.audit.countFailedLogins(remote, now - MINUTE);
      if (recent >= CREDENTIAL_FAILURES_PER_MINUTE)
        throw tooMany('too many failed sign-ins from this address: retry in a minute', 60);
    }
    if (parseKey(secret)) return this.checkKey(name, secret, remote);
    if (!this.opts.passwordLogin) {
      await this.recordFailure(name, remote, 'password sign-in is off');
      throw unauthorized(BAD_CREDENTIALS);
    }
    return { user: await this.checkPassword(name, secret, remote, now), ...PASSWORD };
  }

  /** A key given as the password of `name`: it must be one of that account's. */
  private async checkKey(name: string, key: string, remote: string | null): Promise<Principal> {
    try {
      const principal = await this.apiKeys.verify(key);
      if (principal.user.name_key !== name.toLowerCase()) throw unauthorized();
      return principal;
    } catch (err) {
      if (!(err instanceof DomainError && err.kind === 'unauthorized')) throw err;
      await this.recordFailure(name, remote, 'invalid API key');
      throw unauthorized(BAD_CREDENTIALS);
    }
  }

  /** The audit row of a failed sign-in (what the per-address limit counts). */
  private recordFailure(name: string, remote: string | null, detail: string): Promise<void> {
    return this.audit.record({ event: 'login.failed', user: name.slice(0, 64), remote, detail });
  }

  private async checkPassword(name: string, password: string, remote: string | null, now: number) {
    const user = await this.users.byName(name);
    const cacheKey = this.keys.credentialHash(name.toLowerCase(), password);
    if (this.verified.hit(cacheKey, user)) return this.signedIn(user!);
    const locked = user !== undefined && user.locked_until > now;
    const ok = await verifyPassword(locked ? null : (user?.password_hash ?? null), password);
    const fail = async (detail: string) => {
      await this.recordFailure(user?.name ?? name, remote, detail);
      return unauthorized(BAD_CREDENTIALS);
    };
    if (!user) throw await fail('unknown user');
    if (locked) throw await fail('locked');
    if (!ok) {
      const failures = await this.users.countFailure(user.id);
      const err = await fail('wrong password');
      if (failures >= this.opts.lockoutAttempts) {
        await this.users.update(user.id, {
          failed_logins: 0,
          locked_until: now + this.opts.lockoutSeconds * 1000,
        });
        await this.audit.record({
          event: 'user.locked',
          user: user.name,
          remote,
          detail: `${failures} failed attempts; locked for ${this.opts.lockoutSeconds}s`,
        });
      }
      throw err;
    }
    if (!user.enabled) throw await fail('disabled');
    this.verified.remember(cacheKey, user);
    return this.signedIn(user);
  }

  /** Verifications this instance remembers (tests, diagnostics). */
  get cachedCredentials(): number {
    return this.verified.size;
  }

  private async signedIn(user: UserRow): Promise<UserRow> {
    if (user.failed_logins > 0) await this.users.update(user.id, { failed_logins: 0 });
    return user;
  }

  async issueToken(
    { user, keyId }: Principal,
    via: 'token' | 'login' | 'oidc',
    remote: string | null,
  ): Promise<IssuedToken> {
    const nowSec = Math.floor(this.clock.now() / 1000);
    const claims = { uid: user.id, gen: user.token_generation, ...(keyId === null ? {} : { key: keyId }) };
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(user.name)
      .setIssuer(this.opts.baseUrl)
      .setAudience(this.opts.baseUrl)
      .setJti(randomToken().slice(0, 22))
      .setIssuedAt(nowSec)
      .setExpirationTime(nowSec + this.opts.tokenSeconds)
      .sign(await this.keys.jwtCryptoKey);
    // The account's last sign-in and the audit row, each in the next group commit (one fsync).
    await Promise.all([
      this.commits.runMerged(this.signIns, { id: user.id, at: this.clock.now() }),
      this.audit.record({ event: SIGN_IN_EVENT[via], user: user.name, remote }),
    ]);
    return { token, expiresIn: this.opts.tokenSeconds };
  }

  /** Verifies a bearer token: signature, issuer, audience, expiry, user state and revocation. */
  async verifyBearer(token: string): Promise<BearerSession> {
    if (parseKey(token)) return { ...(await this.apiKeys.verify(token)), jti: null, expiresAt: 0 };
    const claims = this.signedClaims.get(token) ?? (await this.verifySignature(token));
    if (claims.exp <= Math.floor(this.clock.now() / 1000)) {
      this.signedClaims.delete(token);
      throw unauthorized('invalid or expired token');
    }
    const user = await this.users.byId(claims.uid);
    // A token obtained with a key lives and dies with the key, not with the password: a password
    // change must not break the scripts that use keys.
    const stale = claims.key === undefined && user?.token_generation !== claims.gen;
    if (!user?.enabled || stale) throw unauthorized('token revoked');
    if (await this.revoked.isRevoked(claims.jti)) throw unauthorized('token revoked');
    const key =
      claims.key === undefined
        ? PASSWORD
        : { keyId: claims.key, scopes: await this.apiKeys.stillValid(claims.key, user.id) };
    return { user, ...key, jti: claims.jti, expiresAt: claims.exp * 1000 };
  }

  /**
   * The claims of a token whose signature, issuer and audience check out, remembered by the exact
   * token string: a client sends the same token on every request, and the HMAC check through Web
   * Crypto was ~7% of a small upload's CPU. Only what cannot change is remembered; expiry is
   * checked against the clock on every use, and the user and revocation are read every time.
   */
  private async verifySignature(token: string): Promise<SignedClaims> {
    let payload: { uid?: unknown; gen?: unknown; key?: unknown; jti?: string; exp?: number } | undefined;
    // The current key, then (during a secret rotation) the previous one: only a signature that
    // neither key made moves on to the next; an expired or malformed token fails at once.
    for (const key of await this.keys.jwtVerificationKeys()) {
      try {
        ({ payload } = await jwtVerify(token, key, {
          algorithms: ['HS256'],
          issuer: this.opts.baseUrl,
          audience: this.opts.baseUrl,
          currentDate: new Date(this.clock.now()),
          requiredClaims: ['jti', 'exp', 'sub'],
        }));
        break;
      } catch (err) {
        if (err instanceof joseErrors.JWSSignatureVerificationFailed) continue;
        if (err instanceof joseErrors.JOSEError) throw unauthorized('invalid or expired token');
        throw err;
      }
    }
    if (!payload) throw unauthorized('invalid or expired token');
    if (typeof payload.uid !== 'number' || typeof payload.gen !== 'number')
      throw unauthorized('invalid token');
    if (payload.key !== undefined && typeof payload.key !== 'string') throw unauthorized('invalid token');
    const claims: SignedClaims = { uid: payload.uid, gen: payload.gen, jti: payload.jti!, exp: payload.exp! };
    if (typeof payload.key === 'string') claims.key = payload.key;
    this.signedClaims.set(token, claims);
    // Oldest first out: a bound, not a policy (a token that comes back is verified again).
    if (this.signedClaims.size > MAX_SIGNED_CLAIMS)
      this.signedClaims.delete(this.signedClaims.keys().next().value!);
    return claims;
  }

  async logout(session: BearerSession, remote: string | null): Promise<void> {
    if (session.jti === null) throw invalid('an API key is not signed out: revoke it instead');
    await this.revoked.revoke(session.jti, session.user.id, session.expiresAt);
    await this.audit.record({ event: 'logout', user: session.user.name, remote });
  }

  /** Forget revocations of tokens that have expired anyway (called by the sweeper). */
  async pruneRevoked(): Promise<void> {
    await this.revoked.prune(this.clock.now());
  }
}
