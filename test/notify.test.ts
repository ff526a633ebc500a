// The outbox with real peers: SMTP (smtp-server), an HTTP stand-in for Twilio and for an SMS
// webhook, retries with backoff, restarts, and the "no transport configured" log path.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { LANGS } from '../src/app/config.js';
import type { NotificationRequest } from '../src/features/notify/notification-service.js';
import { NOTIFICATION_KINDS, Templates } from '../src/features/notify/templates.js';
import { TwilioTransport } from '../src/features/notify/transports.js';
import { inTransaction } from '../src/platform/sql/transaction.js';
import { bytes, uploadRaw } from './helpers/files.js';
import { eventually, HttpPeer, MailSink } from './helpers/peers.js';
import {
  basic,
  call,
  closeWith,
  closing,
  freePort,
  serverFor,
  startTestServer,
  type TestServer,
} from './helpers/server.js';

const SAMPLE: Record<string, string> = {
  user: 'ana',
  pin: '314159',
  pinValidity: '3 minutes',
  link: 'http://localhost:8080/v1/download/file?lang=pt&k=SECRETTOKEN',
  linkValidity: '30 minutes',
  firstAccess: '',
  uploader: 'ana',
  fileName: 'report.pdf',
  size: '1.5 MB',
  message: 'Here it is',
  expires: '1 May 2030',
  pinRequired: 'yes',
  recipient: 'bob@example.com',
  downloadedAt: '1 May 2030 10:00',
  failures: '10',
  lockedFor: '1 hour',
  requester: 'ana',
  title: 'Your 2024 invoices',
  count: '2',
  files: '- a.pdf\n- b.pdf',
  from: 'bob@example.com',
  lockedUntil: '1 May 2030 11:00',
  percent: '80',
  usage: '8 GiB',
  quota: '10 GiB',
};

const smsPin = (recipient: string): NotificationRequest => ({
  channel: 'sms',
  recipient,
  lang: 'pt',
  kind: 'download-pin',
  vars: { fileName: 'relatório.pdf', pin: '271828', pinValidity: '3 minutos' },
  userName: 'ana',
});

