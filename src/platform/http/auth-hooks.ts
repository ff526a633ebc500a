// Reusable authentication for routes: Basic, Bearer, or either (interface §5).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { BearerSession, Principal } from '../../features/auth/auth-service.js';
import { type Scope, scopeAllows } from '../../features/keys/api-keys.js';
import { DomainError, forbidden } from '../errors.js';
import type { UserRow } from '../sql/schema.js';
import { AppError, badRequest } from './http-error.js';

/** 401 with the challenge a client answers (or none, for a handler behind a hook). */
const unauthorized = (detail?: string, challenge: Record<string, string> = {}) =>
  new AppError(401, detail, challenge);

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated user, set by the auth hooks. */
    user: UserRow | null;
    /** Set when the user authenticated with a bearer token (logout needs it). */
    session: BearerSession | null;
    /** The API key the request was made with (directly or through its token), or null. */
    apiKey: { id: string; scopes: readonly Scope[] | null } | null;
  }
  interface FastifyContextConfig {
    /** What an API key with scopes must hold to make this request (features/keys/api-keys.ts). */
    keyScope?: Scope | 'any';
  }
}

const CHALLENGE = { 'WWW-Authenticate': 'Basic realm="Remessa", charset="UTF-8"' };
const BEARER_CHALLENGE = { 'WWW-Authenticate': 'Bearer realm="Remessa", error="invalid_token"' };

export interface Credentials {
  name: string;
  password: string;
}

/** Parses `Basic base64(user:password)`; malformed values are a 400, not a 401. */
export function parseBasic(header: string): Credentials {
  const m = /^Basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(header);
  if (!m) throw badRequest('malformed Basic authorization');
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0) throw badRequest('malformed Basic authorization');
  return { name: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

type Scheme = 'basic' | 'bearer';

/** A Basic or Bearer header's principal, or the refusal with the challenge a client answers. */
async function principalOf(request: FastifyRequest, schemes: readonly Scheme[]): Promise<Principal> {
  const header = request.headers.authorization;
  if (!header) throw unauthorized('authorization required', CHALLENGE);
  const scheme = header.split(' ', 1)[0]!.toLowerCase();
  const { auth } = request.server.services;
  if (scheme === 'basic' && schemes.includes('basic')) {
    const { name, password } = parseBasic(header);
    return auth.checkCredentials(name, password, request.ip);
  }
  if (scheme === 'bearer' && schemes.includes('bearer')) {
    const token = header.slice(7).trim();
    if (!token) throw badRequest('malformed Bearer authorization');
    try {
      request.session = await auth.verifyBearer(token);
    } catch (err) {
      // A Bearer challenge: a Basic one would make browsers pop up a password dialog over the portal.
      if (err instanceof DomainError && err.kind === 'unauthorized')
        throw unauthorized(err.detail, BEARER_CHALLENGE);
      throw err;
    }
    return request.session;
  }
  throw unauthorized(
    `use ${schemes.map((s) => (s === 'basic' ? 'Basic' : 'Bearer')).join(' or ')}`,
    CHALLENGE,
  );
}

function authenticator(schemes: readonly Scheme[]) {
  return async function authenticate(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const principal = await principalOf(request, schemes);
    request.user = principal.user;
    request.apiKey = principal.keyId === null ? null : { id: principal.keyId, scopes: principal.scopes };
    if (!scopeAllows(principal.scopes, request.routeOptions.config.keyScope))
      throw forbidden("this API key's scopes do not cover this request");
  };
}

export const requireBasic = authenticator(['basic']);
export const requireBearer = authenticator(['bearer']);
export const requireUser = authenticator(['basic', 'bearer']);

/** For handlers behind one of the hooks above. */
export function currentUser(request: FastifyRequest): UserRow {
  if (!request.user) throw unauthorized();
  return request.user;
}

/**
 * Every route registered after this in `app`'s plugin needs `scopeOf(method)` of a key with
 * scopes (a whole area of the API: the admin API, resumable uploads).
 */
export function keyScopeOfRoutes(app: FastifyInstance, scopeOf: (method: string) => Scope): void {
  app.addHook('onRoute', (route) => {
    const method = Array.isArray(route.method) ? route.method[0]! : route.method;
    route.config = { ...route.config, keyScope: route.config?.keyScope ?? scopeOf(method) };
  });
}
