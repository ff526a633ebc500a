// Password recovery and first access. A change token (256 random bits, stored as its
// SHA-256) is the key of the link; a 6-digit PIN e-mailed to the user (stored as an HMAC) proves
// the mailbox. Knows nothing of HTTP.

import type { Lang } from '../../app/config.js';
import type { Clock } from '../../platform/clock.js';
import { forbidden, invalid, unauthorized } from '../../platform/errors.js';
import { type Keys, randomToken, sha256 } from '../../platform/security/keys.js';
import { PinLifecycle, PinPolicy } from '../../platform/security/pins.js';
import type { RateCounter } from '../../platform/security/rate-counter.js';
import type { Db } from '../../platform/sql/database.js';
import type { ChangeTokenRow, UserRow } from '../../platform/sql/schema.js';
import { inTransaction } from '../../platform/sql/transaction.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { NotificationService } from '../notify/notification-service.js';
import { formatDuration } from '../notify/templates.js';
import type { UserService } from '../users/user-service.js';
import type { UserStore } from '../users/user-store.js';
import { isEmail, isLang } from '../users/validation.js';
import type { ChangeTokenStore } from './change-token-store.js';
import { RECOVERY_LIMITS, RecoveryGuard, type RecoveryLimits } from './recovery-lock.js';

export type ChangePurpose = 'forget' | 'firstaccess';

export interface RecoveryOptions {
  baseUrl: string;
  defaultLang: Lang;
  pinSeconds: number;
  /** Lifetime of a change link (30 minutes). */
  linkSeconds?: number;
  /** Wrong PINs before the link dies. */
  maxPinFailures?: number;
  /** Minimum gap between two PIN e-mails for one link, and between two links for one user. */
  resendSeconds?: number;
  /** Per-account limits (recovery-lock.ts); RECOVERY_LIMITS unless given. */
  limits?: RecoveryLimits;
}

export interface ChangeInput {
  k?: string;
  p?: string;
  z?: string;
}

export interface LinkResult {
  user: UserRow;
  linkURL: string;
}

export interface RecoveryDeps {
  db: Db;
  tokens: ChangeTokenStore;
  users: UserService;
  /** The per-account counts and locks are written straight to the users table. */
  userStore: UserStore;
  rateCounter: RateCounter;
  audit: AuditLog;
  keys: Keys;
  clock: Clock;
  notify: NotificationService;
  opts: RecoveryOptions;
}

export class RecoveryService {
  private readonly linkMs: number;
  private readonly maxFailures: number;
  private readonly resendMs: number;
  private readonly pins: PinLifecycle;
  private readonly guard: RecoveryGuard;
  private readonly db: Db;
  private readonly tokens: ChangeTokenStore;
  private readonly users: UserService;
  private readonly audit: AuditLog;
  private readonly clock: Clock;
  private readonly notify: NotificationService;
  private readonly opts: RecoveryOptions;

  constructor(deps: RecoveryDeps) {
    ({
      db: this.db,
      tokens: this.tokens,
      users: this.users,
      audit: this.audit,
      clock: this.clock,
      notify: this.notify,
      opts: this.opts,
    } = deps);
    const { opts, tokens } = deps;
    this.linkMs = (opts.linkSeconds ?? 30 * 60) * 1000;
    this.maxFailures = opts.maxPinFailures ?? 5;
    this.resendMs = (opts.resendSeconds ?? 60) * 1000;
    this.pins = new PinLifecycle({
      db: deps.db,
      policy: new PinPolicy(deps.keys, opts.pinSeconds, opts.resendSeconds ?? 60),
      maxFailures: this.maxFailures,
      // No lock and no reset: a change link with maxFailures wrong PINs is dead, and a right PIN
      // uses it up.
      rows: tokens.pinWrites,
    });
    this.guard = new RecoveryGuard({
      db: deps.db,
      users: deps.userStore,
      counter: deps.rateCounter,
      audit: deps.audit,
      notify: deps.notify,
      limits: opts.limits ?? RECOVERY_LIMITS,
      langOf: (user) => this.langOf(user),
    });
  }

  private langOf(user: UserRow): Lang {
    return isLang(user.lang) ? user.lang : this.opts.defaultLang;
  }

  private linkFor(user: UserRow, token: string): string {
    return `${this.opts.baseUrl}/auth/change?lang=${this.langOf(user)}&k=${token}`;
  }

  private async failed(user: string | null, remote: string | null, detail: string): Promise<void> {
    await this.audit.record({ event: 'password.change_failed', user, remote, detail });
  }

