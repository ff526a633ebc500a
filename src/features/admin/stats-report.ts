// The admin's statistics (docs/admin.md, "Statistics"): a period cut into hours or days (UTC),
// every bucket present (zeros included), and what the installation holds now.
import { invalid } from '../../platform/errors.js';
import { iso, parseRange } from './report-params.js';
import type { BucketRow, StatsStore, Totals } from './stats-store.js';

export const BUCKETS = { hour: 3_600_000, day: 86_400_000 } as const;
export type BucketName = keyof typeof BUCKETS;
export const MAX_BUCKETS = 1000;
/** Without `from`: this long before `to`. */
const DEFAULT_SPAN_MS = 30 * BUCKETS.day;

export interface StatsQuery {
  from?: string;
  to?: string;
  bucket?: string;
}

export type BucketView = Omit<BucketRow, 'bucket'> & { start: string };

export interface StatsView {
  bucket: BucketName;
  from: string;
  to: string;
  series: BucketView[];
  totals: Totals;
}

export interface StatsReportDeps {
  store: StatsStore;
  clock: { now(): number };
}

const ZERO: Omit<BucketRow, 'bucket'> = {
  uploads: 0,
  uploadBytes: 0,
  downloads: 0,
  downloadBytes: 0,
  senders: 0,
  recipients: 0,
  failedSignIns: 0,
  lockouts: 0,
  notificationFailures: 0,
};

export class StatsReport {
  private readonly store: StatsStore;
  private readonly clock: StatsReportDeps['clock'];

  constructor(deps: StatsReportDeps) {
    ({ store: this.store, clock: this.clock } = deps);
  }

  /**
   * The buckets of a period: `from` down and `to` up to whole buckets (UTC hours or days); without
   * them, the 30 days up to the end of the current bucket. At most MAX_BUCKETS.
   */
  async stats(query: StatsQuery): Promise<StatsView> {
    const bucket = (query.bucket ?? 'day') as BucketName;
    if (!(bucket in BUCKETS)) throw invalid('bucket: hour or day');
    const size = BUCKETS[bucket];
    const range = parseRange(query.from, query.to);
    const to = Math.ceil((range.to ?? this.clock.now() + 1) / size) * size;
    const from = Math.floor((range.from ?? to - DEFAULT_SPAN_MS) / size) * size;
    if (from >= to) throw invalid('from: must be before to');
    const count = (to - from) / size;
    if (count > MAX_BUCKETS)
      throw invalid(`at most ${MAX_BUCKETS} buckets: ${count} asked (a shorter period, or bucket=day)`);
    const rows = new Map((await this.store.buckets(from, to, size)).map((r) => [r.bucket, r]));
    const series: BucketView[] = [];
    for (let i = 0; i < count; i++) {
      const { bucket: _, ...counts } = rows.get(i) ?? { bucket: i, ...ZERO };
      series.push({ start: iso(from + i * size)!, ...counts });
    }
    return { bucket, from: iso(from)!, to: iso(to)!, series, totals: await this.store.totals() };
  }
}
