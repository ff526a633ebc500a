// The admin's view of the outbox (docs/admin.md, "Outbox"): pages of messages without their sealed
// text, and sending a failed one again. The retry is a conditional update of the message (failed →
// pending) committed with its audit row: of any number of requests on any number of instances one
// wins, the others are told the message is no longer failed; the lanes' leases then send it once.

import type { Clock } from '../../platform/clock.js';
import { conflict, invalid, notFound } from '../../platform/errors.js';
import type { Db } from '../../platform/sql/database.js';
import type { OutboxRow } from '../../platform/sql/schema.js';
import { inTransaction } from '../../platform/sql/transaction.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { NotificationService, OutboxChannel } from '../notify/notification-service.js';
import { entryOf, type OutboxEntry } from '../notify/outbox-messages.js';
import type { OutboxStore } from '../notify/outbox-store.js';
import { iso, type Page, pageOf, parseCursor, parseLimit } from './report-params.js';

export const OUTBOX_STATUSES = ['pending', 'sent', 'failed', 'logged'] as const;
export const OUTBOX_CHANNELS = ['email', 'sms', 'webhook'] as const;

export interface OutboxQuery {
  status?: string;
  channel?: string;
  limit?: number;
  cursor?: string;
}

/** A message as the admin API shows it: the outbox entry's fields, its times as ISO 8601. */
export interface OutboxMessageView
  extends Pick<
    OutboxEntry,
    'id' | 'channel' | 'recipient' | 'kind' | 'status' | 'attempts' | 'lastError' | 'fileId'
  > {
  created: string;
  lastAttempt: string | null;
  /** When a pending message is tried next; null once it is no longer pending. */
  nextAttempt: string | null;
  sent: string | null;
  user: string | null;
}

export interface OutboxReportDeps {
  db: Db;
  store: OutboxStore;
  audit: AuditLog;
  clock: Clock;
  notify: Pick<NotificationService, 'kick'>;
}

type Listed = Omit<OutboxRow, 'payload'>;

export class OutboxReport {
  private readonly db: Db;
  private readonly store: OutboxStore;
  private readonly audit: AuditLog;
  private readonly clock: Clock;
  private readonly notify: OutboxReportDeps['notify'];

  constructor(deps: OutboxReportDeps) {
    ({ db: this.db, store: this.store, audit: this.audit, clock: this.clock, notify: this.notify } = deps);
  }

  async list(query: OutboxQuery): Promise<Page<OutboxMessageView>> {
    const { status, channel } = query;
    if (status !== undefined && !(OUTBOX_STATUSES as readonly string[]).includes(status))
      throw invalid(`status: one of ${OUTBOX_STATUSES.join(', ')}`);
    if (channel !== undefined && !(OUTBOX_CHANNELS as readonly string[]).includes(channel))
      throw invalid(`channel: one of ${OUTBOX_CHANNELS.join(', ')}`);
    const limit = parseLimit(query.limit);
    const rows = await this.store.page({ status, channel }, parseCursor(query.cursor), limit + 1);
    return pageOf(rows, limit, viewOf);
  }

  /**
   * Makes a failed message pending again, due now, and starts its lane; audited as
   * `notify.retried` by `actor`. Any other status: conflict; no such message: not found.
   */
  async retry(id: number, actor: string, remote: string | null): Promise<OutboxMessageView> {
    const now = this.clock.now();
    const row = await inTransaction(this.db, async (trx) => {
      if (!(await this.store.retryFailed(id, now, trx))) return undefined;
      const retried = (await this.store.listed(id, trx))!;
      await this.audit.record(
        {
          event: 'notify.retried',
          user: retried.user_name,
          actor,
          remote,
          fileId: retried.file_id,
          detail: { outbox: id, channel: retried.channel, kind: retried.kind, to: retried.recipient },
        },
        trx,
      );
      return retried;
    });
    if (!row) {
      const found = await this.store.listed(id);
      if (!found) throw notFound('no such message');
      throw conflict(`the message is ${found.status}: only a failed one is sent again`);
    }
    this.notify.kick(row.channel as OutboxChannel);
    return viewOf(row);
  }
}

function viewOf(row: Listed): OutboxMessageView {
  const { nextAttemptAt, lastError, fileId, userName, createdAt, sentAt, lastAttemptAt, ...head } =
    entryOf(row);
  return {
    ...head,
    created: iso(createdAt)!,
    lastAttempt: iso(lastAttemptAt),
    nextAttempt: head.status === 'pending' ? iso(nextAttemptAt) : null,
    sent: iso(sentAt),
    lastError,
    fileId,
    user: userName,
  };
}
