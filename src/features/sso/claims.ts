// What the provider's claims say about the person, by Remessa's rules (docs/sso.md): the user name
// from the configured claims in order, the role from the role claim's values through the role map
// (the highest wins; none matching is `user`), the language from `locale`'s primary subtag.
import type { OidcConfig } from '../../app/config.js';
import type { Role } from '../users/roles.js';
import { isEmail, isLang } from '../users/validation.js';

const RANK: Record<Role, number> = { user: 0, auditor: 1, admin: 2 };

/** The first configured user-name claim that holds a non-empty string, or null. */
export function userNameOf(claims: Record<string, unknown>, settings: OidcConfig): string | null {
  for (const name of settings.usernameClaims) {
    const value = claims[name];
    if (typeof value === 'string' && value.trim() !== '') return value.trim();
  }
  return null;
}

/** The role the claim's values (a string or an array of them) map to; null when roles are not mapped. */
export function roleOf(claims: Record<string, unknown>, settings: OidcConfig): Role | null {
  if (settings.roleClaim === null) return null;
  const raw = claims[settings.roleClaim];
  const values = Array.isArray(raw) ? raw : raw === undefined || raw === null ? [] : [raw];
  let role: Role = 'user';
  for (const value of values) {
    const mapped = typeof value === 'string' ? settings.roleMap.get(value) : undefined;
    if (mapped && RANK[mapped] > RANK[role]) role = mapped;
  }
  return role;
}

/** `es-ES` → `es`; null for a language Remessa does not speak. */
export function langOf(claims: Record<string, unknown>): string | null {
  const locale = claims['locale'];
  if (typeof locale !== 'string') return null;
  const primary = locale.split(/[-_]/)[0]!.toLowerCase();
  return isLang(primary) ? primary : null;
}

/** The `email` claim when it is an address Remessa accepts. */
export function emailOf(claims: Record<string, unknown>): string | null {
  const email = claims['email'];
  return typeof email === 'string' && isEmail(email) ? email : null;
}
