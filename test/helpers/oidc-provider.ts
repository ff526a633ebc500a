// Identity providers for the single sign-on tests. `startIdentityProvider`: a real OpenID provider
// (the `oidc-provider` package, certified by the OpenID Foundation) on a free port, its accounts'
// claims in a map the test changes, its development login form (any password), PKCE required,
// RP-initiated logout on. `startFakeProvider`: a small server that speaks just enough OpenID
// Connect to hand out the ID tokens a real provider never would (another key, issuer, audience,
// expired, a stale nonce) or never to answer. Both close with the test.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import Provider, { type KoaContextWithOidc } from 'oidc-provider';
import { freePort } from './server.js';

export const CLIENT_ID = 'remessa';
export const CLIENT_SECRET = 'remessa-client-secret-for-tests';

export interface Person {
  preferred_username?: string;
  email?: string;
  locale?: string;
  groups?: string[];
}

export interface IdentityProvider {
  /** The issuer URL (REMESSA_OIDC_ISSUER). */
  issuer: string;
  /** Claims by subject (the login form's user name is the subject). */
  people: Map<string, Person>;
  close(): Promise<void>;
}

/** An issuer URL on a free port, for the Remessa server to be configured with before the provider starts. */
export async function issuerOnFreePort(): Promise<string> {
  return `http://127.0.0.1:${await freePort()}`;
}

function listen(server: Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/**
 * A real provider at `issuer` whose one client is Remessa at `remessaBase` ({base_url}): callback
 * {base_url}/auth/oidc/callback, post-logout redirect the portal.
 */
export async function startIdentityProvider(issuer: string, remessaBase: string): Promise<IdentityProvider> {
  const people = new Map<string, Person>();
  const portal = `${new URL(remessaBase).origin}/`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        redirect_uris: [`${remessaBase}/auth/oidc/callback`],
        post_logout_redirect_uris: [portal],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    pkce: { required: () => true },
    claims: {
      openid: ['sub'],
      email: ['email'],
      profile: ['preferred_username', 'locale'],
      groups: ['groups'],
    },
    features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
    cookies: { keys: ['test-cookie-key-test-cookie-key'] },
    ttl: { Interaction: 600, Grant: 3600, Session: 3600, AccessToken: 600, IdToken: 600 },
    async findAccount(_ctx: unknown, sub: string) {
      const person = people.get(sub);
      if (!person) return undefined;
      return { accountId: sub, claims: async () => ({ sub, ...people.get(sub) }) };
    },
    // Remessa is a first-party client: the person is not asked to consent (the grant is made here).
    async loadExistingGrant(ctx: KoaContextWithOidc) {
      const { client, session, result, provider: op } = ctx.oidc;
      const grantId = result?.consent?.grantId ?? session?.grantIdFor(client!.clientId);
      if (grantId) return op.Grant.find(grantId);
      const grant = new op.Grant({ clientId: client!.clientId, accountId: session?.accountId });
      grant.addOIDCScope('openid email profile groups');
      await grant.save();
      return grant;
    },
  });
  const server = createServer(provider.callback());
  await listen(server, Number(new URL(issuer).port));
  return { issuer, people, close: () => closeServer(server) };
}

/** What the fake provider's token endpoint answers. */
export type FakeMode =
  | 'good'
  | 'other-key'
  | 'other-issuer'
  | 'other-audience'
  | 'expired'
  | 'stale-nonce'
  | 'hang'
  | 'nonsense';

export interface FakeProvider {
  issuer: string;
  mode: FakeMode;
  /** The claims of the next ID token (sub included). */
  claims: Record<string, unknown>;
  /** Whether every token request carried the verifier of its authorization request's S256 challenge. */
  pkceChecked: boolean;
  close(): Promise<void>;
}

