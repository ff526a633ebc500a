// REMESSA_OIDC_*: single sign-on through an OpenID provider (docs/sso.md). On when the issuer and
// the client id are set; everything else has a default.
import { isIP } from 'node:net';
import { isRole, type Role } from '../features/users/roles.js';
import type { OidcConfig } from './config.js';
import { ConfigError, type Reader } from './config-reader.js';

/** Plain http is for a provider on this machine (tests, a local Keycloak): never across a network. */
function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}

function parseIssuer(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`REMESSA_OIDC_ISSUER must be an absolute https URL, got "${raw}"`);
  }
  const insecureOk = url.protocol === 'http:' && isLoopback(url.hostname);
  if (url.protocol !== 'https:' && !insecureOk)
    throw new ConfigError(
      `REMESSA_OIDC_ISSUER must use https (http only on a loopback address), got "${raw}"`,
    );
  if (url.search || url.hash) throw new ConfigError('REMESSA_OIDC_ISSUER must not have a query or fragment');
  return raw;
}

/** REMESSA_OIDC_ROLE_MAP: `value=role` pairs, comma-separated (`remessa-admins=admin,audit=auditor`). */
export function parseRoleMap(raw: string | null): Map<string, Role> {
  const map = new Map<string, Role>();
  if (raw === null) return map;
  for (const pair of raw.split(',')) {
    if (pair.trim() === '') continue;
    const at = pair.lastIndexOf('=');
    const value = pair.slice(0, at).trim();
    const role = pair.slice(at + 1).trim();
    if (at <= 0 || value === '' || !isRole(role))
      throw new ConfigError(
        `REMESSA_OIDC_ROLE_MAP must be value=role pairs (roles: user, auditor, admin), got "${pair.trim()}"`,
      );
    map.set(value, role);
  }
  return map;
}

export function oidcSettings(r: Reader): OidcConfig | null {
  const issuerRaw = r.optional('REMESSA_OIDC_ISSUER');
  const clientId = r.optional('REMESSA_OIDC_CLIENT_ID');
  if (issuerRaw === null && clientId === null) return null;
  if (issuerRaw === null || clientId === null)
    throw new ConfigError('REMESSA_OIDC_ISSUER and REMESSA_OIDC_CLIENT_ID go together');
  const issuer = parseIssuer(issuerRaw);
  const scopes = r.str('REMESSA_OIDC_SCOPES', 'openid email profile');
  if (!scopes.split(/\s+/).includes('openid'))
    throw new ConfigError(`REMESSA_OIDC_SCOPES must include openid, got "${scopes}"`);
  const claim = r.optional('REMESSA_OIDC_USERNAME_CLAIM');
  return {
    issuer,
    clientId,
    clientSecret: r.optional('REMESSA_OIDC_CLIENT_SECRET'),
    scopes,
    name: r.str('REMESSA_OIDC_NAME', new URL(issuer).hostname),
    usernameClaims: claim === null ? ['preferred_username', 'email'] : [claim],
    roleClaim: r.optional('REMESSA_OIDC_ROLE_CLAIM'),
    roleMap: parseRoleMap(r.optional('REMESSA_OIDC_ROLE_MAP')),
    createUsers: r.bool('REMESSA_OIDC_CREATE_USERS', false),
  };
}