  /**
   * forgetParameters / firstaccess: issues a change link and e-mails its PIN.
   * Unknown user → 401; disabled, no e-mail, or (first access) not in first-access state → 403;
   * a second link for the same user within a minute, recovery locked for the account after too
   * many wrong PINs, or more PIN e-mails to it in an hour than allowed → 429.
   * forgetParameters also takes an account's e-mail address (when no user has it as a name): the
   * link goes to that mailbox only and the answer is the unknown user's 401 in every case, so an
   * address tells nobody whether it has an account. `actor`: the admin who asked for it (the admin
   * API's password reset and new accounts), named in the audit rows.
   */
  async issueLink(
    name: string,
    purpose: ChangePurpose,
    remote: string | null,
    actor?: string,
  ): Promise<LinkResult> {
    const user = await this.users.find(name);
    if (!user) {
      if (purpose === 'forget' && isEmail(name)) await this.mailLinksTo(name, remote);
      else await this.failed(name.slice(0, 64), remote, `${purpose}: unknown user`);
      throw unauthorized();
    }
    const refuse = !user.enabled
      ? 'account disabled'
      : !user.email
        ? 'no e-mail address on record'
        : purpose === 'firstaccess' && !user.first_access
          ? 'account is not in first-access state'
          : null;
    if (refuse) {
      await this.failed(user.name, remote, `${purpose}: ${refuse}`);
      throw forbidden(refuse === 'account disabled' ? undefined : refuse);
    }
    const now = this.clock.now();
    const locked = this.guard.lockedFor(user, now);
    if (locked > 0) {
      await this.failed(user.name, remote, `${purpose}: password recovery locked`);
      throw this.guard.locked(locked);
    }
    // One link per user per resend period: a new link is also a PIN sent.
    const recent = await this.tokens.newestSince(user.id, now - this.resendMs);
    if (recent !== undefined) throw this.pins.policy.tooSoon(this.pins.policy.resendWait(recent, now));
    await this.guard.spendMail(user);
    const linkURL = await this.createLink(user, purpose, remote, now, actor ? { actor } : {});
    return { user, linkURL };
  }

  /** Forgot password by e-mail address: a link to every enabled account with it, none too soon. */
  private async mailLinksTo(email: string, remote: string | null): Promise<void> {
    const now = this.clock.now();
    const accounts = (await this.users.byEmail(email)).filter((u) => u.enabled);
    if (accounts.length === 0) await this.failed(null, remote, 'forget: no account with this e-mail address');
    for (const user of accounts) {
      // The same limits as by name, skipped silently: the answer is 401 whatever happens here.
      if (this.guard.lockedFor(user, now) > 0) continue;
      if ((await this.tokens.newestSince(user.id, now - this.resendMs)) !== undefined) continue;
      if (!(await this.guard.mayMail(user))) continue;
      await this.createLink(user, 'forget', remote, now, { by: 'email' });
    }
  }

  /** Stores a change token, queues its PIN e-mail and audits both; returns the link. */
  private async createLink(
    user: UserRow,
    purpose: ChangePurpose,
    remote: string | null,
    now: number,
    { by, actor }: { by?: 'email'; actor?: string },
  ): Promise<string> {
    const token = randomToken();
    const linkURL = this.linkFor(user, token);
    const { pin, columns } = this.pins.policy.issue(now);
    await inTransaction(this.db, async (trx) => {
      const id = await this.tokens.insert(trx, {
        userId: user.id,
        tokenHash: sha256(token),
        purpose,
        ...columns,
        expiresAt: now + this.linkMs,
        createdAt: now,
      });
      await this.enqueuePin(trx, user, purpose, pin, linkURL);
      await this.audit.record(
        {
          event: 'password.link_issued',
          user: user.name,
          actor,
          remote,
          detail: by ? { purpose, link: id, by } : { purpose, link: id },
        },
        trx,
      );
      await this.audit.record(
        { event: 'pin.sent', user: user.name, actor, remote, detail: { purpose, link: id, to: user.email } },
        trx,
      );
    });
    this.notify.kick();
    return linkURL;
  }

