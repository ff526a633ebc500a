// The requester hears of each batch once (docs/requests.md, "Batches"). A batch is the uploads made
// through one request link during one visit: an upload created while the link has a batch gathering
// joins it, otherwise it opens a new one. The batch is due once nothing in it is pending (every
// upload stored or released) and nothing happened for QUIET_MS, or after STALLED_MS without news
// (an abandoned upload does not hold the message back). This job, run every few seconds on every
// instance, seals each due batch with a conditional update — exactly one instance wins — and in
// the same transaction queues the requester's message naming the request and the files, and
// closes a one-use request.

import type { Config, Lang } from '../../app/config.js';
import type { Clock } from '../../platform/clock.js';
import type { Logger } from '../../platform/logger.js';
import type { Db } from '../../platform/sql/database.js';
import type { RequestBatchRow, UserRow } from '../../platform/sql/schema.js';
import { inTransaction } from '../../platform/sql/transaction.js';
import type { BackgroundJob } from '../../platform/worker.js';
import type { NotificationService } from '../notify/notification-service.js';
import type { UserService } from '../users/user-service.js';
import { isLang } from '../users/validation.js';
import type { RequestService } from './request-service.js';
import type { RequestStore } from './request-store.js';

/** Quiet after a batch's last file before its message goes out. */
export const QUIET_MS = 20_000;
/** How often the job looks: a message leaves within QUIET_MS + INTERVAL_MS of the last file. */
export const BATCH_INTERVAL_MS = 10_000;
/** A batch with an upload still pending is sealed after this long without news. */
export const STALLED_MS = 60 * 60 * 1000;

export interface BatchDeps {
  db: Db;
  store: RequestStore;
  requests: RequestService;
  users: Pick<UserService, 'byId'>;
  notify: NotificationService;
  clock: Clock;
  log: Logger;
  config: Pick<Config, 'lang'>;
}

export class RequestBatches {
  constructor(private readonly d: BatchDeps) {}

  /** One pass: every due batch sealed once (here or on another instance); how many here. */
  async run(): Promise<number> {
    const now = this.d.clock.now();
    let n = 0;
    for (const batch of await this.d.store.dueBatches(now - QUIET_MS, now - STALLED_MS, 100)) {
      if (await this.seal(batch, now)) n++;
    }
    if (n > 0) this.d.notify.kick();
    return n;
  }

  job(): BackgroundJob {
    return {
      name: 'request-batches',
      intervalMs: BATCH_INTERVAL_MS,
      run: async () => {
        const n = await this.run();
        if (n) this.d.log.info({ batches: n }, 'upload request batches announced');
      },
    };
  }

  private seal(batch: RequestBatchRow, now: number): Promise<boolean> {
    const { store } = this.d;
    return inTransaction(this.d.db, async (trx) => {
      if (!(await store.seal(trx, batch.id, now, now - QUIET_MS, now - STALLED_MS))) return false;
      const files = await store.batchFiles(trx, batch.id);
      const request = await store.byId(batch.request_id, trx);
      if (!request || files.length === 0) return true;
      const requester = await store.account(trx, request.user_id);
      if (requester) await this.tell(trx, requester, request.title, files, await this.senderOf(trx, batch));
      if (request.reusable === 0)
        await this.d.requests.closeWith(trx, request, 'batch', { actor: null, remote: null });
      return true;
    });
  }

  private async senderOf(trx: Db, batch: RequestBatchRow): Promise<string> {
    const link = await this.d.store.linkById(batch.link_id, trx);
    return link?.recipient_email ?? link?.recipient_mobile ?? '';
  }

  /** The requester's message: by e-mail, or by SMS for an account with only a mobile. */
  private async tell(trx: Db, requester: UserRow, title: string, files: string[], from: string) {
    const to = requester.email ?? requester.mobile;
    if (!to) return;
    const lang: Lang = isLang(requester.lang) ? requester.lang : this.d.config.lang;
    await this.d.notify.enqueue(trx, {
      channel: requester.email ? 'email' : 'sms',
      recipient: to,
      lang,
      kind: 'request-batch',
      userName: requester.name,
      vars: { title, count: String(files.length), files: files.map((f) => `- ${f}`).join('\n'), from },
    });
  }
}
