// PostgreSQL for tests: a fresh database per test file on the local server, or a visible skip
// when none is reachable (CI on this machine kind always has one; .ci/run checks).
import { randomBytes } from 'node:crypto';
import pg from 'pg';

const ADMIN_URL = process.env['REMESSA_TEST_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';

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

export async function createTempDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `remessa_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: ADMIN_URL });
      await c.connect();
      try {
        // pg's Pool.end() resolves before its connections have closed; forcing the drop while they
        // close makes the client raise an uncaught error. Wait (bounded) for them to go first.
        for (let i = 0; i < 100; i++) {
          const r = await c.query('select count(*)::int as n from pg_stat_activity where datname = $1', [
            name,
          ]);
          if ((r.rows[0] as { n: number }).n === 0) break;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        await c.query(`drop database if exists ${name} with (force)`);
      } finally {
        await c.end();
      }
    },
  };
}
