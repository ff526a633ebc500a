// A hold on something shared (an upload's lock, a notification being sent, a blob's write intent)
// kept alive by renewing it on a timer until the holder is done. The timer only polls: whether a
// renewal is due is read off the clock, so tests that move the clock move the renewals too.
import type { Clock } from '../clock.js';

export interface Renewal {
  clock: Clock;
  /** A renewal is due this long (by the clock) after the last one, or after the start. */
  everyMs: number;
  /** How often (in real time) to look whether one is due; everyMs unless given. */
  pollMs?: number;
  /** When the hold was last renewed (e.g. when it was taken); now unless given. */
  since?: number;
  /**
   * Renews the hold as of `now`. Resolving to false: the hold is lost (renewing stops and onLost is called);
   * a throw is passed to onError and the renewal is tried again at the next poll.
   */
  renew: (now: number) => Promise<unknown>;
  /** Called when a renewal is due: true lets this one pass (the next is due a period later). */
  skip?: () => boolean;
  onLost?: () => void;
  onError?: (err: unknown) => void;
}

/** Keeps renewing until the returned function is called (or the hold is lost). */
export function keepRenewing(o: Renewal): () => void {
  const pollMs = o.pollMs ?? o.everyMs;
  // Polled once a period, a timer's tick may read a few ms short of the period on the clock
  // (timers and the clock round differently): each tick past half a period counts as due.
  const slack = pollMs >= o.everyMs ? o.everyMs / 2 : 0;
  let last = o.since ?? o.clock.now();
  let renewing = false;
  const poll = async () => {
    const now = o.clock.now();
    if (renewing || now - last < o.everyMs - slack) return;
    if (o.skip?.()) {
      last = now;
      return;
    }
    renewing = true;
    try {
      if ((await o.renew(now)) === false) {
        stop();
        o.onLost?.();
      } else last = now;
    } catch (err) {
      o.onError?.(err);
    } finally {
      renewing = false;
    }
  };
  const timer = setInterval(() => void poll(), pollMs).unref();
  const stop = () => clearInterval(timer);
  return stop;
}
