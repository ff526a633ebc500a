// Signed webhooks end to end: a real HTTP receiver verifies every signature; events of
// every type arrive in order per file and exactly once per event id, across a receiver outage of
// a minute and a restart of Remessa; private targets are refused; 410 disables a subscription.
import assert from 'node:assert/strict';
import { lookup } from 'node:dns/promises';
import { mkdtemp, rm } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { verifySignature } from '../src/features/webhooks/signature.js';
import { isPrivateAddress } from '../src/features/webhooks/url-safety.js';
import { run } from './helpers/cli.js';
import { outcomeKnown } from './helpers/files.js';
import { type CapturedRequest, eventually, HttpPeer, MailSink } from './helpers/peers.js';
import {
  basic,
  call,
  closeAll,
  ERROR_KEYS,
  errorKeys,
  serverFor,
  startTestServer,
  type TestServer,
} from './helpers/server.js';

const GLOBAL_SECRET = 'global-webhook-secret-0123456789';
const EVENT_KEYS = ['created', 'data', 'id', 'type', 'version'];

interface Event {
  id: string;
  type: string;
  version: number;
  created: string;
  data: Record<string, unknown> & { file?: { id: number; name: string } };
}

/** Deliveries already checked (at the time they arrived: a signature is valid five minutes). */
const checked = new WeakMap<CapturedRequest, Event>();

/** Checks a delivery as a receiver would (signature, headers, age) and returns its event. */
function eventOf(req: CapturedRequest, secret: string, nowMs: number): Event {
  const known = checked.get(req);
  if (known) return known;
  assert.equal(req.method, 'POST');
  assert.equal(req.headers['content-type'], 'application/json');
  const header = String(req.headers['remessa-signature']);
  assert.match(header, /^t=\d+,v1=[0-9a-f]{64}$/);
  assert.ok(verifySignature(secret, header, req.body, Math.floor(nowMs / 1000)), `bad signature: ${header}`);
  assert.ok(!verifySignature(`${secret}x`, header, req.body, Math.floor(nowMs / 1000)));
  const event = JSON.parse(req.body) as Event;
  assert.deepEqual(Object.keys(event).sort(), EVENT_KEYS);
  assert.equal(event.version, 1);
  assert.match(event.id, /^evt_[A-Za-z0-9_-]{24}$/);
  assert.equal(req.headers['remessa-event-id'], event.id);
  assert.equal(req.headers['remessa-event-type'], event.type);
  checked.set(req, event);
  return event;
}

/** Runs the outbox until nothing is due (deliveries, and the events their outcomes make). */
async function drain(t: TestServer): Promise<void> {
  await t.server.services.notify.deliverDue();
}

/** A download read to the end; returns once its audit row has its outcome (and so its event is written). */
async function download(t: TestServer, url: string, status: number, headers: Record<string, string> = {}) {
  const { audit } = t.server.services;
  const finished = async () => (await audit.query({ event: 'download' })).filter(outcomeKnown).length;
  const before = await finished();
  const res = await fetch(url, { headers });
  assert.equal(res.status, status);
  await res.arrayBuffer();
  await eventually(async () => (await finished()) > before);
}

const upload = (t: TestServer, auth: string, name: string, query: Record<string, string> = {}) => {
  const fd = new FormData();
  fd.append('file', new Blob([new Uint8Array(Buffer.alloc(3000, 7))]), name);
  return call(`${t.base}/upload?${new URLSearchParams(query)}`, {
    method: 'POST',
    headers: { Authorization: auth },
    body: fd,
  });
};

