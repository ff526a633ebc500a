// Persistent outbox (docs/notifications.md). enqueue() renders a message in the recipient's language and
// stores it sealed, in the caller's transaction when given one, so a file row and its
// notifications commit together. The 'outbox' background job claims due messages with a lease
// (safe across several instances), sends them and retries with capped exponential backoff
// (delivery-lanes.ts: each channel in a lane of its own, so one never holds up another). A channel with
// no transport configured gets its message written to the log with secrets masked and kept in the
// outbox with status 'logged' (read it in full with `remessa outbox show ID`).
// Webhook events (src/features/webhooks/) ride the same outbox on channel 'webhook': enqueueRaw() stores a
// body rendered by the caller; their delivery is ordered per subscription and file.

import type { Lang } from '../../app/config.js';
import type { Clock } from '../../platform/clock.js';
import { type Logger, redactUrl } from '../../platform/logger.js';
import type { Keys } from '../../platform/security/keys.js';
import type { Db } from '../../platform/sql/database.js';
import { keepRenewing } from '../../platform/sql/lease.js';
import type { OutboxRow } from '../../platform/sql/schema.js';
import { inTransaction } from '../../platform/sql/transaction.js';
import type { BackgroundJob } from '../../platform/worker.js';
import type { AuditLog } from '../audit/audit-log.js';
import { LANES, Lane, nextAttemptAt, type RetryPolicy } from './delivery-lanes.js';
import type { DueMessage, OutboxStore } from './outbox-store.js';
import type { Channel, NotificationKind, Templates } from './templates.js';
import { type OutboxChannel, PermanentFailure, type Transport } from './transports.js';

export type { OutboxChannel };

/**
 * Channels whose messages go out in order per (recipient, file): a message waits while an earlier
 * one to the same recipient about the same file is still pending (webhook events).
 */
const ORDERED: readonly OutboxChannel[] = ['webhook'];

/** A message rendered by its producer, e.g. a webhook event body (it must carry no secret). */
export interface RawMessage {
  channel: OutboxChannel;
  recipient: string;
  kind: string;
  text: string;
  fileId?: number | null;
  userName?: string | null;
}

export interface NotificationRequest {
  channel: Channel;
  /** E-mail address (channel 'email') or E.164 mobile number (channel 'sms'). */
  recipient: string;
  lang: Lang;
  kind: NotificationKind;
  /** Template variables. `pin` and `link` are secrets: masked wherever the message is logged. */
  vars: Record<string, string>;
  fileId?: number | null;
  /** The account the message concerns (uploader, or the user recovering a password). */
  userName?: string | null;
}

export type OutboxStatus = 'pending' | 'sent' | 'failed' | 'logged';

export interface OutboxEntry {
  id: number;
  channel: string;
  recipient: string;
  kind: string;
  status: string;
  attempts: number;
  nextAttemptAt: number;
  lastError: string | null;
  fileId: number | null;
  userName: string | null;
  createdAt: number;
  sentAt: number | null;
  lastAttemptAt: number | null;
}

export interface OutboxMessage extends OutboxEntry {
  lang: string;
  subject: string;
  text: string;
}

export interface NotifyOptions {
  retry: RetryPolicy;
  /** false: enqueue does not start a delivery pass (tests drive the job by hand). */
  autoKick: boolean;
}

interface SealedPayload {
  lang: Lang;
  subject: string;
  text: string;
  /** The same message with secrets masked: what the log may show. */
  masked: { subject: string; text: string };
}

/** How each secret variable is shown in logs. */
const MASKS: Record<string, (value: string) => string> = {
  pin: () => '******',
  link: (value) => redactUrl(value),
};

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

export interface NotificationDeps {
  db: Db;
  store: OutboxStore;
  keys: Keys;
  clock: Clock;
  audit: AuditLog;
  log: Logger;
  templates: Templates;
  transports: Partial<Record<OutboxChannel, Transport | null>>;
  opts: NotifyOptions;
}

