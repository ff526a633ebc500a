// Readiness (GET {base}/readyz): can this instance serve requests right now? It needs its
// database and its blob store; each must answer a trivial request within the time limit. Cheap on
// purpose: a load balancer calls it every few seconds, so it reads nothing and writes nothing.
import { sql } from 'kysely';
import type { Db } from '../db/database.js';
import type { BlobStore } from '../storage/blob-store.js';

export type ReadinessPart = 'database' | 'storage';

export interface ReadinessResult {
  ready: boolean;
  /** Per part: 'ok', or why it is not ready (safe to show: no addresses, no credentials). */
  checks: Record<ReadinessPart, string>;
  /** The underlying errors of the failing parts, for the log only. */
  errors: Partial<Record<ReadinessPart, unknown>>;
}

// A key no object ever has (blob keys are random): stat answers null without touching contents.
const PROBE_KEY = 'remessa-readiness-probe';

export class Readiness {
  constructor(private readonly deps: { db: Db; blobs: BlobStore; timeoutMs?: number }) {}

  async check(): Promise<ReadinessResult> {
    const timeoutMs = this.deps.timeoutMs ?? 1000;
    const [database, storage] = await Promise.all([
      within(timeoutMs, () => sql`select 1`.execute(this.deps.db)),
      within(timeoutMs, () => this.deps.blobs.stat(PROBE_KEY)),
    ]);
    const checks = { database: database.status, storage: storage.status };
    const errors: ReadinessResult['errors'] = {};
    if (database.error !== undefined) errors.database = database.error;
    if (storage.error !== undefined) errors.storage = storage.error;
    return { ready: database.status === 'ok' && storage.status === 'ok', checks, errors };
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
        (error: unknown) => ({ status: 'failed', error }),
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
