// Why a single sign-on did not sign the person in: each reason has its page (failure-page.ts), its
// domain kind (the HTTP layer's status) and a `why` for the audit row that never holds a token.
import type { Lang } from '../../app/config.js';
import { DomainError, type ErrorKind } from '../../platform/errors.js';
import type { ProviderFailure } from './oidc-client.js';

export type FailureReason =
  | ProviderFailure
  /** The state is unknown, used already, or its sign-in started too long ago. */
  | 'expired'
  /** The callback reached a browser other than the one that started the sign-in. */
  | 'other-browser'
  /** The claims hold no user name, or one Remessa does not accept. */
  | 'no-name'
  | 'bad-name'
  /** Nobody has that name and accounts are not created at sign-in. */
  | 'no-account'
  /** The name belongs to an account bound to another person at the provider. */
  | 'name-taken'
  | 'disabled';

const KIND: Record<FailureReason, ErrorKind> = {
  unreachable: 'unavailable',
  untrusted: 'unavailable',
  rejected: 'invalid',
  expired: 'invalid',
  denied: 'forbidden',
  'other-browser': 'forbidden',
  'no-name': 'forbidden',
  'bad-name': 'forbidden',
  'no-account': 'forbidden',
  'name-taken': 'forbidden',
  disabled: 'forbidden',
};

/** An account rule refused the person (src/features/sso/accounts.ts). */
export class Refusal extends Error {
  constructor(
    readonly reason: FailureReason,
    readonly why: string,
    /** The account or claimed name, for the audit row; null when there is none. */
    readonly user: string | null,
  ) {
    super(why);
  }
}

/** A sign-in that failed: what its page says, in the person's language, and where it leads back. */
export class SsoFailure extends DomainError {
  constructor(
    readonly reason: FailureReason,
    why: string,
    readonly lang: Lang,
    readonly returnTo: 'portal' | 'admin',
  ) {
    super(KIND[reason], why);
  }
}