export class NotificationService {
  private readonly db: Db;
  private readonly store: OutboxStore;
  private readonly keys: Keys;
  private readonly clock: Clock;
  private readonly audit: AuditLog;
  private readonly log: Logger;
  private readonly templates: Templates;
  private readonly transports: NotificationDeps['transports'];
  private readonly opts: NotifyOptions;
  private readonly lanes: Map<OutboxChannel, Lane>;
  private stopped = false;
  /** Messages this instance stored so far: a pass that queued more runs again. */
  private inserted = 0;

  constructor(deps: NotificationDeps) {
    ({
      db: this.db,
      store: this.store,
      keys: this.keys,
      clock: this.clock,
      audit: this.audit,
      log: this.log,
      templates: this.templates,
      transports: this.transports,
      opts: this.opts,
    } = deps);
    this.lanes = new Map(LANES.map((channel) => [channel, new Lane(() => this.drain(channel))]));
  }

  /**
   * Renders and stores one message (status 'pending'); returns its outbox id. Pass a transaction
   * to commit the message with the caller's rows; then call kick() after the commit. With the
   * plain database handle the delivery pass starts at once. Never waits for SMTP or SMS.
   */
  async enqueue(db: Db, message: NotificationRequest): Promise<number> {
    const { channel, recipient, lang, kind, vars } = message;
    const rendered = await this.templates.render(channel, lang, kind, vars);
    const maskedVars: Record<string, string> = { ...vars };
    for (const [name, mask] of Object.entries(MASKS)) {
      if (vars[name] !== undefined) maskedVars[name] = mask(vars[name]);
    }
    const maskedRender = await this.templates.render(channel, lang, kind, maskedVars);
    const masked = { subject: scrub(maskedRender.subject, vars), text: scrub(maskedRender.text, vars) };
    const payload: SealedPayload = { lang, subject: rendered.subject, text: rendered.text, masked };
    const id = await this.insert(
      db,
      { channel, recipient, kind, fileId: message.fileId, userName: message.userName },
      payload,
    );
    await this.audit.record(
      {
        event: 'notify.queued',
        user: message.userName ?? null,
        fileId: message.fileId ?? null,
        detail: { outbox: id, channel, kind, to: recipient },
      },
      db,
    );
    if (!db.isTransaction) this.kick(channel);
    return id;
  }

  /**
   * Stores a message its producer rendered (a webhook event). Not audited as queued: the event's
   * own audit row is written in the same transaction. Same kick rule as enqueue().
   */
  async enqueueRaw(db: Db, message: RawMessage): Promise<number> {
    const { text } = message;
    const id = await this.insert(db, message, {
      lang: 'en',
      subject: message.kind,
      text,
      masked: { subject: message.kind, text },
    });
    if (!db.isTransaction) this.kick(message.channel);
    return id;
  }

  private async insert(
    db: Db,
    m: Pick<RawMessage, 'channel' | 'recipient' | 'kind' | 'fileId' | 'userName'>,
    payload: SealedPayload,
  ): Promise<number> {
    const now = this.clock.now();
    const id = await this.store.insert(db, {
      channel: m.channel,
      recipient: m.recipient,
      kind: m.kind,
      payload: this.keys.seal(JSON.stringify(payload)),
      status: 'pending',
      attempts: 0,
      next_attempt_at: now,
      claimed_until: 0,
      last_error: null,
      file_id: m.fileId ?? null,
      user_name: m.userName ?? null,
      created_at: now,
      sent_at: null,
      last_attempt_at: null,
    });
    this.inserted++;
    return id;
  }

  /** Messages this instance has stored so far: a caller that stored none need not kick(). */
  get storedCount(): number {
    return this.inserted;
  }

  /** Starts a delivery pass of one channel's lane, or of every lane, soon (coalesced per lane). */
  kick(channel?: OutboxChannel): void {
    if (!this.opts.autoKick || this.stopped) return;
    for (const [name, lane] of this.lanes) {
      if (channel && name !== channel) continue;
      lane
        .run()
        .catch((err: unknown) => this.log.error({ err, channel: name }, 'outbox delivery pass failed'));
    }
  }