  /**
   * changeParameters. k alone: e-mails a fresh PIN. k, p and z: checks the PIN, sets the password,
   * consumes the link and revokes older bearer tokens. Errors: no k, or p without z, or z failing
   * the policy → 400; unknown, expired, used or dead k, or recovery locked for the account (its
   * links answer as dead ones, the right PIN too) → 401; wrong or expired PIN → 403;
   * a PIN asked again within a minute → 429.
   */
  async change(input: ChangeInput, remote: string | null): Promise<LinkResult> {
    const { k, p, z } = input;
    if (!k) throw invalid('k (change token) is required');
    const now = this.clock.now();
    const row = await this.tokens.byTokenHash(sha256(k));
    const user = row ? await this.users.byId(row.user_id) : undefined;
    if (
      !row ||
      !user ||
      row.used_at !== null ||
      row.expires_at <= now ||
      row.pin_failures >= this.maxFailures
    ) {
      await this.failed(user?.name ?? null, remote, 'invalid, expired or used change link');
      throw unauthorized('change link is invalid, expired or already used');
    }
    if (this.guard.lockedFor(user, now) > 0) {
      await this.failed(user.name, remote, 'password recovery locked');
      throw unauthorized('change link is invalid, expired or already used');
    }
    if (!user.enabled) {
      await this.failed(user.name, remote, 'account disabled');
      throw forbidden();
    }
    const linkURL = this.linkFor(user, k);

    if (!p) {
      if (z) {
        await this.failed(user.name, remote, 'new password without PIN');
        throw invalid('p (PIN) is required to set a password');
      }
      await this.resendPin(row, user, linkURL, now, remote);
      return { user, linkURL };
    }
    if (!z) {
      await this.failed(user.name, remote, 'PIN without new password');
      throw invalid('z (new password) is required');
    }
    try {
      this.users.checkPasswordPolicy(z);
    } catch (err) {
      await this.failed(user.name, remote, 'new password fails the policy');
      throw err;
    }
    await this.checkPin(row, user, p, now, remote);

    // Consume atomically: of two concurrent requests with the right PIN only one proceeds.
    if (!(await this.tokens.consume(row.id, now, this.maxFailures))) {
      await this.failed(user.name, remote, 'change link used concurrently');
      throw unauthorized('change link is invalid, expired or already used');
    }
    // Every other open link of this user dies with the change.
    await this.tokens.consumeAll(user.id, now);
    await this.users.setPassword(user, z, row.purpose, remote);
    return { user, linkURL };
  }

  private async checkPin(
    row: ChangeTokenRow,
    user: UserRow,
    pin: string,
    now: number,
    remote: string | null,
  ): Promise<void> {
    const verdict = await this.pins.verify(row, pin, now);
    if (verdict.result === 'none' || verdict.result === 'expired') {
      await this.audit.record({ event: 'pin.failed', user: user.name, remote, detail: 'PIN expired' });
      throw forbidden('PIN expired: ask for a new one');
    }
    if (verdict.result === 'match') return;
    const { failures } = verdict;
    await this.audit.record({
      event: 'pin.failed',
      user: user.name,
      remote,
      detail: { link: row.id, failures },
    });
    if (verdict.locked) {
      await this.failed(user.name, remote, `${failures} wrong PINs: change link disabled`);
    }
    if (await this.guard.wrongPin(user, now, remote)) {
      // Every open link of the account dies with the lock, so none outlives it.
      await this.tokens.consumeAll(user.id, now);
    }
    throw forbidden('wrong PIN');
  }

  private async resendPin(
    row: ChangeTokenRow,
    user: UserRow,
    linkURL: string,
    now: number,
    remote: string | null,
  ): Promise<void> {
    if (!user.email) {
      await this.failed(user.name, remote, 'no e-mail address on record');
      throw forbidden('no e-mail address on record');
    }
    this.pins.checkSlot(row, now);
    await this.guard.spendMail(user);
    await this.pins.send(row, now, async (trx, pin) => {
      await this.enqueuePin(trx, user, row.purpose as ChangePurpose, pin, linkURL);
      await this.audit.record(
        {
          event: 'pin.sent',
          user: user.name,
          remote,
          detail: { purpose: row.purpose, link: row.id, to: user.email },
        },
        trx,
      );
    });
    this.notify.kick();
  }

  private async enqueuePin(
    db: Db,
    user: UserRow,
    purpose: ChangePurpose,
    pin: string,
    linkURL: string,
  ): Promise<void> {
    const lang = this.langOf(user);
    await this.notify.enqueue(db, {
      channel: 'email',
      recipient: user.email!,
      lang,
      kind: 'password-pin',
      userName: user.name,
      vars: {
        user: user.name,
        pin,
        pinValidity: formatDuration(this.opts.pinSeconds, lang),
        link: linkURL,
        linkValidity: formatDuration(this.linkMs / 1000, lang),
        firstAccess: purpose === 'firstaccess' ? 'yes' : '',
      },
    });
  }
}
