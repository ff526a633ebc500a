// One delivery pass over a channel's due messages (notification-service.ts runs them per lane):
// each message is claimed with a lease (safe across several instances), sent through its
// channel's transport, and its outcome recorded: sent, logged (no transport configured: written to
// the log with secrets masked), or failed, to be tried again with capped exponential backoff
// (delivery-lanes.ts) or given up. Webhook events go out in order per subscription and file.

import { keepRenewing } from '../../platform/sql/lease.js';
import type { OutboxRow } from '../../platform/sql/schema.js';
import { inTransaction } from '../../platform/sql/transaction.js';
import { nextAttemptAt, type RetryPolicy } from './delivery-lanes.js';
import type { NotificationDeps } from './notification-service.js';
import type { OutboxStatus, SealedPayload } from './outbox-messages.js';
import type { DueMessage } from './outbox-store.js';
import { type OutboxChannel, PermanentFailure } from './transports.js';

/**
 * Channels whose messages go out in order per (recipient, file): a message waits while an earlier
 * one to the same recipient about the same file is still pending (webhook events).
 */
const ORDERED: readonly OutboxChannel[] = ['webhook'];

/**
 * A claimed message belongs to its instance this long; a crashed instance's claim then lapses.
 * While it is being sent, the claim is renewed each time a quarter of it is used up (looked at
 * every second): a send may outlast one lease (SMTP allows minutes per command) without another
 * instance taking the message and sending it a second time.
 */
const LEASE_MS = 120_000;
const RENEW_AFTER_MS = LEASE_MS / 4;
const RENEW_CHECK_MS = 1000;

/** Recording a sent message is tried again after 0.5 s, 1 s, 2 s… up to this close to the lease's end. */
const RECORD_RETRY_MS = 500;
const RECORD_MARGIN_MS = 10_000;
const BATCH = 50;
const CONCURRENCY = 4;
/**
 * Attempts at one recipient in one pass of an ordered lane: a receiver that never answers holds
 * at most this many of the lane's senders until its timeout, the others serve other receivers.
 */
const PER_RECIPIENT = 2;

/** The service's own dependencies that delivery uses, and what it adds. */
export interface DeliveryDeps
  extends Pick<NotificationDeps, 'db' | 'store' | 'keys' | 'clock' | 'audit' | 'log' | 'transports'> {
  retry: RetryPolicy;
  /** True once the service stops: passes end after the message in hand. */
  stopped: () => boolean;
}

export class OutboxDelivery {
  constructor(private readonly deps: DeliveryDeps) {}

