// The outbox and password recovery on PostgreSQL, with two instances sharing one database: the
// lease must make each message go out exactly once.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { NotificationRequest } from '../src/features/notify/notification-service.js';
import { HttpPeer, MailSink } from './helpers/peers.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';
import { call, closeAll, startTestServer, type TestServer } from './helpers/server.js';

const available = await postgresAvailable();
if (!available && PG_REQUIRED) throw new Error(PG_SKIP);

const sms = (i: number): NotificationRequest => ({
  channel: 'sms',
  recipient: `+551190000${String(i).padStart(4, '0')}`,
  lang: 'en',
  kind: 'download-pin',
  vars: { fileName: `f${i}.bin`, pin: '123456', pinValidity: '3 minutes' },
});

describe('outbox on PostgreSQL, two instances', { skip: available ? false : PG_SKIP }, () => {
  let database: Awaited<ReturnType<typeof createTempDatabase>>;
  let hook: HttpPeer;
  let mail: MailSink;
  let a: TestServer;
  let b: TestServer;

  before(async () => {
    database = await createTempDatabase();
    hook = await HttpPeer.start();
    mail = await MailSink.start();
    const env = {
      REMESSA_DATABASE_URL: database.url,
      REMESSA_SMS_PROVIDER: 'webhook',
      REMESSA_SMS_URL: hook.url,
      REMESSA_SMTP_URL: mail.url,
    };
    a = await startTestServer({ env, startWorkers: false });
    b = await startTestServer({ env, startWorkers: false });
  });
  after(async () => {
    await closeAll(a, b, hook, mail, () => database?.drop());
  });

  test('both instances deliver at once: every message exactly once', async () => {
    for (let i = 0; i < 20; i++) await a.server.services.notify.enqueue(a.server.services.db, sms(i));
    await Promise.all([
      a.server.services.notify.deliverDue(),
      b.server.services.notify.deliverDue(),
      b.server.services.notify.deliverDue(),
    ]);
    assert.equal(hook.requests.length, 20);
    const to = hook.requests.map((r) => (JSON.parse(r.body) as { to: string }).to);
    assert.equal(new Set(to).size, 20);
    assert.equal((await b.server.services.notify.list({ status: 'sent' })).length, 20);
  });

  test('forget on one instance, change on the other', async () => {
    await a.createUser('pguser', 'pg-old-password');
    const r = await call(`${a.base}/auth/forgetParameters?u=pguser`);
    assert.equal(r.status, 200);
    await b.server.services.notify.deliverDue();
    const m = await mail.take('pguser@example.com');
    const pin = /PIN\): (\d{6})/.exec(m.text ?? '')![1]!;
    const k = new URL(String(r.body['linkURL'])).searchParams.get('k')!;
    const ok = await call(`${b.base}/auth/changeParameters`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ k, p: pin, z: 'pg-new-password' }),
    });
    assert.equal(ok.status, 200);
    const again = await call(`${a.base}/auth/changeParameters`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ k, p: pin, z: 'pg-third-password' }),
    });
    assert.equal(again.status, 401);
  });

  test('"send me a code" on one change link from both instances at once sends exactly one code', async () => {
    await a.createUser('pgracer', 'pg-racer-password');
    const r = await call(`${a.base}/auth/forgetParameters?u=pgracer`);
    assert.equal(r.status, 200);
    const k = encodeURIComponent(new URL(String(r.body['linkURL'])).searchParams.get('k')!);
    for (const s of [a, b]) await s.advanceClock(61_000);
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        call(`${(i % 2 ? a : b).base}/auth/changeParameters?k=${k}`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
        }),
      ),
    );
    assert.deepEqual(answers.map((x) => x.status).sort(), [200, 429, 429, 429, 429, 429]);
    const pins = await a.server.services.db
      .selectFrom('outbox')
      .select('id')
      .where('kind', '=', 'password-pin')
      .where('user_name', '=', 'pgracer')
      .execute();
    assert.equal(pins.length, 2, 'the code from forgetParameters and exactly one more');
  });

  test('wrong recovery PINs count per account across instances; the lock holds on both', async () => {
    await a.createUser('pglock', 'pg-lock-password');
    const change = (s: TestServer, fields: Record<string, string>) =>
      call(`${s.base}/auth/changeParameters`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(fields),
      });
    const links: { k: string; pin: string }[] = [];
    for (let round = 0; round < 2; round++) {
      for (const s of [a, b]) await s.advanceClock(61_000);
      const r = await call(`${(round ? b : a).base}/auth/forgetParameters?u=pglock`);
      assert.equal(r.status, 200);
      await a.server.services.notify.deliverDue();
      const pin = /PIN\): (\d{6})/.exec((await mail.take('pglock@example.com')).text ?? '')![1]!;
      const k = new URL(String(r.body['linkURL'])).searchParams.get('k')!;
      links.push({ k, pin });
      const wrong = pin === '000000' ? '111111' : '000000';
      // Alternating instances: each sees half the failures, the account all ten.
      for (let i = 0; i < (round ? 4 : 5); i++) {
        assert.equal((await change(i % 2 ? a : b, { k, p: wrong, z: 'pg-lock-new' })).status, 403);
      }
    }
    const last = links[1]!;
    assert.equal(
      (await change(a, { k: last.k, p: last.pin === '000000' ? '1' : '0', z: 'pg-lock-new' })).status,
      403,
    );
    assert.equal((await change(b, { k: last.k, p: last.pin, z: 'pg-lock-new' })).status, 401);
    assert.equal((await change(a, { k: last.k, p: last.pin, z: 'pg-lock-new' })).status, 401);
    for (const s of [a, b]) await s.advanceClock(61_000);
    assert.equal((await call(`${a.base}/auth/forgetParameters?u=pglock`)).status, 429);
    assert.equal((await call(`${b.base}/auth/forgetParameters?u=pglock`)).status, 429);
    await b.server.services.notify.deliverDue();
    assert.match((await mail.take('pglock@example.com')).subject ?? '', /recuperação de senha bloqueada/);
  });
});
