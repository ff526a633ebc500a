// The admin's reports (docs/admin.md: audit, transfers, outbox, statistics), built together by the
// composition root (src/app/services.ts) from what they read.
import type { Clock } from '../../platform/clock.js';
import type { Db } from '../../platform/sql/database.js';
import type { Dialect } from '../../platform/sql/migrations.js';
import type { AuditLog } from '../audit/audit-log.js';
import { AuditSearch } from '../audit/audit-search.js';
import type { NotificationService } from '../notify/notification-service.js';
import type { OutboxStore } from '../notify/outbox-store.js';
import { AuditReport } from './audit-report.js';
import { OutboxReport } from './outbox-report.js';
import { StatsReport } from './stats-report.js';
import { StatsStore } from './stats-store.js';
import { TransferReport } from './transfer-report.js';
import { TransferStore } from './transfer-store.js';

export interface AdminReports {
  audit: AuditReport;
  transfers: TransferReport;
  outbox: OutboxReport;
  stats: StatsReport;
}

export interface AdminReportDeps {
  db: Db;
  dialect: Dialect;
  clock: Clock;
  audit: AuditLog;
  outbox: OutboxStore;
  notify: Pick<NotificationService, 'kick'>;
}

export function createAdminReports(deps: AdminReportDeps): AdminReports {
  const { db, dialect, clock, audit, outbox, notify } = deps;
  return {
    audit: new AuditReport({ search: new AuditSearch(db) }),
    transfers: new TransferReport({ store: new TransferStore(db, dialect) }),
    outbox: new OutboxReport({ db, store: outbox, audit, clock, notify }),
    stats: new StatsReport({ store: new StatsStore(db), clock }),
  };
}
