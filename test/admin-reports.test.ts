// The admin API's reports over HTTP (docs/admin.md: Audit, Transfers, Outbox, Statistics), on
// SQLite and PostgreSQL: exact shapes, filters and pages, the CSV export byte for byte and with
// flat memory at 200,000 rows, a retry that one of two requests wins and that sends once, the
// statistics of a known set of events, and who may read and change what.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { StatsStore } from '../src/features/admin/stats-store.js';
import { AuditSearch, userIs } from '../src/features/audit/audit-search.js';
import { openDatabase } from '../src/platform/sql/database.js';
import { checkAuditCsv, checkAuditSearch, checkHostileParams } from './helpers/admin-audit.js';
import {
  accountWithRole,
  adminGet,
  adminPost,
  assertRefused,
  drainCsv,
  liveHeap,
  sqlitePlan,
} from './helpers/admin-fixtures.js';
import { checkOutboxRetry } from './helpers/admin-outbox.js';
import { checkBytesBackfill, checkStats } from './helpers/admin-stats.js';
import { checkTransfers } from './helpers/admin-transfers.js';
import { HttpPeer, MailSink } from './helpers/peers.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';
import { basic, closeWith, type StartOptions, serverFor } from './helpers/server.js';

const pg = await postgresAvailable();
if (!pg && PG_REQUIRED) throw new Error(PG_SKIP);

type Ctx = Parameters<typeof serverFor>[0];

/** A server with an admin, an auditor and a plain account; `env` adds to its settings. */
async function adminServer(ctx: Ctx, env: Record<string, string> = {}, opts: StartOptions = {}) {
  const t = await serverFor(ctx, { startWorkers: false, ...opts, env: { ...opts.env, ...env } });
  await t.createUser('alice', 'alice-password-1');
  return {
    t,
    sender: basic('alice', 'alice-password-1'),
    admin: await accountWithRole(t, 'root', 'admin'),
    auditor: await accountWithRole(t, 'eve', 'auditor'),
  };
}

/** A fresh PostgreSQL database for one test, dropped after it. */
async function postgresEnv(ctx: Ctx): Promise<Record<string, string>> {
  const database = await createTempDatabase();
  closeWith(ctx, () => database.drop());
  return { REMESSA_DATABASE_URL: database.url };
}

/** Every check that runs on both databases. */
function suite(database: (ctx: Ctx) => Promise<Record<string, string>>) {
  test('audit: shapes, filters, pages; CSV byte for byte; bad parameters refused', async (ctx) => {
    const { t, auditor } = await adminServer(ctx, await database(ctx));
    await checkAuditSearch(t, auditor);
    await checkAuditCsv(t, auditor);
    await checkHostileParams(t, auditor);
  });

  test('statistics of a known set of events, and of a real upload and download', async (ctx) => {
    const { t, auditor } = await adminServer(ctx, await database(ctx));
    await checkStats(t, auditor);
  });

  test('migration 0025 fills the bytes of older upload and download rows, and runs again', async (ctx) => {
    const env = await database(ctx);
    const dataDir = await mkdtemp(path.join(tmpdir(), 'remessa-admin-'));
    const opened = await openDatabase({ dataDir, databaseUrl: env['REMESSA_DATABASE_URL'] ?? null });
    closeWith(
      ctx,
      () => rm(dataDir, { recursive: true, force: true }),
      () => opened.close(),
    );
    await checkBytesBackfill(opened);
  });

  test('outbox: a failed message retried by one of two requests, sent once', async (ctx) => {
    const sms = closeWith(ctx, await HttpPeer.start());
    const env = {
      ...(await database(ctx)),
      REMESSA_SMS_PROVIDER: 'webhook',
      REMESSA_SMS_URL: `${sms.url}/sms`,
      REMESSA_NOTIFY_MAX_ATTEMPTS: '1',
    };
    const { t, sender, admin, auditor } = await adminServer(ctx, env);
    await checkOutboxRetry(t, sms, { sender, admin, adminName: 'root', auditor });
  });

  test('transfers: held and purged files, their recipients, downloads and timeline', async (ctx) => {
    const mail = closeWith(ctx, await MailSink.start());
    const env = { ...(await database(ctx)), REMESSA_SMTP_URL: mail.url, REMESSA_RECIPIENT_PIN: 'false' };
    const { t, sender, auditor } = await adminServer(ctx, env);
    await checkTransfers(t, mail, { sender, auditor });
  });
}