describe('webhooks: every event, signed, in order, once', () => {
  let t: TestServer;
  let mail: MailSink;
  let sms: HttpPeer;
  let global: HttpPeer;
  let own: HttpPeer;
  let ownSecret = '';
  const dataDir = { path: '' };
  let env: Record<string, string>;
  let clockOffset = 0;
  const leaks: string[] = [];
  const earlierLogs: string[] = [];

  before(async () => {
    mail = await MailSink.start();
    sms = await HttpPeer.start();
    sms.status = 500;
    global = await HttpPeer.start();
    own = await HttpPeer.start();
    own.status = 204;
    env = {
      REMESSA_SMTP_URL: mail.url,
      REMESSA_SMS_PROVIDER: 'webhook',
      REMESSA_SMS_URL: `${sms.url}/sms`,
      REMESSA_NOTIFY_MAX_ATTEMPTS: '1',
      REMESSA_BACKUP_DAYS: '0',
      REMESSA_WEBHOOK_URL: `${global.url}/hooks/remessa?token=receiver-own-token`,
      REMESSA_WEBHOOK_SECRET: GLOBAL_SECRET,
      REMESSA_WEBHOOK_ALLOW_PRIVATE: 'true',
    };
    dataDir.path = await mkdtemp(path.join(tmpdir(), 'remessa-webhooks-'));
    t = await startTestServer({ env, dataDir: dataDir.path, startWorkers: false });
    await t.createUser('alice', 'alice-password', { email: 'alice@example.com', lang: 'en' });
    await t.createUser('dave', 'dave-password');
  });
  after(async () => {
    await closeAll(t, mail, sms, global, own, async () => {
      if (dataDir.path) await rm(dataDir.path, { recursive: true, force: true });
    });
    const logs = [...earlierLogs, ...(t?.logs ?? [])].join('\n');
    for (const s of [GLOBAL_SECRET, 'receiver-own-token', ...leaks]) {
      if (s) assert.ok(!logs.includes(s), `secret leaked into the log: ${s}`);
    }
  });

  const alice = basic('alice', 'alice-password');
  const globalEvents = () => global.requests.map((r) => eventOf(r, GLOBAL_SECRET, t.clock.now()));
  const ownEvents = () => own.requests.map((r) => eventOf(r, ownSecret, t.clock.now()));

  test('a user subscribes through the API; the secret is shown once', async () => {
    const bad = await call(`${t.base}/webhooks`, {
      method: 'POST',
      headers: { Authorization: alice, 'Content-Type': 'application/json' },
      body: JSON.stringify({ url: `${own.url}/alice`, events: 'file.uploaded,file.nonsense' }),
    });
    assert.equal(bad.status, 400);
    assert.deepEqual(errorKeys(bad.body), ERROR_KEYS);
    assert.match(String(bad.body['detail']), /^events: unknown event "file\.nonsense"/);

    const r = await call(`${t.base}/webhooks`, {
      method: 'POST',
      headers: { Authorization: alice, 'Content-Type': 'application/json' },
      body: JSON.stringify({ url: `${own.url}/alice` }),
    });
    assert.equal(r.status, 200);
    assert.equal(r.body['status'], 0);
    assert.equal(r.body['description'], 'handlerWebhooks:succsessfully');
    const hook = r.body['webhook'] as Record<string, unknown>;
    assert.deepEqual(Object.keys(hook).sort(), [
      'created',
      'disabledReason',
      'enabled',
      'events',
      'id',
      'secret',
      'url',
    ]);
    assert.equal(hook['url'], `${own.url}/alice`);
    // Without `events`, every event there is.
    assert.deepEqual(hook['events'], [
      'file.uploaded',
      'file.downloaded',
      'notification.sent',
      'notification.failed',
      'file.retired',
      'file.purged',
      'link.locked',
      'user.locked',
      'quota.warning',
      'request.file_received',
      'request.completed',
    ]);
    assert.equal(hook['enabled'], true);
    ownSecret = String(hook['secret']);
    assert.match(ownSecret, /^whsec_[A-Za-z0-9_-]{43}$/);
    leaks.push(ownSecret);

    const list = await call(`${t.base}/webhooks`, { headers: { Authorization: alice } });
    assert.equal(list.status, 200);
    const hooks = list.body['webhooks'] as Record<string, unknown>[];
    assert.equal(hooks.length, 1);
    assert.equal(hooks[0]!['id'], hook['id']);
    assert.ok(!('secret' in hooks[0]!));
    assert.ok(!JSON.stringify(list.body).includes(ownSecret));
  });

  test('upload, notifications sent and failed, downloads whole and partial', async () => {
    const up = await upload(t, alice, 'report.csv', { m: 'bob@example.com', c: '+5511999990000' });
    assert.equal(up.status, 200);
    await drain(t);
    await mail.take('bob@example.com');
    const entry = (up.body['files'] as { id: number; linkURL: string }[])[0]!;
    const k = new URL(entry.linkURL).searchParams.get('k')!;
    leaks.push(k);
    await download(t, entry.linkURL, 200);
    await download(t, entry.linkURL, 206, { Range: 'bytes=0-99' });
    await drain(t);

    const events = globalEvents().filter((e) => e.data.file?.id === entry.id);
    // The two messages go out side by side: their outcomes may come in either order.
    assert.deepEqual(
      events.map((e) => e.type).map((type, i) => (i === 1 || i === 2 ? 'notification.*' : type)),
      ['file.uploaded', 'notification.*', 'notification.*', 'file.downloaded', 'file.downloaded'],
    );
    const uploaded = events[0]!;
    const sent = events.find((e) => e.type === 'notification.sent');
    const failed = events.find((e) => e.type === 'notification.failed');
    const [whole, partial] = events.slice(3);
    assert.deepEqual(uploaded!.data, {
      file: {
        id: entry.id,
        name: 'report.csv',
        length: 3000,
        modified: (up.body['files'] as { modified: number }[])[0]!.modified,
        sha256: (up.body['files'] as { sha256: string }[])[0]!.sha256,
        expires: (up.body['files'] as { expires: number }[])[0]!.expires,
      },
      uploader: 'alice',
      area: 'alice',
      recipients: [
        { channel: 'email', address: 'b***@example.com' },
        { channel: 'sms', address: '+55*******0000' },
      ],
    });
    const notification = sent!.data['notification'] as Record<string, unknown>;
    assert.deepEqual(
      { ...notification, id: 0 },
      { id: 0, kind: 'file-link', channel: 'email', address: 'b***@example.com', attempts: 1 },
    );
    assert.deepEqual(
      { ...(failed!.data['notification'] as Record<string, unknown>), id: 0 },
      {
        id: 0,
        kind: 'file-link',
        channel: 'sms',
        address: '+55*******0000',
        attempts: 1,
        reason: 'SMS webhook answered HTTP 500',
      },
    );
    assert.deepEqual(
      { ...whole!.data, link: { ...(whole!.data['link'] as object), id: 0 } },
      { file: uploaded!.data.file, link: { id: 0, kind: 'owner' }, by: 'owner', complete: true, bytes: 3000 },
    );
    assert.equal(partial!.data['complete'], false);
    assert.equal(partial!.data['bytes'], 100);
    assert.equal(partial!.data['range'], '0-99');
    // The user's own hook got the same events (its files), signed with its own secret.
    assert.deepEqual(
      ownEvents().map((e) => e.id),
      events.map((e) => e.id),
    );
    // Nothing secret in any payload: no download token, no full address.
    for (const r of [...global.requests, ...own.requests]) {
      assert.ok(!r.body.includes(k));
      assert.ok(!r.body.includes('bob@example.com'));
    }
  });

  test('link.locked and user.locked; a user hook gets only its own events', async () => {
    const before = own.requests.length;
    // A PIN-protected recipient link: five wrong PINs lock it.
    const locking = await upload(t, alice, 'locked.bin', { m: 'eve@example.com' });
    const fileId = (locking.body['files'] as { id: number }[])[0]!.id;
    const link = await t.server.services.db
      .selectFrom('links')
      .selectAll()
      .where('file_id', '=', fileId)
      .where('kind', '=', 'recipient')
      .executeTakeFirstOrThrow();
    const token = t.server.services.keys.unseal(link.token_sealed);
    leaks.push(token);
    assert.equal((await call(`${t.base}/download/pin?k=${token}`, { method: 'POST' })).status, 200);
    await drain(t);
    const pin = /\b(\d{6})\b/.exec((await mail.take('eve@example.com', 10_000)).text ?? '')?.[1];
    const wrong = pin === '000000' ? '000001' : '000000';
    for (let i = 0; i < 5; i++) {
      assert.equal((await call(`${t.base}/download/file?k=${token}&p=${wrong}`)).status, 403);
    }
    for (let i = 0; i < 5; i++) {
      const r = await call(`${t.base}/auth/login`, {
        method: 'POST',
        headers: { Authorization: basic('dave', 'wrong') },
      });
      assert.equal(r.status, 401);
    }
    await drain(t);
    const events = globalEvents();
    const locked = events.find((e) => e.type === 'link.locked')!;
    assert.deepEqual(
      { ...locked.data, link: { ...(locked.data['link'] as object), id: 0 } },
      {
        file: locked.data.file,
        link: { id: 0, kind: 'recipient', channel: 'email', address: 'e***@example.com' },
        seconds: 900,
      },
    );
    assert.equal(locked.data.file!.id, fileId);
    const userLocked = events.find((e) => e.type === 'user.locked')!;
    assert.deepEqual(userLocked.data, { user: 'dave' });
    const mine = ownEvents().slice(before);
    assert.ok(mine.some((e) => e.type === 'link.locked'));
    assert.ok(!mine.some((e) => e.type === 'user.locked'), "dave's lock is not alice's business");
  });

  test('receiver down for a minute, Remessa restarted meanwhile: everything arrives once, in order', async () => {
    const start = global.requests.length;
    const ownStart = own.requests.length;
    await global.pause();
    await own.pause();
    const up = await upload(t, alice, 'outage.txt');
    const entry = (up.body['files'] as { id: number; linkURL: string }[])[0]!;
    await drain(t); // refused: retried later
    for (let s = 0; s < 30; s += 10) {
      await t.advanceClock(10_000);
      clockOffset += 10_000;
      await drain(t);
    }
    const pending = await t.server.services.notify.list({ status: 'pending' });
    assert.ok(pending.some((m) => m.channel === 'webhook' && m.attempts >= 2 && m.lastError));

    // Restart while the receiver is still down; a download happens on the new instance.
    earlierLogs.push(...t.logs);
    await t.close();
    t = await startTestServer({ env, dataDir: dataDir.path, startWorkers: false });
    t.clock.advance(clockOffset);
    const k = new URL(entry.linkURL).searchParams.get('k')!;
    await download(t, `${t.base}/download/file?k=${k}`, 200);
    await drain(t);
    for (let s = 30; s < 60; s += 10) {
      await t.advanceClock(10_000);
      clockOffset += 10_000;
      await drain(t);
    }
    assert.equal(global.requests.length, start, 'nothing can arrive while the receiver is down');

    await global.resume();
    await own.resume();
    for (let i = 0; i < 6 && global.requests.length < start + 2; i++) {
      await t.advanceClock(60_000);
      clockOffset += 60_000;
      await drain(t);
    }
    const events = global.requests.slice(start).map((r) => eventOf(r, GLOBAL_SECRET, t.clock.now()));
    assert.deepEqual(
      events.filter((e) => e.data.file?.id === entry.id).map((e) => e.type),
      ['file.uploaded', 'file.downloaded'],
      'in order, each once',
    );
    const mine = own.requests.slice(ownStart).map((r) => eventOf(r, ownSecret, t.clock.now()));
    assert.deepEqual(
      mine.map((e) => e.id),
      events.map((e) => e.id),
    );
  });

  test('file.retired and file.purged; over the whole run each event id arrived exactly once', async () => {
    const start = global.requests.length;
    await t.advanceClock(8 * 24 * 3600 * 1000);
    await t.server.workers.get('file-sweeper')!.runOnce();
    await drain(t);
    const events = global.requests.slice(start).map((r) => eventOf(r, GLOBAL_SECRET, t.clock.now()));
    const byFile = new Map<number, string[]>();
    for (const e of events) byFile.set(e.data.file!.id, [...(byFile.get(e.data.file!.id) ?? []), e.type]);
    assert.equal(byFile.size, 3);
    for (const types of byFile.values()) assert.deepEqual(types, ['file.retired', 'file.purged']);
    const retired = events.find((e) => e.type === 'file.retired')!;
    assert.equal(retired.data['reason'], 'link expired');

    const all = globalEvents();
    assert.equal(new Set(all.map((e) => e.id)).size, all.length, 'no event id twice');
    assert.deepEqual([...new Set(all.map((e) => e.type))].sort(), [
      'file.downloaded',
      'file.purged',
      'file.retired',
      'file.uploaded',
      'link.locked',
      'notification.failed',
      'notification.sent',
      'user.locked',
    ]);
    const mine = ownEvents();
    assert.equal(new Set(mine.map((e) => e.id)).size, mine.length);
  });
});

