// The statistics' queries (docs/admin.md, "Statistics"), computed by the database: one grouped,
// indexed range scan of the audit rows of a period, bucketed by integer division of their time,
// the same SQL on SQLite and PostgreSQL. The rows counted are read from the index audit_stats
// (migration 0025), which holds exactly these events with the columns summed: time, event, user,
// bytes; a query names the index's event list literally, or neither database may use it.
import { sql } from 'kysely';
import type { Db } from '../../platform/sql/database.js';
import { STATS_EVENTS } from '../../platform/sql/migrations.js';

export interface BucketRow {
  /** the bucket's number from the period's start */
  bucket: number;
  uploads: number;
  uploadBytes: number;
  downloads: number;
  downloadBytes: number;
  senders: number;
  recipients: number;
  failedSignIns: number;
  lockouts: number;
  notificationFailures: number;
}

export interface Totals {
  users: number;
  files: number;
  bytes: number;
}

const COUNTED = sql.join(STATS_EVENTS.map((event) => sql.lit(event)));
const count = (event: string) => sql`sum(case when event = ${sql.lit(event)} then 1 else 0 end)`;
const bytes = (event: string) => sql`sum(case when event = ${sql.lit(event)} then bytes else 0 end)`;
const distinctUsers = (event: string) =>
  sql`count(distinct case when event = ${sql.lit(event)} then user_name end)`;

export class StatsStore {
  constructor(private readonly db: Db) {}

  /** The buckets of [from, to) that have rows, in order (bucket n starts at from + n × size). */
  async buckets(from: number, to: number, size: number): Promise<BucketRow[]> {
    const { rows } = await this.bucketQuery(from, to, size).execute(this.db);
    // Sums are numeric on PostgreSQL (strings from the driver): numbers here.
    return rows.map((r) => {
      const out = {} as Record<keyof BucketRow, number>;
      for (const [key, value] of Object.entries(r)) out[key as keyof BucketRow] = Number(value ?? 0);
      return out;
    });
  }

  /** buckets()' query (a test reads its plan). */
  bucketQuery(from: number, to: number, size: number) {
    const start = sql`cast(${from} as bigint)`;
    return sql<Record<keyof BucketRow, number | string | null>>`select
        (at - ${start}) / cast(${size} as bigint) as bucket,
        ${count('upload')} as "uploads",
        ${bytes('upload')} as "uploadBytes",
        ${count('download')} as "downloads",
        ${bytes('download')} as "downloadBytes",
        ${distinctUsers('upload')} as "senders",
        ${distinctUsers('download')} as "recipients",
        ${count('login.failed')} as "failedSignIns",
        ${count('user.locked')} as "lockouts",
        ${count('notify.failed')} as "notificationFailures"
      from audit
      where event in (${COUNTED}) and at >= ${start} and at < cast(${to} as bigint)
      group by 1
      order by 1`;
  }

  /** Accounts, and the files held (area and backup) with their bytes, now. */
  async totals(): Promise<Totals> {
    const users = await this.db
      .selectFrom('users')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    const files = await this.db
      .selectFrom('files')
      .select((eb) => [eb.fn.countAll().as('n'), eb.fn.sum('length').as('bytes')])
      .where('state', 'in', ['area', 'backup'])
      .executeTakeFirstOrThrow();
    return { users: Number(users.n), files: Number(files.n), bytes: Number(files.bytes ?? 0) };
  }
}
