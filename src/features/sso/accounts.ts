// Which account a person signs in as (docs/sso.md, "Accounts"): the one bound to the provider's
// subject; else the account of the mapped user name, bound at its first single sign-on unless it is
// bound to another subject; else a new account when REMESSA_OIDC_CREATE_USERS is on. E-mail,
// language and (when a role claim is set) role follow the provider at every sign-in, through
// UserService so each change has its audit row.
import type { OidcConfig } from '../../app/config.js';
import { DomainError } from '../../platform/errors.js';
import type { UserRow } from '../../platform/sql/schema.js';
import type { ChangedBy, UserFields, UserService } from '../users/user-service.js';
import { isUserName } from '../users/validation.js';
import { emailOf, langOf, roleOf, userNameOf } from './claims.js';
import { Refusal } from './failure.js';

export class SsoAccounts {
  constructor(
    private readonly users: UserService,
    private readonly settings: OidcConfig,
  ) {}

  async resolve(claims: Record<string, unknown>, sub: string, remote: string | null): Promise<UserRow> {
    const by: ChangedBy = { via: 'sso', remote };
    const user = (await this.users.bySsoSubject(sub)) ?? (await this.firstSignIn(claims, sub, by));
    if (!user.enabled) throw new Refusal('disabled', 'the account is disabled', user.name);
    return this.follow(user, claims, by);
  }

  private async firstSignIn(claims: Record<string, unknown>, sub: string, by: ChangedBy): Promise<UserRow> {
    const name = userNameOf(claims, this.settings);
    if (name === null)
      throw new Refusal('no-name', `no ${this.settings.usernameClaims.join(' or ')} claim`, null);
    if (!isUserName(name))
      throw new Refusal(
        'bad-name',
        `the user name claim is not a valid user name: "${name.slice(0, 80)}"`,
        null,
      );
    const existing = await this.users.find(name);
    try {
      if (existing) {
        if (existing.sso_subject !== null)
          throw new Refusal('name-taken', 'the account is bound to another subject', existing.name);
        if (!existing.enabled) throw new Refusal('disabled', 'the account is disabled', existing.name);
        return await this.users.bindSsoSubject(existing.name, sub, by);
      }
      if (!this.settings.createUsers)
        throw new Refusal('no-account', 'no account of that name (REMESSA_OIDC_CREATE_USERS is off)', name);
      const fields: UserFields = { ssoSubject: sub, email: emailOf(claims) };
      const lang = langOf(claims);
      if (lang) fields.lang = lang;
      const role = roleOf(claims, this.settings);
      if (role) fields.role = role;
      return await this.users.create(name, fields, null, by);
    } catch (err) {
      // Another sign-in of the same name or subject won a race: refused, never merged.
      if (err instanceof DomainError && err.kind === 'conflict')
        throw new Refusal('name-taken', err.detail ?? 'conflict', name);
      throw err;
    }
  }

  /** The provider's e-mail, language and role written to the account where they changed. */
  private async follow(user: UserRow, claims: Record<string, unknown>, by: ChangedBy): Promise<UserRow> {
    const fields: UserFields = {};
    const email = emailOf(claims);
    if (email !== null && email !== user.email) fields.email = email;
    const lang = langOf(claims);
    if (lang !== null && lang !== user.lang) fields.lang = lang;
    const role = roleOf(claims, this.settings);
    if (role !== null && role !== user.role) fields.role = role;
    if (Object.keys(fields).length === 0) return user;
    return this.users.update(user.name, fields, by);
  }
}
