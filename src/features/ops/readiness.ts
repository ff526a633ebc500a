// Readiness (GET {base}/readyz): can this instance serve requests right now? It needs its
// database and its blob store; each must answer a trivial request within the time limit. Cheap on
// purpose: a load balancer calls it every few seconds, so it writes nothing and reads one count of
// the outbox (how long messages wait is shown, but never makes an instance unready: another
// instance could not deliver them any sooner).

import type { BlobStore } from '../../platform/blobs/blob-store.js';
import { StoreMismatch, storeIdentityProblem } from '../../platform/blobs/store-identity.js';
import type { Clock } from '../../platform/clock.js';
import type { Db } from '../../platform/sql/database.js';

export type ReadinessPart = 'database' | 'storage';

export interface ReadinessResult {
  ready: boolean;
  /** Per part: 'ok', or why it is not ready (safe to show: no addresses, no credentials). */
  checks: Record<ReadinessPart, string>;
  /** The underlying errors of the failing parts, for the log only. */
  errors: Partial<Record<ReadinessPart, unknown>>;
  /** Messages waiting in the outbox; absent when the database did not answer in time. */
  outbox?: { pending: number; oldestPendingSeconds: number };
}

export class Readiness {
  constructor(
    private readonly deps: {
      db: Db;
      blobs: BlobStore;
      clock: Clock;
      storeIdentity: string;
      timeoutMs?: number;
    },
  ) {}

  async check(): Promise<ReadinessResult> {
    const timeoutMs = this.deps.timeoutMs ?? 1000;
    let outbox: ReadinessResult['outbox'];
    const [database, storage] = await Promise.all([
      within(timeoutMs, async () => {
        outbox = await this.outbox();
      }),
      // The store answers, and is still the one the database's files are in.
      within(timeoutMs, async () => {
        const problem = await storeIdentityProblem(this.deps.blobs, this.deps.storeIdentity);
        if (problem) throw new StoreMismatch(`the blob store ${problem}`);
      }),
    ]);
    const checks = { database: database.status, storage: storage.status };
    const errors: ReadinessResult['errors'] = {};
    if (database.error !== undefined) errors.database = database.error;
    if (storage.error !== undefined) errors.storage = storage.error;
    const ready = database.status === 'ok' && storage.status === 'ok';
    return { ready, checks, errors, ...(database.status === 'ok' && { outbox }) };
  }

  /** The database's answer to one count (through the outbox's due index): the probe and the detail. */
  private async outbox(): Promise<NonNullable<ReadinessResult['outbox']>> {
    const row = await this.deps.db
      .selectFrom('outbox')
      .select((eb) => [eb.fn.countAll<number>().as('pending'), eb.fn.min<number>('created_at').as('oldest')])
      .where('status', '=', 'pending')
      .executeTakeFirst();
    const oldest = row?.oldest === null || row?.oldest === undefined ? null : Number(row.oldest);
    return {
      pending: Number(row?.pending ?? 0),
      oldestPendingSeconds:
        oldest === null ? 0 : Math.max(0, Math.floor((this.deps.clock.now() - oldest) / 1000)),
    };
  }
}

async function within(
  ms: number,
  probe: () => Promise<unknown>,
): Promise<{ status: string; error?: unknown }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<{ status: string }>((resolve) => {
    timer = setTimeout(() => resolve({ status: `no answer within ${ms} ms` }), ms);
  });
  try {
    return await Promise.race([
      probe().then(
        () => ({ status: 'ok' }),
        (error: unknown) => ({
          status: error instanceof StoreMismatch ? "is not the store this database's files are in" : 'failed',
          error,
        }),
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
