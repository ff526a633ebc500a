// Fixed-window request counters in the shared database (table rate_limits): every instance counts
// into the same row, so N instances allow what one does, not N times as much. One upsert per
// counted request; expired rows are pruned hourly.
import { sql } from 'kysely';
import type { Clock } from '../clock.js';
import type { Db } from '../sql/database.js';

export class RateCounter {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  /** Counts one hit on `key`; returns the count in the current window and the ms left in it. */
  async hit(key: string, windowMs: number): Promise<{ count: number; ttl: number }> {
    const now = this.clock.now();
    const row = await this.db
      .insertInto('rate_limits')
      .values({ key, count: 1, window_end: now + windowMs })
      .onConflict((oc) =>
        oc.column('key').doUpdateSet({
          // A window that is over starts again at 1.
          count: sql`case when rate_limits.window_end <= ${now} then 1 else rate_limits.count + 1 end`,
          window_end: sql`case when rate_limits.window_end <= ${now} then ${now + windowMs} else rate_limits.window_end end`,
        }),
      )
      .returning(['count', 'window_end'])
      .executeTakeFirstOrThrow();
    return { count: Number(row.count), ttl: Math.max(0, Number(row.window_end) - now) };
  }

  /** Current count without counting (0 when the window is over). */
  async peek(key: string): Promise<{ count: number; ttl: number }> {
    const now = this.clock.now();
    const row = await this.db
      .selectFrom('rate_limits')
      .select(['count', 'window_end'])
      .where('key', '=', key)
      .where('window_end', '>', now)
      .executeTakeFirst();
    return row ? { count: Number(row.count), ttl: Number(row.window_end) - now } : { count: 0, ttl: 0 };
  }

  async prune(): Promise<void> {
    await this.db.deleteFrom('rate_limits').where('window_end', '<=', this.clock.now()).execute();
  }
}
