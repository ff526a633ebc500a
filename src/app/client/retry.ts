// How `remessa send` and `remessa get` retry when the server cannot be reached (a cut connection,
// a restart) or a load balancer in front of it answers 502, 503 or 504: at once, then after 1, 2,
// 4, 8, 15, 15 and 15 s (a minute in all), saying so each time. An attempt that moves the
// transfer forward starts the schedule over, so a long transfer over a network that drops every
// few megabytes still arrives, while a server that stays down is given up on after a minute
// (README's CLI table states the schedule).

export const RETRY_DELAYS_MS = [0, 1000, 2000, 4000, 8000, 15_000, 15_000, 15_000];

/** A proxy's or server's "not now" (a restart, a deploy): tried again like a cut connection. */
export const TRANSIENT_STATUSES: ReadonlySet<number> = new Set([502, 503, 504]);

/** A longer Retry-After is waited out only this long: the user sees the next attempt within a minute. */
const MAX_RETRY_AFTER_MS = 60_000;

/** Retry-After (seconds or an HTTP date) in ms, or undefined when absent or unreadable. */
export function retryAfterMs(value: string | null | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const seconds = /^\s*(\d+)\s*$/.exec(value)?.[1];
  const ms = seconds !== undefined ? Number(seconds) * 1000 : Date.parse(value) - now;
  return Number.isFinite(ms) ? Math.min(Math.max(0, ms), MAX_RETRY_AFTER_MS) : undefined;
}

/** The line shown before a retry: what went wrong, which attempt comes next and when. */
export function reconnecting(why: string, attempt: number, waitMs: number, retryAfter = false): string {
  const wait = `in ${Math.round(waitMs / 1000)} s${retryAfter ? ' as the server asked' : ''}`;
  return `${why}; reconnecting… (attempt ${attempt} of ${RETRY_DELAYS_MS.length}, ${wait})`;
}

/** The schedule of one transfer. */
export class Backoff {
  private failures = 0;

  /** The transfer moved forward: the next failure starts the schedule over. */
  progressed(): void {
    this.failures = 0;
  }

  /**
   * The next attempt after a failure (`retryAfter`: the server's wish, in ms), or undefined when
   * the schedule is used up.
   */
  next(retryAfter?: number): { attempt: number; ms: number } | undefined {
    const scheduled = RETRY_DELAYS_MS[this.failures];
    if (scheduled === undefined) return undefined;
    this.failures++;
    return { attempt: this.failures, ms: retryAfter ?? scheduled };
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
