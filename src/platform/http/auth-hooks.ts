// Reusable authentication for routes: Basic, Bearer, or either (interface §5).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { BearerSession } from '../../features/auth/auth-service.js';
import { DomainError } from '../errors.js';
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

function authenticator(schemes: readonly Scheme[]) {
  return async function authenticate(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const header = request.headers.authorization;
    if (!header) throw unauthorized('authorization required', CHALLENGE);
    const scheme = header.split(' ', 1)[0]!.toLowerCase();
    const { auth } = request.server.services;
    if (scheme === 'basic' && schemes.includes('basic')) {
      const { name, password } = parseBasic(header);
      request.user = await auth.checkPassword(name, password, request.ip);
      return;
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
      request.user = request.session.user;
      return;
    }
    throw unauthorized(
      `use ${schemes.map((s) => (s === 'basic' ? 'Basic' : 'Bearer')).join(' or ')}`,
      CHALLENGE,
    );
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
