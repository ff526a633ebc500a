// PostgreSQL for tests: a fresh database per test file on the local server, or a visible skip
// when none is reachable (CI on this machine kind always has one; .ci/run checks).
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const ADMIN_URL = process.env['REMESSA_TEST_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';

export async function postgresAvailable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/** Message shown by tests that skip for lack of PostgreSQL. */
export const PG_REQUIRED = process.env['REMESSA_TEST_REQUIRE_PG'] === '1';
export const PG_SKIP = `PostgreSQL not reachable at ${ADMIN_URL}: PostgreSQL tests skipped (set REMESSA_TEST_PG_URL)`;

export interface TempDatabase {
  url: string;
  /**
   * Deadlocks PostgreSQL detected in this database so far. A backend reports its statistics when it
   * ends, at the latest: call once the instances using it are closed (it waits for their
   * connections to go).
   */
  deadlocks(): Promise<number>;
  drop(): Promise<void>;
}

export async function createTempDatabase(): Promise<TempDatabase> {
  const name = `remessa_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  /** Runs `fn` with an admin connection once no other connection to the database is left. */
  const whenUnused = async <T>(fn: (c: pg.Client) => Promise<T>): Promise<T> => {
    const c = new pg.Client({ connectionString: ADMIN_URL });
    await c.connect();
    try {
      // pg's Pool.end() resolves before its connections have closed. Wait (bounded) for them.
      for (let i = 0; i < 100; i++) {
        const r = await c.query('select count(*)::int as n from pg_stat_activity where datname = $1', [name]);
        if ((r.rows[0] as { n: number }).n === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return await fn(c);
    } finally {
      await c.end();
    }
  };
  return {
    url: url.toString(),
    deadlocks: () =>
      whenUnused(async (c) => {
        const r = await c.query('select deadlocks::int as n from pg_stat_database where datname = $1', [
          name,
        ]);
        return (r.rows[0] as { n: number }).n;
      }),
    // Forcing the drop while the connections close makes the client raise an uncaught error.
    drop: () =>
      whenUnused(async (c) => {
        await c.query(`drop database if exists ${name} with (force)`);
      }),
  };
}
