// Limits on password recovery per ACCOUNT, on top of each change link's own five wrong PINs and
// the per-address request limits: anyone may ask for a new link every minute, so without them one
// client could guess 5 PINs a minute at one account for ever while its owner gets a PIN e-mail a
// minute. Wrong PINs are counted per account across all its links; enough of them lock recovery
// for that account (each lock twice as long as the one before) and tell the owner, once. Recovery
// e-mails to one account are capped per hour. Counts and locks live in the database (users
// columns, rate_limits), so they hold for every instance. docs/security.md has the numbers.

import type { Lang } from '../../app/config.js';
import { type DomainError, tooMany } from '../../platform/errors.js';
import type { RateCounter } from '../../platform/security/rate-counter.js';
import type { Db } from '../../platform/sql/database.js';
import type { UserRow } from '../../platform/sql/schema.js';
import { inTransaction } from '../../platform/sql/transaction.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { NotificationService } from '../notify/notification-service.js';
import { formatDateTime, formatDuration } from '../notify/templates.js';
import type { UserStore } from '../users/user-store.js';

export interface RecoveryLimits {
  /** Wrong PINs for one account, over all its links, that lock its password recovery. */
  maxPinFailures: number;
  /** They count within this many seconds of the first of them. */
  failureWindowSeconds: number;
  /** The first lock; each further one (until a password change or `user enable`) lasts twice as long. */
  lockSeconds: number;
  /** The longest a lock lasts. */
  maxLockSeconds: number;
  /** PIN e-mails (new links and fresh PINs) one account may be sent per hour. */
  mailsPerHour: number;
}

export const RECOVERY_LIMITS: RecoveryLimits = {
  maxPinFailures: 10,
  failureWindowSeconds: 24 * 3600,
  lockSeconds: 3600,
  maxLockSeconds: 24 * 3600,
  mailsPerHour: 5,
};

const HOUR_MS = 3600 * 1000;

export interface RecoveryGuardDeps {
  db: Db;
  users: UserStore;
  counter: RateCounter;
  audit: AuditLog;
  notify: NotificationService;
  limits: RecoveryLimits;
  langOf(user: UserRow): Lang;
}

export class RecoveryGuard {
  constructor(private readonly deps: RecoveryGuardDeps) {}

  get limits(): RecoveryLimits {
    return this.deps.limits;
  }

  /** Seconds until the account's password recovery is open again (0: it is open). */
  lockedFor(user: UserRow, now: number): number {
    const left = Number(user.recovery_locked_until) - now;
    return left > 0 ? Math.ceil(left / 1000) : 0;
  }

  /** The too-many of forgetParameters / firstaccess while the account's recovery is locked. */
  locked(seconds: number): DomainError {
    return tooMany(`password recovery for this account is locked; retry in ${seconds}s`, seconds);
  }

  /** Counts one PIN e-mail to the account: 429 past the hourly budget. */
  /** As spendMail, answering false instead of throwing when the hour's e-mails are spent. */
  async mayMail(user: UserRow): Promise<boolean> {
    const { count } = await this.deps.counter.hit(`recovery-mail:${user.id}`, HOUR_MS);
    return count <= this.limits.mailsPerHour;
  }

  async spendMail(user: UserRow): Promise<void> {
    const { count, ttl } = await this.deps.counter.hit(`recovery-mail:${user.id}`, HOUR_MS);
    if (count <= this.limits.mailsPerHour) return;
    const wait = Math.max(1, Math.ceil(ttl / 1000));
    throw tooMany(
      `at most ${this.limits.mailsPerHour} password e-mails an hour to one account; retry in ${wait}s`,
      wait,
    );
  }

  /**
   * Counts a wrong PIN against the account. The one that reaches the limit locks recovery and,
   * in the same transaction, queues the owner's warning: of concurrent ones only one does. True
   * when this failure locked the account.
   */
  async wrongPin(user: UserRow, now: number, remote: string | null): Promise<boolean> {
    const { users, db, limits } = this.deps;
    const counted = await users.countRecoveryFailure(user.id, now, limits.failureWindowSeconds * 1000);
    if (!counted || counted.failures < limits.maxPinFailures) return false;
    const seconds = Math.min(limits.lockSeconds * 2 ** Math.min(counted.locks, 30), limits.maxLockSeconds);
    const until = now + seconds * 1000;
    const locked = await inTransaction(db, async (trx) => {
      if (!(await users.lockRecovery(user.id, now, until, limits.maxPinFailures, trx))) return false;
      await this.warn(trx, user, seconds, until);
      await this.deps.audit.record(
        {
          event: 'password.recovery_locked',
          user: user.name,
          remote,
          detail: { failures: counted.failures, seconds },
        },
        trx,
      );
      return true;
    });
    if (locked) this.deps.notify.kick();
    return locked;
  }

  private async warn(trx: Db, user: UserRow, seconds: number, until: number): Promise<void> {
    if (!user.email) return;
    const lang = this.deps.langOf(user);
    await this.deps.notify.enqueue(trx, {
      channel: 'email',
      recipient: user.email,
      lang,
      kind: 'recovery-locked',
      userName: user.name,
      vars: {
        user: user.name,
        failures: String(this.limits.maxPinFailures),
        lockedFor: formatDuration(seconds, lang),
        lockedUntil: formatDateTime(until, lang),
      },
    });
  }
}