  /** Claims a batch of one channel's due messages (lease), sends them, records the outcomes. */
  async pass(channel: OutboxChannel): Promise<boolean> {
    const { store, clock, stopped } = this.deps;
    const ordered = ORDERED.includes(channel);
    const due = await store.due(channel, clock.now(), BATCH, ordered);
    const ids = ordered ? spreadOverRecipients(due) : due.map((m) => m.id);
    let delivered = false;
    const worker = async () => {
      for (let id = ids.shift(); id !== undefined && !stopped(); id = ids.shift()) {
        // On an ordered lane a sender that delivered a message goes on with the next of its
        // sequence: a backlog behind a receiver that came back drains in one pass, not a pass
        // (and a read of every waiting row) per message.
        for (let next: number | undefined = id; next !== undefined && !stopped(); ) {
          const row = await this.claim(next);
          if (!row || !(await this.deliver(row))) break;
          delivered = true;
          next = ordered ? await store.nextInSequence(row, clock.now()) : undefined;
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    return delivered;
  }

  /**
   * Takes the lease on a message unless another instance holds it, it is no longer pending or,
   * on an ordered channel, an earlier message of its sequence is still pending.
   */
  private async claim(id: number): Promise<OutboxRow | undefined> {
    const now = this.deps.clock.now();
    if (!(await this.deps.store.claim(id, now, now + LEASE_MS, ORDERED))) return undefined;
    return this.deps.store.byId(id);
  }

  /** Sends one claimed message and records the outcome; true when it went out (or was logged). */
  private async deliver(row: OutboxRow): Promise<boolean> {
    const about = { outbox: row.id, channel: row.channel, kind: row.kind, to: row.recipient };
    let payload: SealedPayload;
    try {
      payload = JSON.parse(this.deps.keys.unseal(row.payload)) as SealedPayload;
    } catch {
      // Sealed with another secret: no retry can help.
      await this.fail(row, 'cannot unseal the message (server secret changed?)', true);
      return false;
    }
    const transport = this.deps.transports[row.channel as OutboxChannel] ?? null;
    if (!transport) {
      const missing = row.channel === 'email' ? 'REMESSA_SMTP_URL' : 'REMESSA_SMS_PROVIDER';
      this.deps.log.warn(
        { ...about, subject: payload.masked.subject, text: payload.masked.text },
        `notification not sent (${missing} is not set); secrets masked here, full text: remessa outbox show ${row.id}`,
      );
      await this.finish(row, 'logged', 'notify.logged', about);
      return true;
    }
    const stopRenewing = this.keepLease(row);
    try {
      try {
        await transport.send({
          // Unique across installations in practice: the row's id and when it was made.
          id: `${row.id}.${row.created_at}`,
          channel: row.channel as OutboxChannel,
          to: row.recipient,
          subject: payload.subject,
          text: payload.text,
        });
      } catch (err) {
        await this.fail(row, describeError(err), err instanceof PermanentFailure);
        return false;
      }
      // Sent: recording it must not fail on a passing database error, or the message goes out
      // again once the lease ends.
      await this.recordSent(row, { ...about, via: transport.name });
    } finally {
      stopRenewing();
    }
    this.deps.log.info({ ...about, via: transport.name }, 'notification sent');
    return true;
  }

  /**
   * Renews the lease on a message being sent until the returned function is called, keeping
   * `row.claimed_until` the lease held (what fail() and recordSent() go by).
   */
  private keepLease(row: OutboxRow): () => void {
    const { clock, store, log } = this.deps;
    const about = { outbox: row.id, channel: row.channel };
    return keepRenewing({
      clock,
      everyMs: RENEW_AFTER_MS,
      pollMs: RENEW_CHECK_MS,
      since: row.claimed_until - LEASE_MS,
      renew: async (now) => {
        const until = now + LEASE_MS;
        if (!(await store.renew(row.id, row.claimed_until, until))) return false;
        row.claimed_until = until;
      },
      onLost: () => log.error(about, 'the lease on a notification being sent was lost: it may go out twice'),
      onError: (err) => log.warn({ err, ...about }, 'renewing the lease on a notification being sent failed'),
    });
  }

  /**
   * Records a message that went out, trying again (finish() is idempotent) until shortly before
   * the lease ends, after which another pass or instance would send it again anyway.
   */
  private async recordSent(row: OutboxRow, detail: Record<string, unknown>): Promise<void> {
    const { clock, log, stopped } = this.deps;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.finish(row, 'sent', 'notify.sent', detail);
        return;
      } catch (err) {
        const wait = Math.min(RECORD_RETRY_MS * 2 ** attempt, 10_000);
        if (stopped() || clock.now() + wait > row.claimed_until - RECORD_MARGIN_MS) {
          log.error(
            { err, ...detail },
            'notification sent but not recorded: it may be sent again once its lease ends',
          );
          return;
        }
        log.warn({ err, ...detail }, 'notification sent; recording it failed, trying again');
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  /**
   * The status and its audit row commit together, so whatever the audit row sets off (a webhook
   * event about this notification) is never lost nor sent for an outcome that did not stick.
   */
  private async finish(
    row: OutboxRow,
    status: OutboxStatus,
    event: 'notify.sent' | 'notify.logged',
    detail: Record<string, unknown>,
  ): Promise<void> {
    const now = this.deps.clock.now();
    await inTransaction(this.deps.db, async (trx) => {
      // Once only: a retry after a commit whose answer was lost finds the message done already.
      const recorded = await this.deps.store.updatePending(
        row.id,
        {
          status,
          attempts: row.attempts + 1,
          sent_at: now,
          last_attempt_at: now,
          claimed_until: 0,
          last_error: null,
        },
        trx,
      );
      if (!recorded) return;
      await this.deps.audit.record(
        {
          event,
          user: row.user_name,
          fileId: row.file_id,
          detail: { ...detail, attempts: row.attempts + 1 },
        },
        trx,
      );
    });
  }

  /** Records a failed attempt: given up for good, or tried again after the retry delay. */
  private async fail(row: OutboxRow, error: string, permanent: boolean): Promise<void> {
    const { db, store, clock, audit, log } = this.deps;
    const about = { outbox: row.id, channel: row.channel, kind: row.kind, to: row.recipient };
    const attempts = row.attempts + 1;
    const now = clock.now();
    // Only under the lease still held: after it lapsed, another instance may have sent it since.
    const held = row.claimed_until;
    const next = permanent
      ? null
      : nextAttemptAt(this.deps.retry, { channel: row.channel, attempts, createdAt: row.created_at }, now);
    if (next === null) {
      const recorded = await inTransaction(db, async (trx) => {
        const failed = await store.updatePending(
          row.id,
          { status: 'failed', attempts, last_attempt_at: now, claimed_until: 0, last_error: error },
          trx,
          held,
        );
        if (!failed) return false;
        await audit.record(
          {
            event: 'notify.failed',
            user: row.user_name,
            fileId: row.file_id,
            detail: { ...about, attempts, error },
          },
          trx,
        );
        return true;
      });
      if (recorded) log.error({ ...about, attempts, error }, 'notification failed for good');
      else log.warn({ ...about, attempts, error }, 'notification failed after its lease lapsed');
      return;
    }
    const recorded = await store.updatePending(
      row.id,
      { attempts, next_attempt_at: next, last_attempt_at: now, claimed_until: 0, last_error: error },
      db,
      held,
    );
    if (recorded) {
      log.warn(
        { ...about, attempts, error, retryInMs: next - now },
        'notification not delivered; will retry',
      );
      if (ORDERED.includes(row.channel as OutboxChannel)) await store.postponeFollowers(row, next);
    } else log.warn({ ...about, attempts, error }, 'notification failed after its lease lapsed');
  }
}

/** The due messages' ids, at most PER_RECIPIENT for each recipient, in their order. */
function spreadOverRecipients(due: DueMessage[]): number[] {
  const taken = new Map<string, number>();
  const ids: number[] = [];
  for (const { id, recipient } of due) {
    const n = taken.get(recipient) ?? 0;
    if (n >= PER_RECIPIENT) continue;
    taken.set(recipient, n + 1);
    ids.push(id);
  }
  return ids;
}

function describeError(err: unknown): string {
  const e = err as { message?: unknown; code?: unknown; responseCode?: unknown };
  const parts = [e?.code, e?.responseCode, typeof e?.message === 'string' ? e.message : String(err)];
  return parts
    .filter((p) => p !== undefined && p !== null && p !== '')
    .join(' ')
    .slice(0, 500);
}