  /**
   * The background jobs `remessa serve` runs, one per lane (a slow lane must not delay another's
   * retries); they poll often enough to honour the retry delay.
   */
  jobs(): BackgroundJob[] {
    const intervalMs = Math.min(5000, Math.max(250, this.opts.retry.retrySeconds * 500));
    return [...this.lanes].map(([channel, lane]) => ({
      name: `outbox-${channel}`,
      intervalMs,
      run: () => lane.run(),
    }));
  }

  /**
   * Delivers every due message of every channel, and the webhook events their outcomes queue, in
   * passes of its own beside any running (as another instance's would be: the leases decide).
   */
  async deliverDue(): Promise<void> {
    for (;;) {
      const inserted = this.inserted;
      await Promise.all([...this.lanes.keys()].map((channel) => this.drain(channel)));
      if (this.stopped || this.inserted === inserted) return;
    }
  }

  /** Passes over one channel's due messages until one delivers nothing. */
  private async drain(channel: OutboxChannel): Promise<void> {
    for (;;) {
      const inserted = this.inserted;
      const delivered = await this.passOnce(channel);
      // Outcomes may have queued webhook events (notification.sent): their lane runs too.
      if (this.inserted !== inserted) this.kick();
      if (!delivered || this.stopped) return;
    }
  }

