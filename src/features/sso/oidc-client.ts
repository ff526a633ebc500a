// The relying party's side of OpenID Connect, through openid-client (certified): discovery, the
// authorization URL with PKCE, the code grant with its checks (state, nonce, PKCE, the ID token's
// signature, issuer, audience and expiry), the UserInfo claims and the end-session URL. Discovery
// happens at the first sign-in and again after a failure, so Remessa starts and serves everything
// else while the provider is down. Every exchange with the provider is bounded.
import * as oidc from 'openid-client';
import type { OidcConfig } from '../../app/config.js';

/** Seconds one request to the provider may take (discovery, token, keys, UserInfo). */
const REQUEST_SECONDS = 4;
/** A whole exchange (discovery included) gives up after this long: the page is due within 10 s. */
export const EXCHANGE_MS = 8_000;

/** Why a step with the provider failed, in the terms the sign-in's page speaks. */
export type ProviderFailure =
  /** Down, slow, or not speaking OpenID Connect. */
  | 'unreachable'
  /** It answered, but its ID token failed a check (signature, issuer, audience, expiry, nonce). */
  | 'untrusted'
  /** The authorization response or code is not one the provider issued for this sign-in. */
  | 'rejected'
  /** The person, or the provider's policy, declined (error=access_denied…). */
  | 'denied';

export class ProviderError extends Error {
  constructor(
    readonly failure: ProviderFailure,
    /** Safe to record: names the check that failed, never a token or a code. */
    readonly why: string,
  ) {
    super(why);
  }
}

const DENIALS = new Set(['access_denied', 'login_required', 'consent_required', 'interaction_required']);
const UNTRUSTED = new Set([
  'OAUTH_JWT_CLAIM_COMPARISON_FAILED',
  'OAUTH_INVALID_RESPONSE',
  'OAUTH_JWT_TIMESTAMP_CHECK_FAILED',
  'OAUTH_KEY_SELECTION_FAILED',
]);

/** The openid-client error of a grant, as the page and the audit row name it. */
export function classify(err: unknown): ProviderError {
  if (err instanceof ProviderError) return err;
  if (err instanceof oidc.AuthorizationResponseError) {
    const failure = DENIALS.has(err.error) ? 'denied' : 'unreachable';
    return new ProviderError(failure, `provider answered error=${err.error.slice(0, 64)}`);
  }
  if (err instanceof oidc.ResponseBodyError) {
    const failure = err.error === 'invalid_grant' ? 'rejected' : 'unreachable';
    return new ProviderError(failure, `token endpoint answered error=${err.error.slice(0, 64)}`);
  }
  if (err instanceof oidc.ClientError) {
    const inner = err.cause instanceof Error ? err.cause.message : err.message;
    if (err.code && UNTRUSTED.has(err.code)) return new ProviderError('untrusted', inner.slice(0, 200));
    if (err.code === 'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED')
      return new ProviderError('rejected', inner.slice(0, 200));
    return new ProviderError('unreachable', inner.slice(0, 200));
  }
  const why = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return new ProviderError('unreachable', why.slice(0, 200));
}

/** Runs `work`, or fails as 'unreachable' after EXCHANGE_MS (its late result is dropped). */
export async function bounded<T>(work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new ProviderError('unreachable', `${what}: no answer within ${EXCHANGE_MS / 1000}s`)),
      EXCHANGE_MS,
    );
  });
  work.catch(() => {});
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

export interface GrantChecks {
  state: string;
  nonce: string;
  verifier: string;
}

export interface SignedInClaims {
  /** The ID token's claims, completed by UserInfo's when the provider has that endpoint. */
  claims: Record<string, unknown>;
  sub: string;
  idToken: string;
}

export class OidcClient {
  private discovered: Promise<oidc.Configuration> | null = null;

  constructor(
    private readonly settings: OidcConfig,
    /** The callback URL registered at the provider: {base_url}/auth/oidc/callback. */
    readonly redirectUri: string,
  ) {}

  /** The provider's configuration, discovered once; a failed discovery is tried again next time. */
  private configuration(): Promise<oidc.Configuration> {
    if (!this.discovered) {
      const { issuer, clientId, clientSecret } = this.settings;
      const url = new URL(issuer);
      this.discovered = oidc
        .discovery(
          url,
          clientId,
          clientSecret ?? undefined,
          clientSecret === null ? oidc.None() : oidc.ClientSecretBasic(clientSecret),
          {
            timeout: REQUEST_SECONDS,
            // The ID token's signature is checked against the provider's keys although it came
            // straight from the token endpoint (which the specification would let a client
            // trust by TLS alone). http is accepted only for a loopback issuer (config-oidc.ts).
            execute: [
              oidc.enableNonRepudiationChecks,
              ...(url.protocol === 'http:' ? [oidc.allowInsecureRequests] : []),
            ],
          },
        )
        .catch((err: unknown) => {
          this.discovered = null;
          const why = err instanceof Error ? (err.cause instanceof Error ? err.cause : err).message : '';
          throw new ProviderError('unreachable', `discovery of ${issuer} failed: ${why}`.slice(0, 200));
        });
    }
    return this.discovered;
  }

  /** Where to send the person: the authorization endpoint with PKCE (S256), state and nonce. */
  async authorizationUrl(checks: GrantChecks, lang: string | null): Promise<URL> {
    const config = await bounded(this.configuration(), 'discovery');
    return oidc.buildAuthorizationUrl(config, {
      redirect_uri: this.redirectUri,
      response_type: 'code',
      scope: this.settings.scopes,
      state: checks.state,
      nonce: checks.nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(checks.verifier),
      code_challenge_method: 'S256',
      ...(lang ? { ui_locales: lang } : {}),
    });
  }

  /** The code grant for the callback's query, every check made; then the UserInfo claims. */
  async signIn(query: string, checks: GrantChecks): Promise<SignedInClaims> {
    return bounded(this.exchange(query, checks), 'sign-in').catch((err: unknown) => {
      throw classify(err);
    });
  }

  private async exchange(query: string, checks: GrantChecks): Promise<SignedInClaims> {
    const config = await this.configuration();
    const tokens = await oidc.authorizationCodeGrant(config, new URL(`${this.redirectUri}?${query}`), {
      pkceCodeVerifier: checks.verifier,
      expectedState: checks.state,
      expectedNonce: checks.nonce,
      idTokenExpected: true,
    });
    const idClaims = tokens.claims();
    if (!idClaims || !tokens.id_token) throw new ProviderError('untrusted', 'no ID token');
    let claims: Record<string, unknown> = { ...idClaims };
    // Providers put the profile's claims in UserInfo (and some only there): read it when offered,
    // for the same subject (openid-client checks it).
    if (config.serverMetadata().userinfo_endpoint)
      claims = { ...(await oidc.fetchUserInfo(config, tokens.access_token, idClaims.sub)), ...idClaims };
    return { claims, sub: idClaims.sub, idToken: tokens.id_token };
  }

  /** The provider's end-session URL (RP-initiated logout), or null when it offers none. */
  async endSessionUrl(idToken: string, postLogoutRedirect: string): Promise<string | null> {
    const config = await this.configuration();
    if (!config.serverMetadata().end_session_endpoint) return null;
    return oidc
      .buildEndSessionUrl(config, { id_token_hint: idToken, post_logout_redirect_uri: postLogoutRedirect })
      .toString();
  }
}
