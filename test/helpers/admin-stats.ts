// The admin statistics' checks, run on SQLite and PostgreSQL (test/admin-reports.test.ts): a
// known set of events written directly gives known numbers; a real upload and download count too.
import assert from 'node:assert/strict';
import type { OpenDatabase } from '../../src/platform/sql/database.js';
import { migrate } from '../../src/platform/sql/migrations.js';
import { adminGet, envelopeKeys, insertAudit } from './admin-fixtures.js';
import { bytes, uploadFile } from './files.js';
import { eventually } from './peers.js';
import type { TestServer } from './server.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const D0 = Date.UTC(2021, 0, 10);
const ZERO = {
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

type Series = ({ start: string } & typeof ZERO)[];

/** Two days of events, one empty day, and rows just outside the period. */
async function insertKnownEvents(t: TestServer): Promise<void> {
  const at = (day: number, hour: number, minute = 0) => D0 + day * DAY + hour * HOUR + minute * 60_000;
  const upload = (when: number, user: string, n: number) => ({
    at: when,
    event: 'upload',
    user_name: user,
    bytes: n,
  });
  const download = (when: number, user: string | null, n: number) => ({
    at: when,
    event: 'download',
    user_name: user,
    bytes: n,
  });
  const event = (when: number, name: string, user = 'alice') => ({ at: when, event: name, user_name: user });
  await insertAudit(t, [
    upload(at(0, 1), 'alice', 100),
    upload(at(0, 2), 'alice', 50),
    upload(at(0, 3), 'bob', 25),
    download(at(0, 4), 'r1@example.com', 100),
    download(at(0, 5), 'r1@example.com', 40),
    download(at(0, 5, 30), null, 10),
    download(at(0, 6), 'r2@example.com', 100),
    event(at(0, 1, 10), 'login.failed'),
    event(at(0, 1, 20), 'login.failed'),
    event(at(0, 7), 'login.failed', 'mallory'),
    event(at(0, 7, 1), 'user.locked', 'mallory'),
    event(at(0, 8), 'notify.failed'),
    event(at(0, 9), 'notify.failed'),
    event(at(0, 9), 'login'),
    event(at(0, 9), 'token.issued'),
    event(at(0, 10), 'notify.sent'),
    upload(at(1, 0), 'carol', 7),
    download(at(1, 23, 59), 'r3@example.com', 7),
    event(at(1, 12), 'user.locked', 'bob'),
    // Outside [D0, D0 + 3 days): the last millisecond before, the first one after.
    upload(D0 - 1, 'early', 1000),
    upload(D0 + 3 * DAY, 'late', 1000),
  ]);
}

export async function checkStats(t: TestServer, auth: string): Promise<void> {
  await insertKnownEvents(t);
  const get = async (query: string) => {
    const r = await adminGet(t, `/stats?${query}`, auth);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body as { series: Series; from: string; to: string; bucket: string } & Record<string, unknown>;
  };
  const byDay = await get('from=2021-01-10&to=2021-01-13');
  assert.deepEqual(Object.keys(byDay), envelopeKeys('bucket', 'from', 'to', 'series', 'totals'));
  assert.equal(byDay['description'], 'handlerAdminStats:succsessfully');
  assert.deepEqual(
    { bucket: byDay.bucket, from: byDay.from, to: byDay.to },
    { bucket: 'day', from: '2021-01-10T00:00:00.000Z', to: '2021-01-13T00:00:00.000Z' },
  );
  assert.deepEqual(byDay.series, [
    {
      start: '2021-01-10T00:00:00.000Z',
      uploads: 3,
      uploadBytes: 175,
      downloads: 4,
      downloadBytes: 250,
      senders: 2,
      recipients: 2,
      failedSignIns: 3,
      lockouts: 1,
      notificationFailures: 2,
    },
    {
      start: '2021-01-11T00:00:00.000Z',
      ...ZERO,
      uploads: 1,
      uploadBytes: 7,
      downloads: 1,
      downloadBytes: 7,
      senders: 1,
      recipients: 1,
      lockouts: 1,
    },
    { start: '2021-01-12T00:00:00.000Z', ...ZERO },
  ]);

  // By hour, from a time inside an hour: down to the hour's start.
  const byHour = await get(`bucket=hour&from=${D0 + 30 * 60_000}&to=2021-01-10T06:00:00Z`);
  assert.equal(byHour.from, '2021-01-10T00:00:00.000Z');
  assert.deepEqual(
    byHour.series.map((b) => [b.start.slice(11, 13), b.uploads, b.downloads, b.failedSignIns, b.senders]),
    [
      ['00', 0, 0, 0, 0],
      ['01', 1, 0, 2, 1],
      ['02', 1, 0, 0, 1],
      ['03', 1, 0, 0, 1],
      ['04', 0, 1, 0, 0],
      ['05', 0, 2, 0, 0],
    ],
  );
  assert.deepEqual(byHour.series[5], {
    ...ZERO,
    start: '2021-01-10T05:00:00.000Z',
    downloads: 2,
    downloadBytes: 50,
    recipients: 1,
  });

  await checkToday(t, auth);
}

/** What the installation holds now, and a real upload and download in today's bucket. */
async function checkToday(t: TestServer, auth: string): Promise<void> {
  const get = async (query: string) => {
    const r = await adminGet(t, `/stats?${query}`, auth);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body as { series: Series } & Record<string, unknown>;
  };
  const before = await get('');
  assert.equal(before.series.length, 30, 'by default the last 30 days by day');
  const today = new Date(t.clock.now()).toISOString().slice(0, 10);
  assert.equal(before.series.at(-1)!.start, `${today}T00:00:00.000Z`);
  const users = Number(
    (
      await t.server.services.db
        .selectFrom('users')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );
  assert.deepEqual(before['totals'], { users, files: 0, bytes: 0 });
  const file = await uploadFile(t, auth, 'counted.bin', bytes(1234));
  const got = await fetch(file.linkURL);
  assert.equal((await got.arrayBuffer()).byteLength, 1234);
  const after = await eventually(async () => {
    const now = await get('');
    return now.series.at(-1)!.downloadBytes === 1234 ? now : undefined;
  });
  assert.deepEqual(after['totals'], { users, files: 1, bytes: 1234 });
  assert.deepEqual(after.series.at(-1), {
    ...before.series.at(-1)!,
    uploads: before.series.at(-1)!.uploads + 1,
    uploadBytes: before.series.at(-1)!.uploadBytes + 1234,
    senders: 1,
    downloads: before.series.at(-1)!.downloads + 1,
    downloadBytes: 1234,
  });
}

/**
 * Migration 0025 gives older upload and download rows their bytes from their detail; run again (a
 * run cut short), it changes nothing else.
 */
export async function checkBytesBackfill(database: OpenDatabase): Promise<void> {
  const { db, dialect } = database;
  const rows = [
    { at: 1, event: 'upload', detail: '{"name":"a,b","bytes":42,"area":"alice"}' },
    { at: 2, event: 'download', detail: '{"link":3,"kind":"owner","bytes":7,"complete":true}' },
    { at: 3, event: 'download', detail: '{"link":3,"kind":"owner","outcome":"unknown"}' },
    { at: 4, event: 'download', detail: '{not json}' },
    { at: 5, event: 'login', detail: '{"bytes":9}' },
  ];
  await db.insertInto('audit').values(rows).execute();
  await db
    .deleteFrom('kysely_migration' as never)
    .where('name' as never, '=', '0025_admin_reports' as never)
    .execute();
  await migrate(db, dialect);
  const got = await db.selectFrom('audit').select(['at', 'bytes']).orderBy('at').execute();
  assert.deepEqual(
    got.map((r) => r.bytes),
    [42, 7, null, null, null],
  );
}
