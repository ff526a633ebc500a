// Six-digit PINs, as used by secure download links and password-change links: issued hashed (a
// keyed HMAC, so a database dump cannot brute-force them offline), valid for a while, compared in
// constant time, and not re-sent more often than once per `resendSeconds`.
import { AppError } from '../errors.js';
import { type Keys, randomPin, safeEqual } from './keys.js';

/** The columns a PIN lives in, on `links` and on `change_tokens` alike. */
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
    return safeEqual(this.keys.hmac(given.trim()), row.pin_hash) ? 'match' : 'mismatch';
  }

  /** Seconds until another PIN may be sent (0: now). */
  resendWait(sentAt: number | null, now: number): number {
    if (sentAt === null) return 0;
    const left = sentAt + this.resendSeconds * 1000 - now;
    return left > 0 ? Math.ceil(left / 1000) : 0;
  }

  /** The 429 answer to a PIN asked for too soon. */
  tooSoon(waitSeconds: number): AppError {
    const wait = Math.max(1, waitSeconds);
    return new AppError(429, `a code was sent less than ${this.resendSeconds}s ago; retry in ${wait}s`, {
      'Retry-After': String(wait),
    });
  }
}
