// Six-digit PINs, as used by secure download links and password-change links: issued hashed (a
// keyed HMAC, so a database dump cannot brute-force them offline), valid for a while, compared in
// constant time, and not re-sent more often than once per `resendSeconds`. PinLifecycle is the one
// life cycle both use: a send slot (one PIN per resend period, one sender of concurrent ones),
// counted failures, and a lock when too many were wrong.

import { type DomainError, tooMany } from '../errors.js';
import type { Db } from '../sql/database.js';
import { inTransaction } from '../sql/transaction.js';
import { type Keys, randomPin } from './keys.js';

/** The columns a PIN lives in, on `links`, `change_tokens` and `request_links` alike. */
export interface PinColumns {
  pin_hash: string | null;
  pin_expires_at: number | null;
  pin_sent_at: number | null;
}

export type PinCheck = 'none' | 'expired' | 'match' | 'mismatch';

export class PinPolicy {
  constructor(
    private readonly keys: Keys,
    readonly validSeconds: number,
    readonly resendSeconds: number,
  ) {}

  /** A fresh PIN (to send) and the column values that store it. */
  issue(now: number): { pin: string; columns: PinColumns } {
    const pin = randomPin();
    return {
      pin,
      columns: {
        pin_hash: this.keys.hmac(pin),
        pin_expires_at: now + this.validSeconds * 1000,
        pin_sent_at: now,
      },
    };
  }

  check(row: PinColumns, given: string, now: number): PinCheck {
    if (!row.pin_hash) return 'none';
    if (row.pin_expires_at === null || row.pin_expires_at <= now) return 'expired';
    return this.keys.hmacMatches(given.trim(), row.pin_hash) ? 'match' : 'mismatch';
  }

  /** Seconds until another PIN may be sent (0: now). */
  resendWait(sentAt: number | null, now: number): number {
    if (sentAt === null) return 0;
    const left = sentAt + this.resendSeconds * 1000 - now;
    return left > 0 ? Math.ceil(left / 1000) : 0;
  }

  /** The too-many answer to a PIN asked for too soon. */
  tooSoon(waitSeconds: number): DomainError {
    const wait = Math.max(1, waitSeconds);
    return tooMany(`a code was sent less than ${this.resendSeconds}s ago; retry in ${wait}s`, wait);
  }
}

/** A row that holds a PIN (a link, a change token). */
export interface PinRow extends PinColumns {
  id: number;
  pin_failures: number;
}

/** How a PinLifecycle writes the PIN columns of its table (each table's store provides them). */
export interface PinRows {
  /** Stores a new PIN unless another request stored one since `sentAt` was read. */
  claimSend(trx: Db, id: number, sentAt: number | null, columns: PinColumns): Promise<boolean>;
  /** Counts one wrong PIN; the new count (undefined: the row is gone). */
  countFailure(id: number): Promise<number | undefined>;
  /** Clears the count after a right PIN; absent: the count stays (the row is used up anyway). */
  clearFailures?(id: number): Promise<void>;
  /**
   * Locks the row once it reached `maxFailures`; true for the one caller of concurrent ones that
   * locked it. Absent: a row with `maxFailures` wrong PINs is dead, every such caller "locked" it.
   */
  lock?(id: number, now: number, maxFailures: number): Promise<boolean>;
}

/** The tables whose rows hold a PIN. */
export type PinTable = 'links' | 'change_tokens' | 'request_links';

/**
 * The two PIN writes every PIN table needs, the same SQL on either table (its store exposes them
 * as PinRows): a send slot claimed only if nobody claimed it since `sentAt` was read, and a
 * counted failure returning the new count.
 */
export function pinWrites(db: Db, table: PinTable): Pick<PinRows, 'claimSend' | 'countFailure'> {
  return {
    async claimSend(trx, id, sentAt, columns) {
      const res = await trx
        .updateTable(table)
        .set(columns)
        .where('id', '=', id)
        .where((eb) => (sentAt === null ? eb('pin_sent_at', 'is', null) : eb('pin_sent_at', '=', sentAt)))
        .executeTakeFirst();
      return Number(res.numUpdatedRows) === 1;
    },
    async countFailure(id) {
      const row = await db
        .updateTable(table)
        .set((eb) => ({ pin_failures: eb('pin_failures', '+', 1) }))
        .where('id', '=', id)
        .returning('pin_failures')
        .executeTakeFirst();
      return row?.pin_failures;
    },
  };
}

export type PinVerdict =
  | { result: 'match' }
  | { result: 'none' }
  | { result: 'expired' }
  | { result: 'wrong'; failures: number; locked: boolean };

export interface PinLifecycleDeps {
  db: Db;
  policy: PinPolicy;
  rows: PinRows;
  /** Wrong PINs that lock (or kill) the row. */
  maxFailures: number;
}

export class PinLifecycle {
  readonly policy: PinPolicy;
  readonly maxFailures: number;
  private readonly db: Db;
  private readonly rows: PinRows;

  constructor(deps: PinLifecycleDeps) {
    ({ db: this.db, policy: this.policy, rows: this.rows, maxFailures: this.maxFailures } = deps);
  }

  /**
   * Sends a fresh PIN for `row`: 429 within the resend period. `deliver` queues the message (and
   * its audit row) in the same transaction as the new PIN, so of two concurrent requests exactly
   * one stores a PIN and sends it; the other gets 429 too.
   */
  async send(row: PinRow, now: number, deliver: (trx: Db, pin: string) => Promise<void>): Promise<void> {
    this.checkSlot(row, now);
    const { pin, columns } = this.policy.issue(now);
    const sent = await inTransaction(this.db, async (trx) => {
      if (!(await this.rows.claimSend(trx, row.id, row.pin_sent_at, columns))) return false;
      await deliver(trx, pin);
      return true;
    });
    if (!sent) throw this.policy.tooSoon(this.policy.resendSeconds);
  }

  /** 429 when a PIN was sent for `row` within the resend period (send() checks it too). */
  checkSlot(row: Pick<PinColumns, 'pin_sent_at'>, now: number): void {
    const wait = this.policy.resendWait(row.pin_sent_at, now);
    if (wait > 0) throw this.policy.tooSoon(wait);
  }

  /** Checks a given PIN; a wrong one is counted, and the one reaching maxFailures locks the row. */
  async verify(row: PinRow, given: string, now: number): Promise<PinVerdict> {
    const result = this.policy.check(row, given, now);
    if (result === 'none') return { result };
    if (result === 'expired') return { result };
    if (result === 'match') {
      if (row.pin_failures > 0) await this.rows.clearFailures?.(row.id);
      return { result };
    }
    const failures = (await this.rows.countFailure(row.id)) ?? this.maxFailures;
    const locked =
      failures >= this.maxFailures &&
      (this.rows.lock ? await this.rows.lock(row.id, now, this.maxFailures) : true);
    return { result: 'wrong', failures, locked };
  }
}