function json(res: ServerResponse, body: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

async function formOf(req: IncomingMessage): Promise<URLSearchParams> {
  let text = '';
  for await (const chunk of req) text += chunk;
  return new URLSearchParams(text);
}

export async function startFakeProvider(): Promise<FakeProvider> {
  const key = await generateKeyPair('RS256');
  const stranger = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(key.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  const server = createServer();
  await listen(server, 0);
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const flows = new Map<string, { nonce: string; challenge: string }>();
  let lastNonce = '';
  const fake: FakeProvider = {
    issuer,
    mode: 'good',
    claims: { sub: 'fake-1', preferred_username: 'fakeuser' },
    pkceChecked: true,
    close: () => closeServer(server),
  };
  const idToken = async (nonce: string) => {
    const now = Math.floor(Date.now() / 1000);
    const m = fake.mode;
    return new SignJWT({ ...fake.claims, nonce: m === 'stale-nonce' ? lastNonce : nonce })
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setIssuer(m === 'other-issuer' ? 'http://127.0.0.1:1/other' : issuer)
      .setAudience(m === 'other-audience' ? 'someone-else' : CLIENT_ID)
      .setIssuedAt(m === 'expired' ? now - 7200 : now)
      .setExpirationTime(m === 'expired' ? now - 3600 : now + 300)
      .sign(m === 'other-key' ? stranger.privateKey : key.privateKey);
  };
  server.on('request', async (req, res) => {
    const url = new URL(req.url ?? '/', issuer);
    if (url.pathname === '/.well-known/openid-configuration')
      return json(res, {
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['RS256'],
      });
    if (url.pathname === '/jwks') return json(res, { keys: [jwk] });
    if (url.pathname === '/authorize') {
      const code = `code-${flows.size + 1}`;
      flows.set(code, {
        nonce: url.searchParams.get('nonce') ?? '',
        challenge: url.searchParams.get('code_challenge') ?? '',
      });
      const back = new URL(url.searchParams.get('redirect_uri')!);
      back.searchParams.set('code', code);
      back.searchParams.set('state', url.searchParams.get('state') ?? '');
      return res.writeHead(302, { location: back.toString() }).end();
    }
    if (url.pathname === '/token') {
      if (fake.mode === 'hang') return; // never answers
      const form = await formOf(req);
      if (fake.mode === 'nonsense')
        return res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>hi</h1>');
      const flow = flows.get(form.get('code') ?? '');
      if (!flow)
        return res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"invalid_grant"}');
      const challenge = createHash('sha256')
        .update(form.get('code_verifier') ?? '')
        .digest('base64url');
      if (challenge !== flow.challenge) fake.pkceChecked = false;
      const token = await idToken(flow.nonce);
      lastNonce = flow.nonce;
      return json(res, { access_token: 'at', token_type: 'Bearer', expires_in: 300, id_token: token });
    }
    res.writeHead(404).end();
  });
  return fake;
}

/** The Set-Cookie pairs of a response, as a Cookie header's value. */
export function cookiesOf(res: Response): string {
  return res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .join('; ');
}

/**
 * A person signing in without a browser: Remessa's start, then the provider's login form filled
 * as `sub` (any password), following redirects with a cookie jar per site, up to Remessa's
 * callback URL, which is returned unvisited (with the Cookie header the starting browser would send).
 */
export async function signInAtProvider(
  base: string,
  sub: string,
  opts: { to?: 'portal' | 'admin'; lang?: string; abort?: boolean } = {},
): Promise<{ callback: string; cookie: string }> {
  const q = new URLSearchParams({ to: opts.to ?? 'portal', ...(opts.lang ? { lang: opts.lang } : {}) });
  const start = await fetch(`${base}/auth/oidc/start?${q}`, { redirect: 'manual' });
  if (start.status !== 302) throw new Error(`start answered ${start.status}: ${await start.text()}`);
  const cookie = cookiesOf(start);
  const jar = new Map<string, string>();
  let next = start.headers.get('location')!;
  let body: URLSearchParams | undefined;
  for (let hop = 0; hop < 20; hop++) {
    if (next.startsWith(`${base}/auth/oidc/callback`)) return { callback: next, cookie };
    const res = await fetch(next, {
      redirect: 'manual',
      method: body ? 'POST' : 'GET',
      headers: { cookie: [...jar.values()].join('; ') },
      ...(body ? { body } : {}),
    });
    for (const c of res.headers.getSetCookie()) {
      const pair = c.split(';')[0]!;
      jar.set(pair.slice(0, pair.indexOf('=')), pair);
    }
    body = undefined;
    const location = res.headers.get('location');
    if (location) {
      next = new URL(location, next).toString();
      continue;
    }
    const html = await res.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    if (!action || !html.includes('name="login"'))
      throw new Error(`unexpected provider page ${res.status}: ${html.slice(0, 300)}`);
    if (opts.abort) {
      next = new URL(`${action.replace(/\/login$/, '')}/abort`, next).toString();
      continue;
    }
    next = new URL(action, next).toString();
    body = new URLSearchParams({ prompt: 'login', login: sub, password: 'any' });
  }
  throw new Error('too many redirects at the provider');
}

/** Settings of a Remessa that signs people in at the fake provider (accounts made at first sign-in). */
export const fakeProviderEnv = (fake: FakeProvider, more: Record<string, string> = {}) => ({
  REMESSA_OIDC_ISSUER: fake.issuer,
  REMESSA_OIDC_CLIENT_ID: CLIENT_ID,
  REMESSA_OIDC_CREATE_USERS: 'true',
  ...more,
});

/** With the fake provider: start, its immediate redirect back, and the callback as the same browser. */
export async function signInThroughFake(base: string): Promise<Response> {
  const start = await fetch(`${base}/auth/oidc/start`, { redirect: 'manual' });
  assert.equal(start.status, 302);
  const cookie = cookiesOf(start);
  const authorize = await fetch(start.headers.get('location')!, { redirect: 'manual' });
  return fetch(authorize.headers.get('location')!, { redirect: 'manual', headers: { cookie } });
}
