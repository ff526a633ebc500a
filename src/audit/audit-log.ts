// The audit trail: one row per security- or transfer-relevant event (DESIGN §7).
import type { Clock } from '../clock.js';
import type { Db } from '../db/database.js';
import type { AuditRow } from '../db/schema.js';

export type AuditEventName =
  | 'user.created'
  | 'user.updated'
  | 'user.disabled'
  | 'user.enabled'
  | 'user.removed'
  | 'token.issued'
  | 'login'
  | 'login.failed'
  | 'user.locked'
  | 'logout'
  | 'password.changed'
  | 'password.change_failed'
  | 'password.link_issued'
  | 'upload'
  | 'upload.failed'
  | 'download'
  | 'download.failed'
  | 'download.refused'
  | 'file.corrupt'
  | 'file.retired'
  | 'file.purged'
  | 'pin.sent'
  | 'pin.failed'
  | 'link.created'
  | 'link.locked'
  | 'link.resent'
  | 'notify.queued'
  | 'notify.sent'
  | 'notify.logged'
  | 'notify.failed';

export interface AuditEntry {
  event: AuditEventName;
  user?: string | null;
  remote?: string | null;
  fileId?: number | null;
  /** Free text or an object (stored as JSON). Never put a password, PIN or token here. */
  detail?: string | Record<string, unknown> | null;
}

export interface AuditFilter {
  user?: string;
  event?: string;
  since?: number;
  until?: number;
  limit?: number;
}

/**
 * Sees every row as it is written, with the same handle (a caller's transaction or the database),
 * so what it writes commits with the row: webhook events (src/webhooks/) are made this way.
 */
export type AuditTap = (db: Db, entry: AuditEntry, at: number) => Promise<void>;

export class AuditLog {
  private readonly taps: AuditTap[] = [];

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  tap(fn: AuditTap): void {
    this.taps.push(fn);
  }

  /** Pass `db` to record inside a caller's transaction. */
  async record(entry: AuditEntry, db: Db = this.db): Promise<void> {
    const at = this.clock.now();
    const detail =
      entry.detail === undefined || entry.detail === null
        ? null
        : typeof entry.detail === 'string'
          ? entry.detail
          : JSON.stringify(entry.detail);
    await db
      .insertInto('audit')
      .values({
        at,
        event: entry.event,
        user_name: entry.user ?? null,
        remote: entry.remote ?? null,
        file_id: entry.fileId ?? null,
        detail,
      })
      .execute();
    for (const tap of this.taps) await tap(db, entry, at);
  }

  /** How many `event` rows from `remote` there are since a time (the per-address failure budget). */
  async count(filter: { event: AuditEventName; remote: string; since: number }): Promise<number> {
    const row = await this.db
      .selectFrom('audit')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('at', '>=', filter.since)
      .where('event', '=', filter.event)
      .where('remote', '=', filter.remote)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  query(filter: AuditFilter = {}): Promise<AuditRow[]> {
    let q = this.db.selectFrom('audit').selectAll();
    // User names match case-insensitively everywhere (DESIGN §3), so `--user user1` finds USER1.
    if (filter.user) q = q.where((eb) => eb.fn('lower', ['user_name']), '=', filter.user.toLowerCase());
    if (filter.event) {
      // "login" matches login and login.failed; "login." only the sub-events.
      q = q.where((eb) => eb.or([eb('event', '=', filter.event!), eb('event', 'like', `${filter.event}.%`)]));
    }
    if (filter.since !== undefined) q = q.where('at', '>=', filter.since);
    if (filter.until !== undefined) q = q.where('at', '<=', filter.until);
    return q
      .orderBy('id', 'desc')
      .limit(filter.limit ?? 1000)
      .execute()
      .then((rows) => rows.reverse());
  }
}
