// Prometheus metrics (docs/operations.md). One registry per server (tests run several
// servers in one process), served by src/platform/http/metrics-server.ts on REMESSA_METRICS_PORT.
// Label values are bounded: route templates (never raw URLs), methods, statuses, channels, job
// names and fixed kinds; never user names, addresses or tokens.
// Transfer, PIN and lockout counts come from the audit trail as rows are recorded (one tap, no
// counting code in the domain services); a row whose transaction then rolls back is still counted,
// which only an upload that fails at its very last step does.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Clock } from '../../platform/clock.js';
import type { Db, OpenDatabase } from '../../platform/sql/database.js';
import type { BackgroundJob } from '../../platform/worker.js';
import type { AuditEntry } from '../audit/audit-log.js';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const CHANNELS = new Set(['email', 'sms', 'webhook']);
const OUTBOX_STATUSES = ['pending', 'sent', 'failed', 'logged'] as const;
const OUTBOX_CHANNELS = ['email', 'sms', 'webhook'] as const;

/**
 * Counts made on every request or transfer, kept as plain numbers per label set and added to their
 * counter when it is read (prom-client calls a metric's `collect` before each scrape). prom-client's
 * own inc() checks and hashes the labels on every call: with the latency histogram's, about a
 * microsecond and a half per request, a few percent of a small download.
 */
class Tally<L extends string> {
  private readonly counts = new Map<string, { labels: Partial<Record<L, string>>; n: number }>();

  /** Adds `n` to the count of `labels`, known by `key` (their values joined). */
  add(key: string, labels: () => Partial<Record<L, string>>, n = 1): void {
    const entry = this.counts.get(key);
    if (entry) entry.n += n;
    else this.counts.set(key, { labels: labels(), n });
  }

  /** Moves the counts into `counter` (its `collect`). */
  flushInto(counter: Counter<L>): void {
    for (const entry of this.counts.values()) {
      if (entry.n === 0) continue;
      counter.inc(entry.labels, entry.n);
      entry.n = 0;
    }
  }
}

const NO_LABELS = () => ({});

interface MetricsDeps {
  db: Db;
  clock: Clock;
  poolStats: OpenDatabase['poolStats'];
}

/** A counter fed by a Tally (counted on every request or transfer). */
function tallied<L extends string>(
  register: Registry[],
  config: { name: string; help: string; labelNames?: L[] },
): Tally<L> {
  const tally = new Tally<L>();
  new Counter<L>({
    ...config,
    registers: register,
    collect() {
      tally.flushInto(this);
    },
  });
  return tally;
}

/** Gauges of the outbox and the database pool, read at scrape time (after the counters). */
function registerStateGauges(register: Registry[], deps: MetricsDeps): void {
  // Read at scrape time: one grouped count over the outbox, nothing kept in memory.
  new Gauge({
    name: 'remessa_outbox_messages',
    help: 'Messages in the outbox (notifications and webhook events) by status.',
    labelNames: ['status'],
    registers: register,
    async collect() {
      const rows = await deps.db
        .selectFrom('outbox')
        .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
        .groupBy('status')
        .execute();
      for (const status of OUTBOX_STATUSES) {
        this.set({ status }, Number(rows.find((r) => r.status === status)?.n ?? 0));
      }
    },
  });
  new Gauge({
    name: 'remessa_outbox_oldest_pending_age_seconds',
    help: 'Age of the oldest message still pending, by channel (0 when none is).',
    labelNames: ['channel'],
    registers: register,
    async collect() {
      const rows = await deps.db
        .selectFrom('outbox')
        .select(['channel', (eb) => eb.fn.min<number>('created_at').as('oldest')])
        .where('status', '=', 'pending')
        .groupBy('channel')
        .execute();
      for (const channel of OUTBOX_CHANNELS) {
        const oldest = rows.find((r) => r.channel === channel)?.oldest;
        const age = oldest === null || oldest === undefined ? 0 : (deps.clock.now() - Number(oldest)) / 1000;
        this.set({ channel }, Math.max(0, age));
      }
    },
  });
  new Gauge({
    name: 'remessa_db_pool_connections',
    help: 'PostgreSQL pool connections by state (total, idle, waiting clients); absent for SQLite.',
    labelNames: ['state'],
    registers: register,
    collect() {
      const s = deps.poolStats();
      if (!s) return;
      this.set({ state: 'total' }, s.total);
      this.set({ state: 'idle' }, s.idle);
      this.set({ state: 'waiting' }, s.waiting);
    },
  });
}

export class Metrics {
  readonly registry = new Registry();
  private readonly requests: Tally<'route' | 'method' | 'status'>;
  private readonly latency: Histogram<'route' | 'method'>;
  /** The latency histogram's series per route and method (labels() checks its labels once). */
  private readonly latencyOf = new Map<string, Histogram.Internal<'route' | 'method'>>();
  private readonly uploadBytes: Tally<never>;
  private readonly downloadBytes: Tally<never>;
  private readonly uploads: Tally<never>;
  private readonly downloads: Tally<'complete'>;
  private readonly pins: Counter<'kind'>;
  private readonly pinFailures: Counter;
  private readonly lockouts: Counter<'kind'>;
  private readonly notificationFailures: Counter<'channel'>;
  private readonly jobRuns: Counter<'job' | 'outcome'>;
  private readonly sweptFiles: Counter<'action'>;