describe('admin reports on SQLite', () => {
  suite(async () => ({}));

  test('who may read and change: a user nothing, an auditor every read, an admin everything', async (ctx) => {
    const { t, sender, auditor, admin } = await adminServer(ctx);
    const reads = ['/audit', '/audit?format=csv', '/files', '/files/1/timeline', '/outbox', '/stats'];
    for (const path of reads) {
      assertRefused(await adminGet(t, path, sender), 403, /auditor or admin/);
      const r = await adminGet(t, path, 'Basic bm9ib2R5Om5vdGhpbmc=');
      assert.equal(r.status, 401, path);
      const allowed = path.startsWith('/files/1') ? 404 : 200;
      assert.equal((await adminGet(t, path, auditor)).status, allowed, path);
      assert.equal((await adminGet(t, path, admin)).status, allowed, path);
    }
    assertRefused(await adminPost(t, '/outbox/1/retry', sender), 403);
    assertRefused(await adminPost(t, '/outbox/1/retry', auditor), 403, /admin role/);
    assertRefused(await adminPost(t, '/outbox/1/retry', admin), 404);
    // A demotion holds at once.
    await t.server.services.db.updateTable('users').set({ role: 'user' }).where('name', '=', 'eve').execute();
    assertRefused(await adminGet(t, '/audit', auditor), 403);
  });

  test('the statistics read one covering index; a CSV export of 200,000 rows keeps memory flat', async (ctx) => {
    const { t, auditor } = await adminServer(ctx);
    const { db } = t.server.services;
    const stats = await sqlitePlan(t, new StatsStore(db).bucketQuery(0, 86_400_000, 3_600_000).compile(db));
    assert.match(stats, /USING COVERING INDEX audit_stats/, stats);
    // The export's pages: index scans in the answer's order, each resumed at its cursor (no sort).
    const search = new AuditSearch(db);
    const page = search.selection({ from: 1, to: 9 }, { at: 5, id: 3 }, 1000).compile();
    assert.match(await sqlitePlan(t, page), /^SEARCH audit USING INDEX audit_at \(at>\? AND at<\?\)$/);
    // …bounded above by the cursor's time, not by `to` (which would read the earlier pages again).
    assert.deepEqual(page.parameters.slice(0, 2), [1, 5]);
    assert.ok(!page.parameters.includes(8));
    const ofUser = search.selection({}, { at: 5, id: 3 }, 1000, (eb) => userIs(eb, 'eve')).compile();
    assert.match(
      await sqlitePlan(t, ofUser),
      /^SEARCH audit USING INDEX audit_user_lower \(<expr>=\? AND at<\?\)$/,
    );

    const T0 = Date.UTC(2022, 0, 1);
    const detail = JSON.stringify({ name: 'x'.repeat(200), note: 'a, "quoted" value' });
    // 200,000 rows in one statement (SQLite counts them out itself).
    await sql`with recursive n(i) as (select 0 union all select i + 1 from n where i < 199999)
      insert into audit (at, event, user_name, remote, file_id, detail)
      select ${T0} + i, 'download', 'user' || (i % 97) || '@example.com', '198.51.100.7', i, ${detail}
      from n`.execute(db);
    // The live heap (after a full collection) every 4 MB the client reads: one page of the export
    // is ~330 kB; the export is over 60 MB, its rows as objects several times that.
    const before = liveHeap();
    let peak = before;
    let measured = 0;
    const res = await fetch(`${t.base}/admin/audit?format=csv&from=${T0}&to=${T0 + 200_000}`, {
      headers: { Authorization: auditor },
    });
    assert.equal(res.status, 200);
    const reading = performance.now();
    const read = await drainCsv(res, (bytes) => {
      if (bytes - measured < 4e6) return;
      measured = bytes;
      peak = Math.max(peak, liveHeap());
    });
    assert.equal(read.lines, 200_001, 'the header and every row');
    assert.match(
      read.head,
      new RegExp(
        `^id,time,event,user,actor,remote,file_id,detail\\r\\n\\d+,${new Date(T0 + 199_999).toISOString()},download,`,
      ),
    );
    const growth = peak - before;
    assert.ok(read.bytes > 60e6, `${read.bytes} bytes`);
    const seconds = ((performance.now() - reading) / 1000).toFixed(1);
    const grew = `heap grew by ${(growth / 2 ** 20).toFixed(1)} MiB during an export of ${(read.bytes / 1e6).toFixed(1)} MB (${seconds} s)`;
    ctx.diagnostic(grew);
    assert.ok(growth < 16 * 2 ** 20, grew);
  });
});

describe('admin reports on PostgreSQL', { skip: pg ? false : PG_SKIP }, () => {
  suite(postgresEnv);
});
