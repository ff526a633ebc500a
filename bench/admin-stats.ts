// The admin statistics (GET /admin/stats) over a large audit trail: 1,000,000 rows spread over the
// last 90 days in a realistic mix of events (downloads, uploads, sign-ins, messages, PINs, failures),
// written straight into the database of one `remessa serve` (SQLite, then PostgreSQL), then timed
// from a client over HTTP:
//   - 30 days by day (30 buckets, the console's default view),
//   - 90 days by hour: 2,160 buckets, over the API's 1,000 per answer, so three requests of 30
//     days (720 buckets each), timed one by one and together.
// One unmeasured round first, then --rounds rounds; median and minimum–maximum of each.
//   npm run build && npm run bench -- admin-stats [--rows 1000000] [--rounds 5] [--no-pg] [--no-sqlite]
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { type Db, openDatabase } from '../src/platform/sql/database.js';
import { createTempDatabase, postgresAvailable } from '../test/helpers/postgres.js';
import { startRemessa } from './servers.js';

const DAY = 86_400_000;
const AUTH = `Basic ${Buffer.from('bench:bench-password-1').toString('base64')}`;
const CHUNK = 100_000;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/**
 * Rows first to last-1, in one statement the database runs itself. Row i falls at
 * `end - 90 days + i × 90 days / rows`; a multiplicative hash of i (r in 0–999) picks its event:
 * 30 % downloads (a fifth through the owner's link, with no recipient), 15 % uploads, 20 % sign-ins
 * and tokens, 21 % messages queued, sent or failed, 4 % links, 4 % PINs, 3 % failed sign-ins,
 * 0.2 % lockouts, and retirements and purges. 500 senders, 5,000 recipients.
 */
function rows(db: Db, first: number, last: number, total: number, end: number) {
  const span = 90 * DAY;
  const r = sql`((i * 2654435761) % 1000)`;
  return sql`with recursive n(i) as (select cast(${first} as bigint) union all select i + 1 from n where i < ${last - 1})
    insert into audit (at, event, user_name, remote, file_id, detail, bytes)
    select ${end - span} + i * ${span} / ${total}, event,
      case when event = 'download' then (case when ${r} < 60 then null else 'r' || ((i * 31) % 5000) || '@example.com' end)
        else 'user' || ((i * 17) % 500) end,
      '198.51.100.' || (i % 200), i / 3,
      case when event in ('upload', 'download') then '{"bytes":' || ((i * 7919) % 50000000) || '}' else null end,
      case when event in ('upload', 'download') then (i * 7919) % 50000000 else null end
    from (select i, case
        when ${r} < 300 then 'download' when ${r} < 450 then 'upload' when ${r} < 550 then 'token.issued'
        when ${r} < 650 then 'login' when ${r} < 760 then 'notify.queued' when ${r} < 850 then 'notify.sent'
        when ${r} < 860 then 'notify.failed' when ${r} < 900 then 'link.created' when ${r} < 940 then 'pin.sent'
        when ${r} < 970 then 'login.failed' when ${r} < 972 then 'user.locked' when ${r} < 986 then 'file.retired'
        else 'file.purged' end as event from n) as m`.execute(db);
}

async function fill(dir: string, databaseUrl: string | null, total: number, end: number): Promise<void> {
  const database = await openDatabase({ dataDir: dir, databaseUrl });
  try {
    const started = performance.now();
    for (let first = 0; first < total; first += CHUNK)
      await rows(database.db, first, Math.min(first + CHUNK, total), total, end);
    // What autovacuum does after a bulk load (its statistics, the visibility map for index-only
    // scans); SQLite is left as the server leaves it.
    if (databaseUrl) await sql`vacuum analyze audit`.execute(database.db);
    await database.db.updateTable('users').set({ role: 'admin' }).where('name_key', '=', 'bench').execute();
    console.log(
      `  ${total.toLocaleString('en')} audit rows written in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  } finally {
    await database.close();
  }
}

async function timed(url: string): Promise<number> {
  const started = performance.now();
  const res = await fetch(url, { headers: { Authorization: AUTH } });
  const body = (await res.json()) as { series?: unknown[] };
  if (res.status !== 200 || !body.series)
    throw new Error(`${url} answered ${res.status}: ${JSON.stringify(body)}`);
  return performance.now() - started;
}

async function measure(label: string, env: Record<string, string>, total: number, rounds: number) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'remessa-bench-stats-'));
  const server = await startRemessa(dir, 64 * 1024, [], env);
  try {
    const end = Date.now();
    await fill(dir, env['REMESSA_DATABASE_URL'] ?? null, total, end);
    const day = (from: number, to: number, bucket: string) =>
      `${server.base}/admin/stats?bucket=${bucket}&from=${from}&to=${to}`;
    const byDay = day(end - 30 * DAY, end, 'day');
    const byHour = [90, 60, 30].map((ago) => day(end - ago * DAY, end - (ago - 30) * DAY, 'hour'));
    const times = { day: [] as number[], hour: [] as number[], hours: [] as number[] };
    for (let round = 0; round <= rounds; round++) {
      const d = await timed(byDay);
      const h = [];
      for (const url of byHour) h.push(await timed(url));
      if (round === 0) continue; // warm-up
      times.day.push(d);
      times.hour.push(...h);
      times.hours.push(h.reduce((a, b) => a + b, 0));
    }
    const show = (xs: number[]) =>
      `${median(xs).toFixed(0)} ms (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`;
    console.log(`  ${label}: 30 days by day ${show(times.day)}`);
    console.log(
      `  ${label}: 90 days by hour, each request of 30 days ${show(times.hour)}, the three ${show(times.hours)}`,
    );
  } finally {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: process.argv.slice(2).filter((a) => a !== 'admin-stats'),
    options: {
      rows: { type: 'string', default: '1000000' },
      rounds: { type: 'string', default: '5' },
      'no-pg': { type: 'boolean', default: false },
      'no-sqlite': { type: 'boolean', default: false },
    },
  });
  const total = Number(values.rows);
  const rounds = Math.max(3, Number(values.rounds));
  console.log(`GET /admin/stats over ${total.toLocaleString('en')} audit rows of 90 days, ${rounds} rounds`);
  if (!values['no-sqlite']) await measure('SQLite', {}, total, rounds);
  if (values['no-pg']) return;
  if (!(await postgresAvailable())) {
    console.log('  PostgreSQL: not reachable, skipped (REMESSA_TEST_PG_URL)');
    return;
  }
  const database = await createTempDatabase();
  try {
    await measure('PostgreSQL', { REMESSA_DATABASE_URL: database.url }, total, rounds);
  } finally {
    await database.drop();
  }
}

await main();