  /** Claims a batch of one channel's due messages (lease), sends them, records the outcomes. */
  private async passOnce(channel: OutboxChannel): Promise<boolean> {
    const ordered = ORDERED.includes(channel);
    const due = await this.store.due(channel, this.clock.now(), BATCH, ordered);
    const ids = ordered ? spreadOverRecipients(due) : due.map((m) => m.id);
    let delivered = false;
    const worker = async () => {
      for (let id = ids.shift(); id !== undefined && !this.stopped; id = ids.shift()) {
        // On an ordered lane a sender that delivered a message goes on with the next of its
        // sequence: a backlog behind a receiver that came back drains in one pass, not a pass
        // (and a read of every waiting row) per message.
        for (let next: number | undefined = id; next !== undefined && !this.stopped; ) {
          const row = await this.claim(next);
          if (!row || !(await this.deliver(row))) break;
          delivered = true;
          next = ordered ? await this.store.nextInSequence(row, this.clock.now()) : undefined;
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
    const now = this.clock.now();
    if (!(await this.store.claim(id, now, now + LEASE_MS, ORDERED))) return undefined;
    return this.store.byId(id);
  }

  /** Sends one claimed message and records the outcome; true when it went out (or was logged). */
  private async deliver(row: OutboxRow): Promise<boolean> {
    const about = { outbox: row.id, channel: row.channel, kind: row.kind, to: row.recipient };
    let payload: SealedPayload;
    try {
      payload = JSON.parse(this.keys.unseal(row.payload)) as SealedPayload;
    } catch {
      // Sealed with another secret: no retry can help.
      await this.fail(row, 'cannot unseal the message (server secret changed?)', true);
      return false;
    }
    const transport = this.transports[row.channel as OutboxChannel] ?? null;
    if (!transport) {
      const missing = row.channel === 'email' ? 'REMESSA_SMTP_URL' : 'REMESSA_SMS_PROVIDER';
      this.log.warn(
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
    this.log.info({ ...about, via: transport.name }, 'notification sent');
    return true;
  }

  /**
   * Renews the lease on a message being sent until the returned function is called, keeping
   * `row.claimed_until` the lease held (what fail() and recordSent() go by).
   */
  private keepLease(row: OutboxRow): () => void {
    const about = { outbox: row.id, channel: row.channel };
    return keepRenewing({
      clock: this.clock,
      everyMs: RENEW_AFTER_MS,
      pollMs: RENEW_CHECK_MS,
      since: row.claimed_until - LEASE_MS,
      renew: async (now) => {
        const until = now + LEASE_MS;
        if (!(await this.store.renew(row.id, row.claimed_until, until))) return false;
        row.claimed_until = until;
      },
      onLost: () =>
        this.log.error(about, 'the lease on a notification being sent was lost: it may go out twice'),
      onError: (err) =>
        this.log.warn({ err, ...about }, 'renewing the lease on a notification being sent failed'),
    });
  }

  /**
   * Records a message that went out, trying again (finish() is idempotent) until shortly before
   * the lease ends, after which another pass or instance would send it again anyway.
   */
  private async recordSent(row: OutboxRow, detail: Record<string, unknown>): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.finish(row, 'sent', 'notify.sent', detail);
        return;
      } catch (err) {
        const wait = Math.min(RECORD_RETRY_MS * 2 ** attempt, 10_000);
        if (this.stopped || this.clock.now() + wait > row.claimed_until - RECORD_MARGIN_MS) {
          this.log.error(
            { err, ...detail },
            'notification sent but not recorded: it may be sent again once its lease ends',
          );
          return;
        }
        this.log.warn({ err, ...detail }, 'notification sent; recording it failed, trying again');
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
    const now = this.clock.now();
    await inTransaction(this.db, async (trx) => {
      // Once only: a retry after a commit whose answer was lost finds the message done already.
      const recorded = await this.store.updatePending(
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
      await this.audit.record(
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

  private async fail(row: OutboxRow, error: string, permanent: boolean): Promise<void> {
    const about = { outbox: row.id, channel: row.channel, kind: row.kind, to: row.recipient };
    const attempts = row.attempts + 1;
    const now = this.clock.now();
    // Only under the lease still held: after it lapsed, another instance may have sent it since.
    const held = row.claimed_until;
    const next = permanent
      ? null
      : nextAttemptAt(this.opts.retry, { channel: row.channel, attempts, createdAt: row.created_at }, now);
    if (next === null) {
      const recorded = await inTransaction(this.db, async (trx) => {
        const failed = await this.store.updatePending(
          row.id,
          { status: 'failed', attempts, last_attempt_at: now, claimed_until: 0, last_error: error },
          trx,
          held,
        );
        if (!failed) return false;
        await this.audit.record(
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
      if (recorded) this.log.error({ ...about, attempts, error }, 'notification failed for good');
      else this.log.warn({ ...about, attempts, error }, 'notification failed after its lease lapsed');
      return;
    }
    const recorded = await this.store.updatePending(
      row.id,
      { attempts, next_attempt_at: next, last_attempt_at: now, claimed_until: 0, last_error: error },
      this.db,
      held,
    );
    if (recorded) {
      this.log.warn(
        { ...about, attempts, error, retryInMs: next - now },
        'notification not delivered; will retry',
      );
      if (ORDERED.includes(row.channel as OutboxChannel)) await this.store.postponeFollowers(row, next);
    } else this.log.warn({ ...about, attempts, error }, 'notification failed after its lease lapsed');
  }

  async list(filter: { status?: string; limit?: number } = {}): Promise<OutboxEntry[]> {
    const rows = await this.store.list({ status: filter.status, limit: filter.limit ?? 100 });
    return rows.reverse().map(entryOf);
  }

  /** The unsealed message, PIN and link included: for the operator of a machine without SMTP. */
  async show(id: number): Promise<OutboxMessage | undefined> {
    const row = await this.store.byId(id);
    if (!row) return undefined;
    const payload = JSON.parse(this.keys.unseal(row.payload)) as SealedPayload;
    return { ...entryOf(row), lang: payload.lang, subject: payload.subject, text: payload.text };
  }

  /** Stops kicked passes and closes the transports (before the database closes). */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.lanes.values()].map((lane) => lane.idle()));
    for (const t of Object.values(this.transports)) t?.close();
  }
}

/** Belt and braces: no secret value survives in the masked text, whatever the template did. */
function scrub(text: string, vars: Record<string, string>): string {
  let out = text;
  for (const [name, mask] of Object.entries(MASKS)) {
    const value = vars[name];
    if (value) out = out.replaceAll(value, mask(value));
  }
  return out;
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

function entryOf(row: OutboxRow): OutboxEntry {
  return {
    id: row.id,
    channel: row.channel,
    recipient: row.recipient,
    kind: row.kind,
    status: row.status,
    attempts: row.attempts,
    nextAttemptAt: row.next_attempt_at,
    lastError: row.last_error,
    fileId: row.file_id,
    userName: row.user_name,
    createdAt: row.created_at,
    sentAt: row.sent_at,
    lastAttemptAt: row.last_attempt_at,
  };
}
