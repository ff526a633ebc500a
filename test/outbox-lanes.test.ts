// Notifications never stop: a webhook receiver that is down holds up only its own events (a PIN
// e-mail still leaves at once, the held events flow once it is back), and an SMTP outage of ten
// minutes delays the messages queued during it without losing any.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { uploadFile } from './helpers/files.js';
import { eventually, HttpPeer, MailSink } from './helpers/peers.js';
import { basic, call, closeAll, freePort, startTestServer, type TestServer } from './helpers/server.js';

const HELD = 500;

function pendingWebhooks(t: TestServer) {
  return t.server.services.db
    .selectFrom('outbox')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('channel', '=', 'webhook')
    .where('status', '=', 'pending')
    .executeTakeFirstOrThrow()
    .then((r) => Number(r.n));
}

describe('a dead webhook receiver holds up only its own events', () => {
  test(`${HELD} events waiting behind it: a PIN e-mail leaves within seconds, the events flow once it is back`, async (t) => {
    const mail = await MailSink.start();
    const receiver = await HttpPeer.start();
    receiver.status = 503;
    const s = await startTestServer({
      env: {
        REMESSA_SMTP_URL: mail.url,
        REMESSA_WEBHOOK_URL: `${receiver.url}/hooks`,
        REMESSA_WEBHOOK_SECRET: 'webhook-secret-webhook-secret-0123',
        REMESSA_WEBHOOK_ALLOW_PRIVATE: 'true',
      },
    });
    t.after(() => closeAll(s, receiver, mail));
    await s.createUser('ana', 'ana-password', { email: 'ana@example.com', lang: 'en' });
    await s.createUser('bia', 'bia-password', { email: 'bia@example.com', lang: 'en' });
    const auth = basic('ana', 'ana-password');

    // Events of one file wait in order behind the first, which the receiver refuses.
    const { id: fileId, linkURL } = await uploadFile(s, auth, 'one.bin', Buffer.alloc(100, 7));
    const downloadOnce = async () => {
      const res = await fetch(linkURL);
      assert.equal(res.status, 200);
      await res.arrayBuffer();
    };
    while ((await pendingWebhooks(s)) < HELD) await Promise.all(Array.from({ length: 10 }, downloadOnce));
    await eventually(async () => receiver.requests.length > 0);

    // A password-reset PIN for someone else goes out at once.
    const forget = await call(`${s.base}/auth/forgetParameters?u=bia`);
    assert.equal(forget.status, 200);
    await mail.take('bia@example.com', 15_000);

    // The receiver is back: once the first event's retry is due, all of them arrive, in order.
    receiver.status = 200;
    const before = receiver.requests.length;
    const queued = await pendingWebhooks(s);
    await s.advanceClock(7 * 60 * 60 * 1000);
    await s.server.services.notify.deliverDue();
    await eventually(async () => (await pendingWebhooks(s)) === 0, 30_000);
    const events = receiver.requests
      .slice(before)
      .map((r) => JSON.parse(r.body) as { id: string; created: string; data: { file?: { id: number } } });
    assert.ok(
      new Set(events.map((e) => e.id)).size >= queued,
      `${events.length} delivered, ${queued} were waiting`,
    );
    const created = events.filter((e) => e.data.file?.id === fileId).map((e) => e.created);
    assert.deepEqual([...created].sort(), created, 'events of one file arrive in the order they happened');
  });
});

describe('an SMTP outage delays, never loses', () => {
  test('ten minutes without SMTP: every message queued meanwhile is sent once it is back', async (t) => {
    const smtpPort = await freePort();
    const s = await startTestServer({
      startWorkers: false,
      env: { REMESSA_SMTP_URL: `smtp://127.0.0.1:${smtpPort}`, REMESSA_NOTIFY_RETRY_SECONDS: '5' },
    });
    let mail: MailSink | undefined;
    t.after(() => closeAll(s, mail));
    await s.createUser('ana', 'ana-password', { email: 'ana@example.com', lang: 'en' });
    const auth = basic('ana', 'ana-password');
    const recipients = ['r1@example.com', 'r2@example.com', 'r3@example.com'];
    for (const to of recipients) await uploadFile(s, auth, `for-${to}.txt`, Buffer.alloc(100, 7), { m: to });
    const { notify, db } = s.server.services;

    for (let elapsed = 0; elapsed < 10 * 60 * 1000; elapsed += 20_000) {
      await notify.deliverDue();
      await s.advanceClock(20_000);
    }
    const during = await db.selectFrom('outbox').select(['status', 'attempts']).execute();
    assert.ok(during.length >= recipients.length);
    assert.ok(
      during.every((r) => r.status === 'pending'),
      'nothing given up during the outage',
    );
    assert.ok(Math.max(...during.map((r) => r.attempts)) >= 5, 'retried throughout');

    // The wait is visible to the operator: /readyz's detail and the metrics.
    const ready = await call(`${s.base}/readyz`);
    assert.equal(ready.status, 200);
    const outbox = ready.body['outbox'] as { pending: number; oldestPendingSeconds: number };
    assert.equal(outbox.pending, during.length);
    assert.ok(outbox.oldestPendingSeconds >= 600, `oldest waits ${outbox.oldestPendingSeconds} s`);

    mail = await MailSink.start(smtpPort);
    await s.advanceClock(5 * 60 * 1000);
    await notify.deliverDue();
    for (const to of recipients) await mail.take(to);
    const after = await db.selectFrom('outbox').select('status').execute();
    assert.deepEqual(new Set(after.map((r) => r.status)), new Set(['sent']));
    assert.equal(mail.messages.length, 0, 'each message sent once');
  });
});
