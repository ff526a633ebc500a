// @fastify/rate-limit's store interface over RateCounter: the limits of every route count in the
// shared database, so they hold for the cluster. Each route gets its own key space, as with the
// plugin's own stores.
import type { RateCounter } from '../security/rate-counter.js';

type Callback = (err: Error | null, res?: { current: number; ttl: number }) => void;

export function databaseRateLimitStore(counter: RateCounter) {
  class DatabaseStore {
    constructor(
      _opts: unknown,
      private readonly prefix = '',
    ) {}
    incr(key: string, cb: Callback, timeWindow: number): void {
      counter.hit(this.prefix + key, timeWindow).then(
        (r) => cb(null, { current: r.count, ttl: r.ttl }),
        (err: Error) => cb(err),
      );
    }
    read(key: string, cb: Callback): void {
      counter.peek(this.prefix + key).then(
        (r) => cb(null, { current: r.count, ttl: r.ttl }),
        (err: Error) => cb(err),
      );
    }
    /** Called per route with the route's merged limit settings, `routeInfo` among them. */
    child(route: object): DatabaseStore {
      const info = (route as { routeInfo?: { method?: unknown; url?: unknown } }).routeInfo;
      return new DatabaseStore(
        null,
        `${this.prefix}${String(info?.method ?? '')}${String(info?.url ?? '')}|`,
      );
    }
  }
  return DatabaseStore;
}