describe('webhooks: safety', () => {
  let t: TestServer;
  let gone: HttpPeer;
  let receiver: HttpPeer;

  before(async () => {
    gone = await HttpPeer.start();
    gone.status = 410;
    receiver = await HttpPeer.start();
    t = await startTestServer({ startWorkers: false });
    await t.createUser('carol', 'carol-password');
  });
  after(async () => {
    await closeAll(t, gone, receiver);
  });

  const carol = basic('carol', 'carol-password');
  const add = (url: string) =>
    call(`${t.base}/webhooks`, {
      method: 'POST',
      headers: { Authorization: carol, 'Content-Type': 'application/json' },
      body: JSON.stringify({ url }),
    });
  /** The answer every URL aimed at an inner address gets. */
  const refusedAsPrivate = async (url: string) => {
    const r = await add(url);
    assert.equal(r.status, 400, url);
    assert.deepEqual(errorKeys(r.body), ERROR_KEYS);
    assert.equal(
      r.body['detail'],
      'url: loopback, link-local and private addresses are refused (REMESSA_WEBHOOK_ALLOW_PRIVATE)',
      url,
    );
  };

  test('loopback, private, link-local and odd URLs are refused', async () => {
    for (const url of [
      'http://127.0.0.1:8080/hook',
      'http://localhost/hook',
      'http://LOCALHOST./hook',
      'http://10.1.2.3/hook',
      'http://172.20.0.1/hook',
      'http://192.168.1.10/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://[::1]/hook',
      'http://[fd00::1]/hook',
      'http://[::ffff:127.0.0.1]/hook',
      'http://0.0.0.0/hook',
    ]) {
      await refusedAsPrivate(url);
    }
    const odd: [string, string][] = [
      ['ftp://example.com/hook', 'url: must be http or https'],
      ['https://user:pw@example.com/hook', 'url: must not carry a user name or password'],
      ['not a url', 'url: not an absolute URL'],
    ];
    for (const [url, detail] of odd) {
      const r = await add(url);
      assert.equal(r.status, 400, url);
      assert.equal(r.body['detail'], detail);
    }
    assert.equal((await add('https://hooks.example.com/remessa')).status, 200);
  });

  test('IPv6 spellings of loopback and private IPv4 addresses are refused at subscription', async () => {
    for (const url of [
      'http://[::7f00:1]/hook', // IPv4-compatible 127.0.0.1
      'http://[::127.0.0.1]/hook',
      'http://[::a00:1]/hook',
      'http://[::ffff:7f00:1]/hook', // IPv4-mapped, hex
      'http://[0:0:0:0:0:ffff:a9fe:a9fe]/hook', // mapped 169.254.169.254
      'http://[::ffff:0:127.0.0.1]/hook', // IPv4-translated
      'http://[64:ff9b::7f00:1]/hook', // NAT64
      'http://[64:ff9b:1::a00:1]/hook', // local-use NAT64
      'http://[2002:7f00:1::]/hook', // 6to4
      'http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook', // Teredo
      'http://[fe80::]/hook',
      'http://[FEBF::1]/hook',
      'http://[fc00::]/hook',
      'http://[::]/hook',
      'http://[2001:db8::1]/hook',
    ]) {
      await refusedAsPrivate(url);
    }
    // Public addresses in the same spellings are still taken.
    for (const url of ['http://[::ffff:808:808]/hook', 'https://[2606:4700:4700::1111]/hook']) {
      assert.equal((await add(url)).status, 200, url);
    }
  });

  test('a name that resolves to a private address is refused when delivering', async () => {
    const name = hostname();
    const { address } = await lookup(name);
    assert.ok(isPrivateAddress(address), `${name} should resolve to a private address here, got ${address}`);
    const port = new URL(receiver.url).port;
    const r = await add(`http://${name}:${port}/hook`);
    assert.equal(r.status, 200, 'the name itself is not refused');
    await upload(t, carol, 'a.txt');
    await t.server.services.notify.deliverDue();
    assert.equal(receiver.requests.length, 0);
    const failed = await t.server.services.notify.list({ status: 'failed' });
    const mine = failed.filter((m) => m.channel === 'webhook' && m.kind === 'file.uploaded');
    assert.equal(mine.length, 1);
    assert.match(mine[0]!.lastError!, /resolves to .*: a refused address/);
  });

  test('REMESSA_WEBHOOK_URL on a private address is a configuration error', async () => {
    await assert.rejects(
      startTestServer({
        env: { REMESSA_WEBHOOK_URL: 'http://127.0.0.1:9/hook', REMESSA_WEBHOOK_SECRET: GLOBAL_SECRET },
      }),
      /REMESSA_WEBHOOK_URL: url: loopback, link-local and private addresses are refused/,
    );
    await assert.rejects(
      startTestServer({ env: { REMESSA_WEBHOOK_URL: 'https://hooks.example.com/x' } }),
      /REMESSA_WEBHOOK_URL needs REMESSA_WEBHOOK_SECRET/,
    );
  });

  test('a receiver answering 410 Gone disables its subscription', async (ctx) => {
    const onPrem = await serverFor(ctx, {
      env: { REMESSA_WEBHOOK_ALLOW_PRIVATE: 'true' },
      startWorkers: false,
    });
    await onPrem.createUser('carol', 'carol-password');
    const r = await call(`${onPrem.base}/webhooks`, {
      method: 'POST',
      headers: { Authorization: carol, 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ url: `${gone.url}/gone`, events: 'file.uploaded' }).toString(),
    });
    assert.equal(r.status, 200);
    const id = (r.body['webhook'] as { id: number }).id;
    assert.deepEqual((r.body['webhook'] as { events: string[] }).events, ['file.uploaded']);
    // One event at a time: two side by side race the 410's disabling (CI once saw the second
    // read the row after the first had switched it off), and either order is correct.
    await upload(onPrem, carol, 'b.txt');
    await onPrem.server.services.notify.deliverDue();
    assert.equal(gone.requests.length, 1);
    await upload(onPrem, carol, 'c.txt');
    await onPrem.server.services.notify.deliverDue();
    assert.equal(gone.requests.length, 1, 'the subscription is off');
    const list = await call(`${onPrem.base}/webhooks`, { headers: { Authorization: carol } });
    const hook = (list.body['webhooks'] as Record<string, unknown>[]).find((w) => w['id'] === id)!;
    assert.equal(hook['enabled'], false);
    assert.equal(hook['disabledReason'], 'receiver answered 410 Gone');
    const failed = (await onPrem.server.services.notify.list({ status: 'failed' })).filter(
      (m) => m.channel === 'webhook',
    );
    // c.txt's event was never queued for a disabled subscription.
    assert.deepEqual(
      failed.map((m) => m.lastError),
      ['receiver answered HTTP 410 Gone; subscription disabled'],
    );

    const other = basic('carol', 'carol-password');
    const del = await call(`${onPrem.base}/webhooks?id=${id}`, {
      method: 'DELETE',
      headers: { Authorization: other },
    });
    assert.equal(del.status, 200);
    const again = await call(`${onPrem.base}/webhooks?id=${id}`, {
      method: 'DELETE',
      headers: { Authorization: other },
    });
    assert.equal(again.status, 404);
    assert.equal(again.body['detail'], `no webhook ${id}`);
  });
});

