// How the outbox is worked through: each channel in a lane of its own, and when a message that
// could not be delivered is tried again. A dead webhook receiver or a slow SMS provider holds up
// only its own lane: a PIN e-mail never waits behind them.
import type { OutboxChannel } from './transports.js';

/** One lane per channel; a lane's passes never overlap, lanes never wait for each other. */
export const LANES: readonly OutboxChannel[] = ['email', 'sms', 'webhook'];

/**
 * Runs passes of one lane: a pass asked for while one runs is run once more after it, and every
 * caller waits for the passes that cover its request.
 */
export class Lane {
  private pass: Promise<void> | null = null;
  private again = false;

  constructor(private readonly drain: () => Promise<void>) {}

  run(): Promise<void> {
    if (this.pass) {
      this.again = true;
      return this.pass;
    }
    const pass = (async () => {
      try {
        do {
          this.again = false;
          await this.drain();
        } while (this.again);
      } finally {
        this.pass = null;
      }
    })();
    this.pass = pass;
    return pass;
  }

  /** Resolves once no pass is running (stop). */
  async idle(): Promise<void> {
    while (this.pass) await this.pass.catch(() => {});
  }
}

export interface RetryPolicy {
  /** First retry delay; doubles on each attempt up to the channel's cap. */
  retrySeconds: number;
  /** Attempts before giving up (0: no count, only `retryHours` bounds them). */
  maxAttempts: number;
  /** E-mail and SMS: given up this long after being queued (an outage delays, never loses). */
  retryHours: number;
  /** Webhook events: attempts before giving up (their backoff grows to 6 hours). */
  webhookMaxAttempts: number;
}

/**
 * People wait for e-mail and SMS (a PIN, a link): once their transport is back they should leave
 * within minutes, so their retries are at most this far apart. Webhook receivers are machines.
 */
const PERSON_BACKOFF_CAP_MS = 5 * 60 * 1000;
const WEBHOOK_BACKOFF_CAP_MS = 6 * 60 * 60 * 1000;

/**
 * When to try a message again after its `attempts`-th failed attempt at `now`, or null to give it
 * up for good.
 */
export function nextAttemptAt(
  policy: RetryPolicy,
  message: { channel: string; attempts: number; createdAt: number },
  now: number,
): number | null {
  const { channel, attempts } = message;
  const webhook = channel === 'webhook';
  const cap = webhook ? WEBHOOK_BACKOFF_CAP_MS : PERSON_BACKOFF_CAP_MS;
  const delay = Math.min(cap, policy.retrySeconds * 1000 * 2 ** Math.min(attempts - 1, 40));
  if (webhook) return attempts >= policy.webhookMaxAttempts ? null : now + delay;
  if (policy.maxAttempts > 0 && attempts >= policy.maxAttempts) return null;
  const deadline = message.createdAt + policy.retryHours * 3600 * 1000;
  return now + delay > deadline ? null : now + delay;
}
