// A quota's warning (docs/quotas.md): when an upload takes an account past 80 % or 95 % of its
// quota, an e-mail to the account and the audit row `quota.warning` (whose webhook event the audit
// tap makes), in the transaction that counted the upload, so they commit with it, once.
import type { Lang } from '../../app/config.js';
import type { Db } from '../../platform/sql/database.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { NotificationService } from '../notify/notification-service.js';
import { formatSize } from '../notify/templates.js';
import type { Quotas, QuotaWarning } from './quotas.js';

export class QuotaWarnings {
  constructor(private readonly d: { quotas: Quotas; notify: NotificationService; audit: AuditLog }) {}

  register(): void {
    this.d.quotas.onWarning((trx, w) => this.warn(trx, w));
  }

  private async warn(trx: Db, { account, percent, usage, quota }: QuotaWarning): Promise<void> {
    await this.d.audit.record(
      { event: 'quota.warning', user: account.name, detail: { percent, usage, quota } },
      trx,
    );
    if (!account.email) return;
    const lang = account.lang as Lang;
    await this.d.notify.enqueue(trx, {
      channel: 'email',
      recipient: account.email,
      lang,
      kind: 'quota-warning',
      vars: {
        user: account.name,
        percent: String(percent),
        usage: formatSize(usage, lang),
        quota: formatSize(quota, lang),
      },
      userName: account.name,
    });
  }
}