async function outboxRow(t: TestServer, id: number) {
  return t.server.services.db.selectFrom('outbox').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

/** A server (workers off) whose SMS go to a webhook peer, and that peer. */
async function smsWebhookServer() {
  const hook = await HttpPeer.start();
  const t = await startTestServer({
    startWorkers: false,
    env: { REMESSA_SMS_PROVIDER: 'webhook', REMESSA_SMS_URL: hook.url },
  }).catch(closing(hook));
  return { hook, t };
}

describe('templates', () => {
  test('every kind renders in pt, en and es, for e-mail and SMS, with nothing left unfilled', async () => {
    const templates = new Templates(null);
    for (const lang of LANGS) {
      for (const kind of NOTIFICATION_KINDS) {
        const mail = await templates.render('email', lang, kind, SAMPLE);
        assert.ok(mail.subject.length > 0, `${lang}/${kind} subject`);
        assert.ok(!/\{\{|\}\}/.test(mail.subject + mail.text), `${lang}/${kind} fully substituted`);
        assert.ok(!/\n\n\n/.test(mail.text), `${lang}/${kind} no run of blank lines`);
        const sms = await templates.render('sms', lang, kind, SAMPLE);
        assert.ok(sms.text.length > 0 && sms.text.length <= 320, `${lang}/${kind} SMS is short`);
        assert.ok(!/\{\{|\}\}/.test(sms.text));
      }
    }
    const noMessage = await templates.render('email', 'en', 'file-link', { ...SAMPLE, message: '' });
    assert.ok(!noMessage.text.includes('Message from'), 'the optional section disappears');
    const withMessage = await templates.render('email', 'en', 'file-link', SAMPLE);
    assert.match(withMessage.text, /Message from ana:\nHere it is/);
    await assert.rejects(templates.render('email', 'en', 'download-pin', { fileName: 'x' }), /no value/);
  });

  test('REMESSA_TEMPLATES_DIR overrides single files; the rest fall back to the built-in ones', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'remessa-tpl-'));
    try {
      await mkdir(path.join(dir, 'en'));
      await writeFile(
        path.join(dir, 'en', 'download-pin.txt'),
        'Subject: Your code, {{fileName}}\nCode {{pin}}.\n',
      );
      const templates = new Templates(dir);
      const custom = await templates.render('email', 'en', 'download-pin', SAMPLE);
      assert.deepEqual(custom, { subject: 'Your code, report.pdf', text: 'Code 314159.\n' });
      const builtin = await templates.render('email', 'pt', 'download-pin', SAMPLE);
      assert.equal(builtin.subject, 'Remessa: código para baixar report.pdf');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('SMS transports', () => {
  test('Twilio: POST …/Accounts/{user}/Messages.json, Basic auth, form fields To, From, Body', async (ctx) => {
    const twilio = await HttpPeer.start();
    const t = await startTestServer({
      env: {
        REMESSA_SMS_PROVIDER: 'twilio',
        REMESSA_SMS_URL: twilio.url,
        REMESSA_SMS_USER: 'AC0123456789',
        REMESSA_SMS_PASSWORD: 'auth-token-xyz',
        REMESSA_SMS_FROM: '+15550001111',
      },
    }).catch(closing(twilio));
    closeWith(ctx, t, twilio);
    const { notify, db } = t.server.services;
    const id = await notify.enqueue(db, smsPin('+5511999990000'));
    const [req] = await twilio.waitFor(1);
    assert.equal(req!.method, 'POST');
    assert.equal(req!.url, '/2010-04-01/Accounts/AC0123456789/Messages.json');
    assert.equal(
      req!.headers.authorization,
      `Basic ${Buffer.from('AC0123456789:auth-token-xyz').toString('base64')}`,
    );
    assert.match(String(req!.headers['content-type']), /^application\/x-www-form-urlencoded/);
    const fields = new URLSearchParams(req!.body);
    assert.equal(fields.get('To'), '+5511999990000');
    assert.equal(fields.get('From'), '+15550001111');
    assert.equal(
      fields.get('Body'),
      'Remessa: o código para baixar "relatório.pdf" é 271828 (vale por 3 minutos). Não o repasse a ninguém.',
    );
    await eventually(async () => (await outboxRow(t, id)).status === 'sent');
    assert.ok(!t.logs.join('\n').includes('auth-token-xyz'));
    assert.ok(!t.logs.join('\n').includes('271828'));
    const full = new TwilioTransport(
      'https://api.twilio.com/2010-04-01/Accounts/AC9/Messages.json',
      'AC9',
      'x',
      '+1',
    );
    assert.equal(full.endpoint, 'https://api.twilio.com/2010-04-01/Accounts/AC9/Messages.json');
    assert.equal(
      new TwilioTransport('https://api.twilio.com/', 'AC9', 'x', '+1').endpoint,
      'https://api.twilio.com/2010-04-01/Accounts/AC9/Messages.json',
    );
  });

  test('webhook: JSON {to, text}; failures retry with exponential backoff, then failed + audit', async (ctx) => {
    const hook = await HttpPeer.start();
    const t = await startTestServer({
      startWorkers: false,
      env: {
        REMESSA_SMS_PROVIDER: 'webhook',
        REMESSA_SMS_URL: `${hook.url}/sms`,
        REMESSA_NOTIFY_RETRY_SECONDS: '10',
        REMESSA_NOTIFY_MAX_ATTEMPTS: '3',
      },
    }).catch(closing(hook));
    closeWith(ctx, t, hook);
    const { notify, db, audit } = t.server.services;
    const outbox = { runOnce: () => t.server.services.notify.deliverDue() };
    const ok = await notify.enqueue(db, smsPin('+5511988887777'));
    assert.equal((await outboxRow(t, ok)).status, 'pending', 'workers stopped: nothing sent yet');
    await outbox.runOnce();
    const [req] = hook.requests;
    assert.equal(req!.url, '/sms');
    assert.match(String(req!.headers['content-type']), /^application\/json/);
    const body = JSON.parse(req!.body) as Record<string, unknown>;
    assert.deepEqual(Object.keys(body).sort(), ['text', 'to']);
    assert.equal(body['to'], '+5511988887777');
    assert.match(String(body['text']), /271828/);
    assert.equal((await outboxRow(t, ok)).status, 'sent');

    hook.status = 500;
    const bad = await notify.enqueue(db, smsPin('+5511966665555'));
    await outbox.runOnce();
    let row = await outboxRow(t, bad);
    assert.equal(row.status, 'pending');
    assert.equal(row.attempts, 1);
    assert.match(String(row.last_error), /500/);
    assert.ok(Math.abs(row.next_attempt_at - t.clock.now() - 10_000) < 1000, 'first retry after 10 s');
    await outbox.runOnce();
    assert.equal((await outboxRow(t, bad)).attempts, 1, 'not due yet');
    await t.advanceClock(10_000);
    await outbox.runOnce();
    row = await outboxRow(t, bad);
    assert.equal(row.attempts, 2);
    assert.ok(Math.abs(row.next_attempt_at - t.clock.now() - 20_000) < 1000, 'then after 20 s');
    await t.advanceClock(20_000);
    await outbox.runOnce();
    row = await outboxRow(t, bad);
    assert.equal(row.status, 'failed');
    assert.equal(row.attempts, 3);
    const failed = await audit.query({ event: 'notify.failed' });
    assert.equal(failed.length, 1);
    assert.equal(failed[0]!.user_name, 'ana');
    assert.match(String(failed[0]!.detail), /"outbox":\d+.*"attempts":3/);
    assert.equal(hook.requests.length, 4);
  });

  test('lease: two delivery passes at once send each message exactly once', async () => {
    const { hook, t } = await smsWebhookServer();
    try {
      const { notify, db } = t.server.services;
      for (let i = 0; i < 10; i++)
        await notify.enqueue(db, smsPin(`+55119000000${String(i).padStart(2, '0')}`));
      await Promise.all([notify.deliverDue(), notify.deliverDue(), t.server.services.notify.deliverDue()]);
      assert.equal(hook.requests.length, 10);
      const to = hook.requests.map((r) => (JSON.parse(r.body) as { to: string }).to);
      assert.equal(new Set(to).size, 10);
    } finally {
      await t.close();
      await hook.close();
    }
  });
});

describe('file names in SMS', () => {
  test('quoted, shortened, without line breaks, invisible characters, links or a closing quote', async () => {
    const { hook, t } = await smsWebhookServer();
    try {
      await t.createUser('sender', 'sender-password', { lang: 'en' });
      const hostile = [
        'Your account is blocked\u2028\u200f" call +55 11 4000-0000 now, or visit',
        'https:secure-bank.example.com and support@bank.example pay.pdf',
      ].join(' ');
      const r = await uploadRaw(t, basic('sender', 'sender-password'), bytes(10), {
        file: hostile,
        c: '+5511988880000',
      });
      assert.equal(r.status, 200);
      const plain = await uploadRaw(t, basic('sender', 'sender-password'), bytes(10), {
        file: 'relatório.final.pdf',
        c: '+5511988880001',
      });
      assert.equal(plain.status, 200);
      await t.server.services.notify.deliverDue();
      const texts = new Map(
        hook.requests.map((q) => {
          const body = JSON.parse(q.body) as { to: string; text: string };
          return [body.to, body.text];
        }),
      );
      const text = texts.get('+5511988880000')!;
      const quoted = /sent you "([^"]*)" \(/.exec(text);
      assert.ok(quoted, text);
      const shown = quoted[1]!;
      assert.ok([...shown].length <= 40, shown);
      assert.ok(shown.startsWith("Your account is blocked ' call +55"), shown);
      assert.ok(shown.endsWith('….pdf'), shown);
      assert.equal(text.match(/"/g)!.length, 2, 'the name cannot close the quotes');
      assert.ok(!/[\p{Cc}\u200f\u2028]/u.test(text), 'no line breaks or invisible characters');
      assert.ok(!/https:|secure-bank\.example|@bank/.test(text), text);
      assert.match(texts.get('+5511988880001')!, /sent you "relatório_final\.pdf"/);
    } finally {
      await t.close();
      await hook.close();
    }
  });
});

describe('a send that outlasts its lease', () => {
  // Found by a durability review: an SMTP server answering each command after 28 s made one send last
  // ~140 s; at 120 s another instance took the message and sent it again.
  const lease = 120_000;

  test('the lease is renewed while the message is being sent: a later pass does not send it again', async () => {
    const { hook, t } = await smsWebhookServer();
    try {
      const { notify, db } = t.server.services;
      let release!: () => void;
      hook.holdAnswers = new Promise((resolve) => {
        release = resolve;
      });
      const id = await notify.enqueue(db, smsPin('+5511900000088'));
      const first = notify.deliverDue();
      await eventually(async () => hook.requests.length === 1);
      const claimed = (await outboxRow(t, id)).claimed_until;
      // Most of the lease goes by while the receiver takes its time: the claim is extended.
      t.clock.advance(lease - 20_000);
      await eventually(async () => (await outboxRow(t, id)).claimed_until > claimed);
      // Past the first lease's end, another pass (another instance) finds the message taken.
      t.clock.advance(lease / 2);
      assert.equal((await outboxRow(t, id)).status, 'pending');
      assert.ok((await outboxRow(t, id)).claimed_until > t.clock.now() - 1, 'still claimed');
      await notify.deliverDue();
      release();
      await first;
      assert.equal(hook.requests.length, 1);
      assert.equal((await outboxRow(t, id)).status, 'sent');
      // The same at every attempt: how a gateway tells a copy sent again after a crash.
      assert.equal(
        hook.requests[0]!.headers['remessa-message-id'],
        `${id}.${(await outboxRow(t, id)).created_at}`,
      );
    } finally {
      await t.close();
      await hook.close();
    }
  });

  test('a failure after the lease was lost does not overwrite what another instance recorded', async () => {
    const { hook, t } = await smsWebhookServer();
    try {
      const { notify, db } = t.server.services;
      // The renewals fail (the database unreachable for this instance only).
      const store = (notify as unknown as { store: { renew: (...a: unknown[]) => Promise<boolean> } }).store;
      store.renew = async () => {
        throw new Error('connection terminated unexpectedly');
      };
      let release!: () => void;
      hook.holdAnswers = new Promise((resolve) => {
        release = resolve;
      });
      hook.status = 400; // the slow send ends in a failure no retry can help
      const id = await notify.enqueue(db, smsPin('+5511900000099'));
      const first = notify.deliverDue();
      await eventually(async () => hook.requests.length === 1);
      // The lease lapses; another instance sends the message.
      t.clock.advance(lease + 1000);
      hook.holdAnswers = null;
      hook.status = 201;
      const other = t.server.services.notify;
      await other.deliverDue();
      assert.equal((await outboxRow(t, id)).status, 'sent');
      // Then the first send fails: the row stays sent, and no failure is recorded.
      release();
      await first;
      const row = await outboxRow(t, id);
      assert.equal(row.status, 'sent');
      assert.equal(row.last_error, null);
      assert.equal((await t.server.services.audit.query({ event: 'notify.failed' })).length, 0);
    } finally {
      await t.close();
      await hook.close();
    }
  });
});

describe('recording a sent message', () => {
  test('a database error after the send is tried again: recorded once, sent once, one audit row', async () => {
    const { hook, t } = await smsWebhookServer();
    try {
      const { notify, db, audit } = t.server.services;
      // The first attempt at recording fails, as a dropped connection would (found by a review
      // helper: the row stayed pending and the message went out again when the lease ended).
      const store = (notify as unknown as { store: { updatePending: (...a: unknown[]) => Promise<boolean> } })
        .store;
      const original = store.updatePending.bind(store);
      let failures = 1;
      store.updatePending = async (...a: unknown[]) => {
        if (failures-- > 0) throw new Error('connection terminated unexpectedly');
        return original(...a);
      };
      await notify.enqueue(db, smsPin('+5511900000077'));
      await notify.deliverDue();
      assert.equal(hook.requests.length, 1);
      assert.equal((await notify.list({ status: 'sent' })).length, 1);
      assert.equal((await audit.query({ event: 'notify.sent' })).length, 1);
      // A pass after the lease would have ended finds nothing to send.
      t.clock.advance(10 * 60_000);
      await notify.deliverDue();
      assert.equal(hook.requests.length, 1);
    } finally {
      await t.close();
      await hook.close();
    }
  });
});

describe('outbox', () => {
  test('enqueue inside a transaction commits or rolls back with the caller', async (ctx) => {
    const t = await serverFor(ctx, { startWorkers: false });
    const { notify, db } = t.server.services;
    await assert.rejects(
      inTransaction(db, async (trx) => {
        await notify.enqueue(trx, smsPin('+5511911111111'));
        throw new Error('file write failed');
      }),
      /file write failed/,
    );
    assert.equal((await notify.list()).length, 0, 'rolled back with the caller');
    const id = await inTransaction(db, (trx) => notify.enqueue(trx, smsPin('+5511922222222')));
    const [entry] = await notify.list();
    assert.equal(entry!.id, id);
    assert.equal(entry!.status, 'pending');
    const raw = await outboxRow(t, id);
    assert.ok(!raw.payload.includes('271828'), 'payload is sealed');
  });

  test('no SMTP configured: status logged, log line with PIN and token masked; CLI shows it in full', async (ctx) => {
    const t = await serverFor(ctx);
    await t.createUser('solo', 'solo-password', { lang: 'en' });
    const r = await call(`${t.base}/auth/forgetParameters?u=solo`);
    assert.equal(r.status, 200);
    const k = new URL(String(r.body['linkURL'])).searchParams.get('k')!;
    const [entry] = await eventually(async () => {
      const rows = await t.server.services.notify.list({ status: 'logged' });
      return rows.length > 0 ? rows : undefined;
    });
    assert.equal(entry!.kind, 'password-pin');
    assert.equal(entry!.recipient, 'solo@example.com');
    const full = await t.server.services.notify.show(entry!.id);
    const pin = /PIN\): (\d{6})/.exec(full!.text)![1]!;
    assert.ok(full!.text.includes(k), 'the outbox keeps the real link');

    const line = t.logs.find((l) => l.includes('notification not sent'));
    assert.ok(line, 'the message is written to the log');
    assert.match(line, /REMESSA_SMTP_URL/);
    assert.match(line, /PIN\): \*{6}/);
    assert.match(line, /k=\[REDACTED\]/);
    const logs = t.logs.join('\n');
    assert.ok(!logs.includes(pin), 'the PIN is not in the log');
    assert.ok(!logs.includes(k), 'the change token is not in the log');
    assert.ok((await t.server.services.audit.query({ event: 'notify.logged' })).length === 1);

    const cli = (...args: string[]) =>
      spawnSync(process.execPath, ['bin/remessa.js', ...args], {
        env: { ...process.env, ...t.env },
        encoding: 'utf8',
      });
    const list = cli('outbox', 'list', '--json');
    assert.equal(list.status, 0, list.stderr);
    const listed = list.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(listed[0]!['status'], 'logged');
    assert.ok(!list.stdout.includes(pin), 'list shows no message text');
    const show = cli('outbox', 'show', String(entry!.id));
    assert.equal(show.status, 0, show.stderr);
    assert.match(show.stdout, /Subject: {2}Remessa: code to change your password/);
    assert.ok(show.stdout.includes(pin) && show.stdout.includes(k), 'show prints PIN and link');
    assert.equal(cli('outbox', 'show', '999').status, 1);
  });

  test('SMTP down at enqueue, up a few seconds later: the message still arrives', async (ctx) => {
    const port = await freePort();
    const t = await startTestServer({
      env: {
        REMESSA_SMTP_URL: `smtp://127.0.0.1:${port}`,
        REMESSA_NOTIFY_RETRY_SECONDS: '1',
        REMESSA_NOTIFY_MAX_ATTEMPTS: '10',
      },
    });
    let mail: MailSink | undefined;
    closeWith(ctx, t, async () => mail?.close());
    await t.createUser('patient', 'patient-password');
    const started = Date.now();
    const r = await call(`${t.base}/auth/forgetParameters?u=patient`);
    assert.equal(r.status, 200);
    assert.ok(Date.now() - started < 3000, 'the response does not wait for SMTP');
    const [pending] = await eventually(async () => {
      const rows = await t.server.services.notify.list();
      return rows[0] && rows[0].attempts > 0 ? rows : undefined;
    });
    assert.equal(pending!.status, 'pending');
    assert.match(String(pending!.lastError), /ECONNREFUSED/);
    // Still down when it is tried again.
    await eventually(async () => ((await t.server.services.notify.list())[0]?.attempts ?? 0) >= 2);
    mail = await MailSink.start(port);
    const m = await mail.take('patient@example.com', 15_000);
    assert.equal(m.subject, 'Remessa: código para alterar a sua senha');
    const [sent] = await eventually(async () => {
      const rows = await t.server.services.notify.list({ status: 'sent' });
      return rows.length ? rows : undefined;
    });
    assert.ok(sent!.attempts >= 2);
  });

  test('a restart resumes pending messages', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'remessa-restart-'));
    const mail = await MailSink.start();
    const env = { REMESSA_SMTP_URL: mail.url };
    try {
      const first = await startTestServer({ dataDir, env, startWorkers: false });
      await first.createUser('r1', 'r1-password');
      await first.createUser('r2', 'r2-password');
      assert.equal((await call(`${first.base}/auth/forgetParameters?u=r1`)).status, 200);
      assert.equal((await call(`${first.base}/auth/forget?u=r2`)).status, 200);
      assert.equal((await first.server.services.notify.list({ status: 'pending' })).length, 2);
      await first.close();
      assert.equal(mail.messages.length, 0);

      const second = await startTestServer({ dataDir, env });
      try {
        const m1 = await mail.take('r1@example.com');
        await mail.take('r2@example.com');
        // Its Message-ID comes from the outbox row: a copy sent again after a crash (sent, not yet
        // recorded) has the same one, and the receiving side can drop it (found by a crash probe).
        const row = await second.server.services.db
          .selectFrom('outbox')
          .select(['id', 'created_at'])
          .where('recipient', '=', 'r1@example.com')
          .executeTakeFirstOrThrow();
        const domain = /@([^>\s]+)/.exec(second.server.services.config.mailFrom)![1];
        assert.equal(m1.messageId, `<remessa.${row.id}.${row.created_at}@${domain}>`);
        await eventually(
          async () => (await second.server.services.notify.list({ status: 'sent' })).length === 2,
        );
      } finally {
        await second.close();
      }
    } finally {
      await mail.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