  constructor(deps: MetricsDeps) {
    const register = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.requests = tallied(register, {
      name: 'remessa_http_requests_total',
      help: 'HTTP requests answered, by route template, method and status.',
      labelNames: ['route', 'method', 'status'],
    });
    this.latency = new Histogram({
      name: 'remessa_http_request_duration_seconds',
      help: 'Time from request to the end of the response (uploads and downloads included).',
      labelNames: ['route', 'method'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers: register,
    });
    this.uploadBytes = tallied(register, {
      name: 'remessa_upload_bytes_total',
      help: 'Bytes of stored uploads.',
    });
    this.downloadBytes = tallied(register, {
      name: 'remessa_download_bytes_total',
      help: 'Bytes sent by downloads (ranges and interrupted downloads count what was sent).',
    });
    this.uploads = tallied(register, { name: 'remessa_uploads_total', help: 'Files stored.' });
    this.downloads = tallied(register, {
      name: 'remessa_downloads_total',
      help: 'Downloads that ended, complete or not.',
      labelNames: ['complete'],
    });
    this.pins = new Counter({
      name: 'remessa_pins_sent_total',
      help: 'PINs issued: for a download link, or for a password change.',
      labelNames: ['kind'],
      registers: register,
    });
    this.pinFailures = new Counter({
      name: 'remessa_pin_failures_total',
      help: 'Wrong or expired PINs entered.',
      registers: register,
    });
    this.lockouts = new Counter({
      name: 'remessa_lockouts_total',
      help: 'Lockouts after repeated failures: of a user (passwords) or of a link (PINs).',
      labelNames: ['kind'],
      registers: register,
    });
    this.notificationFailures = new Counter({
      name: 'remessa_notification_failures_total',
      help: 'Notifications given up after their last attempt, by channel.',
      labelNames: ['channel'],
      registers: register,
    });
    this.jobRuns = new Counter({
      name: 'remessa_job_runs_total',
      help: 'Passes of the background jobs (file-sweeper is the sweeper), by outcome.',
      labelNames: ['job', 'outcome'],
      registers: register,
    });
    this.sweptFiles = new Counter({
      name: 'remessa_sweeper_items_total',
      help: 'Files the sweeper retired to backup or purged.',
      labelNames: ['action'],
      registers: register,
    });
    registerStateGauges(register, deps);
  }

  /** `route` is the route's template (e.g. /v1/download/file), or null when no route matched. */
  observeRequest(route: string | null, method: string, status: number, seconds: number): void {
    const r = route ?? 'unmatched';
    const m = METHODS.has(method) ? method : 'other';
    const series = `${r} ${m}`;
    this.requests.add(`${series} ${status}`, () => ({ route: r, method: m, status: String(status) }));
    let latency = this.latencyOf.get(series);
    if (!latency) {
      latency = this.latency.labels(r, m);
      this.latencyOf.set(series, latency);
    }
    latency.observe(seconds);
  }

  /** Counts what an audit row says happened (AuditLog.tap). */
  onAudit(entry: AuditEntry): void {
    const detail = typeof entry.detail === 'object' && entry.detail !== null ? entry.detail : {};
    const bytes = typeof detail['bytes'] === 'number' ? detail['bytes'] : 0;
    switch (entry.event) {
      case 'upload':
        this.uploads.add('', NO_LABELS);
        this.uploadBytes.add('', NO_LABELS, bytes);
        break;
      case 'download': {
        const complete = detail['complete'] === true ? 'true' : 'false';
        this.downloads.add(complete, () => ({ complete }));
        this.downloadBytes.add('', NO_LABELS, bytes);
        break;
      }
      case 'pin.sent':
        this.pins.inc({ kind: detail['purpose'] === undefined ? 'download' : 'password' });
        break;
      case 'pin.failed':
        this.pinFailures.inc();
        break;
      case 'user.locked':
        this.lockouts.inc({ kind: 'user' });
        break;
      case 'link.locked':
        this.lockouts.inc({ kind: 'link' });
        break;
      case 'notify.failed': {
        const channel = String(detail['channel']);
        this.notificationFailures.inc({ channel: CHANNELS.has(channel) ? channel : 'other' });
        break;
      }
      case 'file.retired':
        this.sweptFiles.inc({ action: 'retired' });
        break;
      case 'file.purged':
        this.sweptFiles.inc({ action: 'purged' });
        break;
    }
  }

  /** The job, counting its passes. */
  instrument(job: BackgroundJob): BackgroundJob {
    const runs = this.jobRuns;
    return {
      name: job.name,
      intervalMs: job.intervalMs,
      async run() {
        try {
          await job.run();
          runs.inc({ job: job.name, outcome: 'ok' });
        } catch (err) {
          runs.inc({ job: job.name, outcome: 'error' });
          throw err;
        }
      },
    };
  }

  /** The Prometheus text exposition. */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