describe('webhooks: the CLI', () => {
  let t: TestServer;
  let receiver: HttpPeer;

  before(async () => {
    receiver = await HttpPeer.start();
    t = await startTestServer({ env: { REMESSA_WEBHOOK_ALLOW_PRIVATE: 'true' }, startWorkers: false });
    await t.createUser('erin', 'erin-password');
  });
  after(async () => {
    await closeAll(t, receiver);
  });

  /** `node bin/remessa.js …` on the running server's data dir and settings. */
  const remessa = (args: string[], extra: Record<string, string> = {}) =>
    run(process.execPath, ['bin/remessa.js', ...args], { env: { ...t.env, ...extra } });

  test('add, list and remove a subscription; the server delivers to it', async () => {
    const added = await remessa([
      'webhook',
      'add',
      'erin',
      `${receiver.url}/erin`,
      '--events',
      'file.uploaded',
      '--json',
    ]);
    assert.equal(added.code, 0, added.stderr);
    const hook = JSON.parse(added.stdout) as { id: number; secret: string; user: string; events: string[] };
    assert.equal(hook.user, 'erin');
    assert.deepEqual(hook.events, ['file.uploaded']);

    await upload(t, basic('erin', 'erin-password'), 'cli.txt');
    await t.server.services.notify.deliverDue();
    assert.equal(receiver.requests.length, 1);
    assert.equal(eventOf(receiver.requests[0]!, hook.secret, t.clock.now()).type, 'file.uploaded');

    const list = await remessa(['webhook', 'list', 'erin']);
    assert.equal(list.code, 0);
    assert.match(
      list.stdout,
      new RegExp(
        `^ID +USER +URL +EVENTS +STATE\\n${hook.id} +erin +${receiver.url}/erin +file\\.uploaded +enabled\\n$`,
      ),
    );
    assert.ok(!list.stdout.includes(hook.secret));

    const refused = await remessa(['webhook', 'add', 'erin', 'http://10.0.0.1/hook'], {
      REMESSA_WEBHOOK_ALLOW_PRIVATE: 'false',
    });
    assert.equal(refused.code, 1);
    assert.equal(
      refused.stderr.trim(),
      'remessa: url: loopback, link-local and private addresses are refused (REMESSA_WEBHOOK_ALLOW_PRIVATE)',
    );

    const removed = await remessa(['webhook', 'remove', String(hook.id)]);
    assert.equal(removed.code, 0);
    assert.equal(removed.stdout, `removed webhook ${hook.id}\n`);
    assert.equal((await remessa(['webhook', 'list'])).stdout, 'no webhooks\n');
  });
});
