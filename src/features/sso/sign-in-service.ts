// Single sign-on with OpenID Connect (docs/sso.md): starts a sign-in (the pending row and the
// provider's URL), finishes it at the callback (the checks of openid-client, the account rules,
// a Remessa bearer token behind a one-time hand-off code) and trades that code for the token. The
// token never travels in a URL. Every failure has an audit row `login.oidc.failed` saying why.
import type { Lang, OidcConfig } from '../../app/config.js';
import type { Clock } from '../../platform/clock.js';
import { unauthorized } from '../../platform/errors.js';
import { type Keys, randomToken, safeEqual } from '../../platform/security/keys.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { AuthService } from '../auth/auth-service.js';
import type { UserService } from '../users/user-service.js';
import { SsoAccounts } from './accounts.js';
import { type FailureReason, Refusal, SsoFailure } from './failure.js';
import type { SsoFlowStore } from './flow-store.js';
import { type OidcClient, ProviderError } from './oidc-client.js';

/** A sign-in must come back from the provider within this long. */
export const PENDING_MS = 10 * 60_000;
/** The portal trades its hand-off code within this long (it does so at once). */
export const HANDOFF_MS = 60_000;
export const BAD_CODE = 'unknown, used or expired sign-in code';
const CODE = /^[A-Za-z0-9_-]{43}$/;

export type ReturnTo = 'portal' | 'admin';

export interface SsoDeps {
  settings: OidcConfig;
  client: OidcClient;
  store: SsoFlowStore;
  users: UserService;
  auth: AuthService;
  audit: AuditLog;
  keys: Keys;
  clock: Clock;
  defaultLang: Lang;
  /** The portal's absolute URL ({portal}): where people land, and the post-logout redirect. */
  portalUrl: string;
}

export interface CallbackInput {
  /** The callback's query string, as received. */
  query: string;
  /** The state the starting browser's cookie holds, if any. */
  cookieState: string | null;
  remote: string | null;
  /** The browser's language, for a page shown before the sign-in is known. */
  browserLang: Lang | null;
}

export interface SsoSession {
  bearer: string;
  user: string;
  logoutUrl: string | null;
}

export class SsoService {
  private readonly accounts: SsoAccounts;

  constructor(private readonly deps: SsoDeps) {
    this.accounts = new SsoAccounts(deps.users, deps.settings);
  }

  /** The sign-in button's label. */
  get name(): string {
    return this.deps.settings.name;
  }

  /** A new sign-in: where to send the browser, and the state its cookie must bind. */
  async start(
    to: ReturnTo,
    lang: Lang | null,
    remote: string | null,
  ): Promise<{ url: string; state: string }> {
    const { client, store, keys, clock } = this.deps;
    const checks = { state: randomToken(), nonce: randomToken(), verifier: randomToken() };
    let url: URL;
    try {
      url = await client.authorizationUrl(checks, lang);
    } catch (err) {
      const failure = err instanceof ProviderError ? err : new ProviderError('unreachable', String(err));
      throw await this.failed(failure.failure, failure.why, null, remote, lang ?? this.deps.defaultLang, to);
    }
    await store.addPending({
      state: checks.state,
      nonce: checks.nonce,
      verifier: keys.seal(checks.verifier),
      return_to: to,
      lang,
      created_at: clock.now(),
    });
    return { url: url.toString(), state: checks.state };
  }

  /** The provider's answer: checked, mapped to an account, signed in. Returns where to send the browser. */
  async finish(input: CallbackInput): Promise<string> {
    const { store, keys, clock, client, auth } = this.deps;
    const params = new URLSearchParams(input.query);
    const state = params.getAll('state').length === 1 ? params.get('state')! : '';
    let lang = input.browserLang ?? this.deps.defaultLang;
    const pending = state.length > 0 && state.length <= 256 ? await store.takePending(state) : undefined;
    if (!pending || pending.created_at < clock.now() - PENDING_MS)
      throw await this.failed(
        'expired',
        pending ? 'the sign-in started too long ago' : 'unknown or used state',
        null,
        input.remote,
        lang,
        'portal',
      );
    lang = (pending.lang as Lang | null) ?? lang;
    const to: ReturnTo = pending.return_to === 'admin' ? 'admin' : 'portal';
    const fail = (reason: FailureReason, why: string, user: string | null = null) =>
      this.failed(reason, why, user, input.remote, lang, to);
    if (input.cookieState === null || !safeEqual(input.cookieState, state))
      throw await fail(
        'other-browser',
        'the callback came without the cookie of the browser that started it',
      );
    try {
      const signedIn = await client.signIn(input.query, {
        state,
        nonce: pending.nonce,
        verifier: keys.unseal(pending.verifier),
      });
      const user = await this.accounts.resolve(signedIn.claims, signedIn.sub, input.remote);
      const issued = await auth.issueToken({ user, keyId: null, scopes: null }, 'oidc', input.remote);
      const logoutUrl = await client.endSessionUrl(signedIn.idToken, this.deps.portalUrl).catch(() => null);
      const code = randomToken();
      await store.addHandoff(keys.hmac(code), {
        user_id: user.id,
        payload: keys.seal(JSON.stringify({ bearer: issued.token, logoutUrl })),
        expires_at: clock.now() + HANDOFF_MS,
      });
      return `${this.deps.portalUrl}${to === 'admin' ? 'admin' : ''}#/sso/${code}`;
    } catch (err) {
      if (err instanceof ProviderError) throw await fail(err.failure, err.why);
      if (err instanceof Refusal) throw await fail(err.reason, err.why, err.user);
      throw err;
    }
  }

  /** Trades a hand-off code, once, for the bearer token of its sign-in. */
  async session(code: string): Promise<SsoSession> {
    const { store, keys, clock, users } = this.deps;
    if (!CODE.test(code)) throw unauthorized(BAD_CODE);
    const handoff = await store.takeHandoff(keys.hmac(code));
    if (!handoff || handoff.expires_at < clock.now()) throw unauthorized(BAD_CODE);
    const user = await users.byId(handoff.user_id);
    if (!user?.enabled) throw unauthorized(BAD_CODE);
    const { bearer, logoutUrl } = JSON.parse(keys.unseal(handoff.payload)) as Omit<SsoSession, 'user'>;
    return { bearer, user: user.name, logoutUrl };
  }

  /** Forgets sign-ins never finished and codes never traded (called by the sweeper). */
  async prune(): Promise<void> {
    const now = this.deps.clock.now();
    await this.deps.store.prune(now - PENDING_MS, now);
  }

  private async failed(
    reason: FailureReason,
    why: string,
    user: string | null,
    remote: string | null,
    lang: Lang,
    to: ReturnTo,
  ): Promise<SsoFailure> {
    await this.deps.audit.record({ event: 'login.oidc.failed', user, remote, detail: `${reason}: ${why}` });
    return new SsoFailure(reason, why, lang, to);
  }
}
