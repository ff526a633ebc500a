// An audit log on an opened database, as src/app/services.ts makes it (for tests below the services).
import { AuditLog } from '../../src/features/audit/audit-log.js';
import { type Clock, systemClock } from '../../src/platform/clock.js';
import type { OpenDatabase } from '../../src/platform/sql/database.js';

export function auditLogOn(database: OpenDatabase, clock: Clock = systemClock): AuditLog {
  const { db, dialect, commits, appends } = database;
  return new AuditLog({ db, dialect, clock, commits, appends });
}
