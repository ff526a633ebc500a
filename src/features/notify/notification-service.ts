// Persistent outbox (docs/notifications.md). enqueue() renders a message in the recipient's language and
// stores it sealed, in the caller's transaction when given one, so a file row and its
// notifications commit together. The 'outbox' background job claims due messages with a lease
// (safe across several instances), sends them and retries with capped exponential backoff
// (outbox-delivery.ts; delivery-lanes.ts: each channel in a lane of its own, so one never holds up
// another). A channel with no transport configured gets its message written to the log with secrets
// masked and kept in the outbox with status 'logged' (read it in full with `remessa outbox show ID`).
// Webhook events (src/features/webhooks/) ride the same outbox on channel 'webhook': enqueueRaw() stores a
// body rendered by the caller; their delivery is ordered per subscription and file.

import type { Clock } from '../../platform/clock.js';
import type { Logger } from '../../platform/logger.js';
import type { Keys } from '../../platform/security/keys.js';
import type { Db } from '../../platform/sql/database.js';
import type { BackgroundJob } from '../../platform/worker.js';
import type { AuditLog } from '../audit/audit-log.js';
import { LANES, Lane, type RetryPolicy } from './delivery-lanes.js';
import { OutboxDelivery } from './outbox-delivery.js';
import {
  entryOf,
  type NotificationRequest,
  type OutboxEntry,
  type OutboxMessage,
  type RawMessage,
  rawPayload,
  renderPayload,
  type SealedPayload,
} from './outbox-messages.js';
import type { OutboxStore } from './outbox-store.js';
import type { Templates } from './templates.js';
import type { OutboxChannel, Transport } from './transports.js';

export type {
  NotificationRequest,
  OutboxEntry,
  OutboxMessage,
  OutboxStatus,
  RawMessage,
} from './outbox-messages.js';
export type { OutboxChannel };

export interface NotifyOptions {
  retry: RetryPolicy;
  /** false: enqueue does not start a delivery pass (tests drive the job by hand). */
  autoKick: boolean;
}

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
  private readonly store: OutboxStore;
  private readonly keys: Keys;
  private readonly clock: Clock;
  private readonly audit: AuditLog;
  private readonly log: Logger;
  private readonly templates: Templates;
  private readonly transports: NotificationDeps['transports'];
  private readonly opts: NotifyOptions;
  private readonly delivery: OutboxDelivery;
  private readonly lanes: Map<OutboxChannel, Lane>;
  private stopped = false;
  /** Messages this instance stored so far: a pass that queued more runs again. */
  private inserted = 0;

  constructor(deps: NotificationDeps) {
    ({
      store: this.store,
      keys: this.keys,
      clock: this.clock,
      audit: this.audit,
      log: this.log,
      templates: this.templates,
      transports: this.transports,
      opts: this.opts,
    } = deps);
    const { db, store, keys, clock, audit, log, transports } = deps;
    this.delivery = new OutboxDelivery({
      db,
      store,
      keys,
      clock,
      audit,
      log,
      transports,
      retry: deps.opts.retry,
      stopped: () => this.stopped,
    });
    this.lanes = new Map(LANES.map((channel) => [channel, new Lane(() => this.drain(channel))]));
  }

  /**
   * Renders and stores one message (status 'pending'); returns its outbox id. Pass a transaction
   * to commit the message with the caller's rows; then call kick() after the commit. With the
   * plain database handle the delivery pass starts at once. Never waits for SMTP or SMS.
   */
  async enqueue(db: Db, message: NotificationRequest): Promise<number> {
    const { channel, recipient, kind } = message;
    const payload = await renderPayload(this.templates, message);
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
    const id = await this.insert(db, message, rawPayload(message));
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
      const delivered = await this.delivery.pass(channel);
      // Outcomes may have queued webhook events (notification.sent): their lane runs too.
      if (this.inserted !== inserted) this.kick();
      if (!delivered || this.stopped) return;
    }
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
