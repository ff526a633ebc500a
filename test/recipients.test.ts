// Recipients and secure links end to end: real HTTP, a real SMTP server
// (smtp-server + mailparser) and a real HTTP SMS webhook. Links and PINs are read from what the
// recipients actually receive.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ParsedMail } from 'mailparser';
import { type CapturedRequest, eventually, HttpPeer, MailSink } from './helpers/peers.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';
import {
  basic,
  call,
  closeAll,
  ERROR_KEYS,
  errorKeys,
  GO_TIME,
  startTestServer,
  type TestServer,
} from './helpers/server.js';

const LINK = /(https?:\/\/\S+\/download\/file\?lang=[a-z]{2}&k=[A-Za-z0-9_-]+)/;

function linkIn(text: string): string {
  const m = LINK.exec(text);
  assert.ok(m, `no download link in: ${text}`);
  return m[1]!;
}

function pinIn(text: string): string {
  const m = /\b(\d{6})\b/.exec(text);
  assert.ok(m, `no PIN in: ${text}`);
  return m[1]!;
}

const kOf = (url: string) => new URL(url).searchParams.get('k')!;

/** A wrong PIN that differs from `pin`. */
const wrong = (pin: string) => String((Number(pin) + 1) % 1_000_000).padStart(6, '0');

/** Files in the blob directory (nothing is left behind by a rejected upload). */
async function blobCount(dataDir: string): Promise<number> {
  const root = path.join(dataDir, 'blobs');
  let n = 0;
  const walk = async (dir: string): Promise<void> => {
    let entries: import('node:fs').Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.isDirectory()) await walk(path.join(dir, e.name));
      else n++;
    }
  };
  await walk(root);
  return n;
}

interface Sms {
  to: string;
  text: string;
}

function smsOf(req: CapturedRequest): Sms {
  return JSON.parse(req.body) as Sms;
}

describe('recipients and secure links', () => {
  let t: TestServer;
  let mail: MailSink;
  let sms: HttpPeer;
  const secrets: string[] = [];

  before(async () => {
    mail = await MailSink.start();
    sms = await HttpPeer.start();
    t = await startTestServer({
      env: {
        REMESSA_SMTP_URL: mail.url,
        REMESSA_MAIL_FROM: 'Remessa <no-reply@remessa.test>',
        REMESSA_SMS_PROVIDER: 'webhook',
        REMESSA_SMS_URL: `${sms.url}/sms`,
        REMESSA_NOTIFY_SENDER: 'true',
      },
    });
    await t.createUser('uploader', 'uploader-password', { email: 'uploader@example.com', lang: 'en' });
    await t.createUser('nomail', 'nomail-password', { email: '', lang: 'pt' });
  });
  after(async () => {
    await closeAll(t, mail, sms);
    // PINs and tokens never reach the log, whatever happened above.
    const logs = (t?.logs ?? []).join('\n');
    for (const s of secrets) assert.ok(!logs.includes(s), `secret leaked into the log: ${s}`);
  });

  const auth = { Authorization: basic('uploader', 'uploader-password') };

  async function upload(query: Record<string, string>, files: [string, Buffer][], who = auth) {
    const fd = new FormData();
    for (const [name, bytes] of files) fd.append('file', new Blob([new Uint8Array(bytes)]), name);
    const qs = new URLSearchParams(query).toString();
    return call(`${t.base}/upload?${qs}`, { method: 'POST', headers: who, body: fd });
  }

  /** The SMS sent to `to` after index `from` of the webhook's requests. */
  async function smsTo(to: string, from: number): Promise<Sms> {
    return eventually(async () =>
      sms.requests
        .slice(from)
        .map(smsOf)
        .find((s) => s.to === to),
    );
  }

  const pinFor = (k: string, extra = '') =>
    call(`${t.base}/download/pin?k=${encodeURIComponent(k)}${extra}`, { method: 'POST' });
  const download = (k: string, p?: string, headers: Record<string, string> = {}, method = 'GET') =>
    fetch(`${t.base}/download/file?k=${encodeURIComponent(k)}${p === undefined ? '' : `&p=${p}`}`, {
      method,
      headers,
    });
  /** Audit rows other than the outbox's own (deliveries happen in the background at any time). */
  const auditCount = async () =>
    (await t.server.services.audit.query({ limit: 100_000 })).filter((r) => !r.event.startsWith('notify.'))
      .length;
  const auditRows = (event: string) => t.server.services.audit.query({ event });
  const linkRow = async (k: string) => (await t.server.services.files.resolve(k, 'area')).link;

  test('upload with m, c and i: each recipient gets a link of their own; PIN by mail and SMS', async () => {
    const bytes = randomBytes(64 * 1024 + 17);
    const smsFrom = sms.requests.length;
    const started = Date.now();
    const up = await upload(
      { file: 'report.bin', m: 'ana@example.com', c: '+55 11 99999-0000', i: 'Segue o relatório.' },
      [['ignored.bin', bytes]],
    );
    assert.ok(Date.now() - started < 5000, 'the response does not wait for SMTP or SMS');
    assert.equal(up.status, 200, JSON.stringify(up.body));
    assert.equal(up.body['description'], 'handlerDownloadList:succsessfully');
    const [entry] = up.body['files'] as { id: number; linkURL: string; name: string }[];
    assert.equal(entry!.name, 'report.bin');
    const ownerK = kOf(entry!.linkURL);

    // E-mail to ana, in the uploader's language, with uploader, name, size, message, expiry, link.
    const m: ParsedMail = await mail.take('ana@example.com');
    assert.equal(m.subject, 'uploader sent you a file: report.bin');
    const text = m.text ?? '';
    assert.match(text, /File: report\.bin/);
    // Binary units, labelled as such; the time names its zone.
    assert.match(text, /Size: 64 KiB\n/);
    assert.match(text, /Segue o relatório\./);
    assert.match(text, /Available until: \d{1,2} \w+ \d{4} at \d{2}:\d{2} (UTC|GMT[+-][\d:]+|[A-Z]{3,5})\n/);
    assert.match(text, /asks for a code \(PIN\)/);
    const anaLink = linkIn(text);
    assert.ok(anaLink.startsWith(`${t.base}/download/file?lang=en&k=`));
    // SMS to the normalised mobile number.
    const s = await smsTo('+5511999990000', smsFrom);
    assert.match(s.text, /uploader sent you "report\.bin"/);
    const smsLink = linkIn(s.text);
    const anaK = kOf(anaLink);
    const smsK = kOf(smsLink);
    secrets.push(anaK, smsK, ownerK);
    assert.equal(new Set([anaK, smsK, ownerK]).size, 3, 'every recipient has their own token');

    const links = await auditRows('link.created');
    assert.equal(links.filter((r) => r.file_id === entry!.id).length, 2);

    // Without p: 403 envelope and no side effect at all (no audit row of any kind, no counter).
    const auditBefore = await auditCount();
    const noPin = await download(anaK);
    assert.equal(noPin.status, 403);
    const body = (await noPin.json()) as Record<string, unknown>;
    assert.deepEqual(errorKeys(body), ERROR_KEYS);
    assert.equal(body['description'], 'Forbidden');
    const head = await download(anaK, undefined, {}, 'HEAD');
    assert.equal(head.status, 403);
    assert.equal(await auditCount(), auditBefore);
    assert.equal((await linkRow(anaK)).downloads, 0);
    // The owner's link needs no PIN.
    const own = await download(ownerK);
    assert.equal(own.status, 200);
    assert.deepEqual(Buffer.from(await own.arrayBuffer()), bytes);

    // Ask for a PIN: it arrives by mail; the SMS recipient's arrives by SMS.
    const sent = await pinFor(anaK);
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    assert.equal(sent.body['description'], 'handlerDownloadList:succsessfully');
    assert.equal(sent.body['user'], 'uploader');
    assert.equal(sent.headers.get('cache-control'), 'no-store');
    const pinMail = await mail.take('ana@example.com');
    assert.equal(pinMail.subject, 'Remessa: code to download report.bin');
    const pin = pinIn(pinMail.text ?? '');
    secrets.push(pin);
    const smsPinFrom = sms.requests.length;
    assert.equal((await pinFor(smsK)).status, 200);
    const smsPin = pinIn((await smsTo('+5511999990000', smsPinFrom)).text);
    secrets.push(smsPin);
    const pinAudit = (await auditRows('pin.sent')).filter((r) => r.file_id === entry!.id);
    assert.equal(pinAudit.length, 2);
    for (const r of pinAudit) assert.ok(!r.detail?.includes(pin) && !r.detail?.includes(smsPin));

    // A second PIN within 60 s: 429 with Retry-After.
    const again = await pinFor(anaK);
    assert.equal(again.status, 429);
    assert.equal(again.body['description'], 'Too Many Requests');
    assert.ok(Number(again.headers.get('retry-after')) > 0);

    // Each PIN only opens its own link; a wrong PIN is 403 and audited.
    assert.equal((await download(anaK, smsPin === pin ? wrong(pin) : smsPin)).status, 403);
    assert.equal((await download(anaK, wrong(pin))).status, 403);
    const failed = (await auditRows('pin.failed')).filter((r) => r.file_id === entry!.id);
    assert.equal(failed.length, 2);
    assert.equal((await linkRow(anaK)).pin_failures, 2);
    for (const r of failed) assert.ok(!r.detail?.includes(pin));

    // HEAD with the right PIN: 200, no bytes, not a download, the PIN still good.
    const downloadsBefore = (await auditRows('download')).length;
    const headOk = await download(anaK, pin, {}, 'HEAD');
    assert.equal(headOk.status, 200);
    assert.equal(headOk.headers.get('content-length'), String(bytes.length));
    assert.equal((await headOk.arrayBuffer()).byteLength, 0);
    assert.equal((await download(anaK, wrong(pin), {}, 'HEAD')).status, 403);
    assert.equal((await auditRows('download')).length, downloadsBefore);
    assert.equal((await linkRow(anaK)).downloads, 0);

    // Right PIN: byte-identical download, audited with the recipient.
    const ok = await download(anaK, pin);
    assert.equal(ok.status, 200);
    assert.deepEqual(Buffer.from(await ok.arrayBuffer()), bytes);
    const dl = await eventually(async () => {
      const rows = await auditRows('download');
      return rows.length > downloadsBefore ? rows.at(-1) : undefined;
    });
    assert.equal(dl.user_name, 'ana@example.com');
    // The PIN stays valid for its lifetime: a resume with Range works with the same code.
    const part = await download(anaK, pin, { Range: `bytes=1000-` });
    assert.equal(part.status, 206);
    assert.deepEqual(Buffer.from(await part.arrayBuffer()), bytes.subarray(1000));
    // Sender confirmation (REMESSA_NOTIFY_SENDER=true): one per recipient link's first download.
    // Ana's is taken before the other download: it is queued once her download's outcome is
    // written, after the response, and under load that came after the next download's.
    const c1 = await mail.take('uploader@example.com');
    assert.equal(c1.subject, 'Remessa: ana@example.com downloaded report.bin');
    const smsOk = await download(smsK, smsPin);
    assert.deepEqual(Buffer.from(await smsOk.arrayBuffer()), bytes);
    const c2 = await mail.take('uploader@example.com');
    assert.equal(c2.subject, 'Remessa: +5511999990000 downloaded report.bin');
  });

  test('five wrong PINs lock the link 15 minutes; an expired PIN is refused', async () => {
    const up = await upload({ file: 'lock.txt', m: 'bea@example.com' }, [['x', Buffer.from('lock me')]]);
    assert.equal(up.status, 200);
    const [entry] = up.body['files'] as { id: number }[];
    const k = kOf(linkIn((await mail.take('bea@example.com')).text ?? ''));
    secrets.push(k);
    assert.equal((await pinFor(k)).status, 200);
    const pin = pinIn((await mail.take('bea@example.com')).text ?? '');
    secrets.push(pin);
    for (let i = 0; i < 5; i++) assert.equal((await download(k, wrong(pin))).status, 403);
    const locked = (await auditRows('link.locked')).filter((r) => r.file_id === entry!.id);
    assert.equal(locked.length, 1);
    // Locked: even the right PIN is refused, the info endpoint says 403, no new PIN.
    assert.equal((await download(k, pin)).status, 403);
    assert.equal((await call(`${t.base}/download/info?k=${k}`)).status, 403);
    assert.equal((await pinFor(k)).status, 403);

    // After the lock (15 minutes), a new PIN is needed (the old one died with the lock).
    await t.advanceClock(15 * 60 * 1000 + 1000);
    assert.equal((await download(k, pin)).status, 403);
    assert.equal((await pinFor(k)).status, 200);
    const fresh = pinIn((await mail.take('bea@example.com')).text ?? '');
    secrets.push(fresh);
    // Expired PIN (REMESSA_PIN_SECONDS, default 180 s).
    await t.advanceClock(181 * 1000);
    const expired = await download(k, fresh);
    assert.equal(expired.status, 403);
    const exp = (await auditRows('pin.failed')).at(-1);
    assert.match(exp?.detail ?? '', /PIN expired/);
    assert.equal((await pinFor(k)).status, 200);
    const last = pinIn((await mail.take('bea@example.com')).text ?? '');
    secrets.push(last);
    const ok = await download(k, last);
    assert.equal(ok.status, 200);
    assert.equal(await ok.text(), 'lock me');
  });

  test('GET /download/info: details without side effects; 400 / 401; owner links need no PIN', async () => {
    const up = await upload({ file: 'info.pdf', m: 'caio@example.com', i: 'Para você' }, [
      ['x', Buffer.from('%PDF-1.4 info')],
    ]);
    const [entry] = up.body['files'] as { linkURL: string; modified: number; expires: number }[];
    const k = kOf(linkIn((await mail.take('caio@example.com')).text ?? ''));
    secrets.push(k);
    const auditBefore = await auditCount();
    const info = await call(`${t.base}/download/info?k=${k}`);
    assert.equal(info.status, 200);
    assert.deepEqual(Object.keys(info.body), ['status', 'description', 'apiver', 'time', 'user', 'file']);
    assert.equal(info.body['description'], 'handlerDownloadList:succsessfully');
    assert.equal(info.body['user'], 'uploader');
    assert.match(String(info.body['time']), GO_TIME);
    assert.deepEqual(info.body['file'], {
      name: 'info.pdf',
      length: 13,
      modified: entry!.modified,
      sender: 'uploader',
      message: 'Para você',
      expires: entry!.expires,
      secure: true,
      lang: 'en',
    });
    assert.equal(info.headers.get('cache-control'), 'no-store');
    const owner = await call(`${t.base}/download/info?k=${kOf(entry!.linkURL)}`);
    assert.equal((owner.body['file'] as { secure: boolean }).secure, false);
    assert.equal(await auditCount(), auditBefore);

    const missing = await call(`${t.base}/download/info`);
    assert.equal(missing.status, 400);
    assert.deepEqual(errorKeys(missing.body), ERROR_KEYS);
    assert.equal((await call(`${t.base}/download/info?k=nope`)).status, 401);
    // The PIN endpoint: owner links need none (400), unknown 401, missing 400.
    assert.equal((await pinFor(kOf(entry!.linkURL))).status, 400);
    assert.equal((await pinFor('nope')).status, 401);
    assert.equal((await call(`${t.base}/download/pin`, { method: 'POST' })).status, 400);
    // `dl=1` (the portal's marker) is ignored by the download route.
    const dl = await fetch(`${entry!.linkURL}&dl=1`);
    assert.equal(dl.status, 200);
    assert.equal(await dl.text(), '%PDF-1.4 info');
    // A browser navigation without p gets the landing page, not the bytes.
    const page = await fetch(`${t.base}/download/file?lang=en&k=${k}`, { headers: { Accept: 'text/html' } });
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /text\/html/);
  });

  test('invalid m, c or too-long i: 400 before the body is read; nothing stored, nothing sent', async () => {
    const listBefore = await call(`${t.base}/download/list?page=1`, { headers: auth });
    const filesBefore = (listBefore.body['files'] as unknown[]).length;
    const blobsBefore = await blobCount(t.dataDir);
    const outboxBefore = (await t.server.services.notify.list({ limit: 100_000 })).length;
    const invalid: Record<string, string>[] = [
      { file: 'a.txt', m: 'not-an-address' },
      { file: 'a.txt', m: 'ok@example.com; broken@' },
      { file: 'a.txt', c: '12ab' },
      { file: 'a.txt', m: 'ok@example.com', c: '+55 11' },
      { file: 'a.txt', m: 'ok@example.com', i: 'x'.repeat(1001) },
      { file: 'a.txt', m: ' ; , ' },
    ];
    for (const query of invalid) {
      const r = await upload(query, [['a.txt', Buffer.from('never stored')]]);
      assert.equal(r.status, 400, JSON.stringify(query));
      assert.deepEqual(errorKeys(r.body), ERROR_KEYS);
      assert.equal(r.body['description'], 'Bad Request');
    }
    // The answer comes before the body: a client still sending (and never finishing) gets its 400.
    const early = await new Promise<number>((resolve, reject) => {
      const url = new URL(`${t.base}/upload?file=raw.bin&m=broken`);
      const req = httpRequest(url, {
        method: 'POST',
        headers: { ...auth, 'Content-Type': 'application/octet-stream', 'Transfer-Encoding': 'chunked' },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      req.on('error', reject);
      req.write(Buffer.alloc(1024, 1));
    });
    assert.equal(early, 400);
    const listAfter = await call(`${t.base}/download/list?page=1`, { headers: auth });
    assert.equal((listAfter.body['files'] as unknown[]).length, filesBefore);
    assert.equal(await blobCount(t.dataDir), blobsBefore);
    assert.equal((await t.server.services.notify.list({ limit: 100_000 })).length, outboxBefore);
    // Exactly 1000 characters is fine; several e-mails separated by , and ; each get a link.
    const ok = await upload(
      { file: 'b.txt', m: 'x1@example.com, X2@example.com;x3@example.com', i: 'é'.repeat(1000) },
      [['b.txt', Buffer.from('fine')]],
    );
    assert.equal(ok.status, 200);
    const ks = await Promise.all(
      ['x1@example.com', 'x2@example.com', 'x3@example.com'].map(async (a) =>
        kOf(linkIn((await mail.take(a)).text ?? '')),
      ),
    );
    secrets.push(...ks);
    assert.equal(new Set(ks).size, 3);
  });

  test('two files, one recipient: one link and one message per file', async () => {
    const up = await upload({ m: 'duo@example.com' }, [
      ['one.txt', Buffer.from('one')],
      ['two.txt', Buffer.from('two')],
    ]);
    assert.equal(up.status, 200);
    const got = [await mail.take('duo@example.com'), await mail.take('duo@example.com')];
    assert.deepEqual(got.map((m) => m.subject).sort(), [
      'uploader sent you a file: one.txt',
      'uploader sent you a file: two.txt',
    ]);
    secrets.push(...got.map((m) => kOf(linkIn(m.text ?? ''))));
  });

  test('an uploader without e-mail gets no confirmation; messages in the uploader language', async () => {
    const who = { Authorization: basic('nomail', 'nomail-password') };
    const up = await upload({ file: 'pt.txt', m: 'dora@example.com' }, [['x', Buffer.from('olá')]], who);
    assert.equal(up.status, 200);
    const m = await mail.take('dora@example.com');
    assert.equal(m.subject, 'nomail enviou um arquivo para você: pt.txt');
    const link = linkIn(m.text ?? '');
    assert.ok(link.includes('/download/file?lang=pt&k='));
    const k = kOf(link);
    secrets.push(k);
    assert.equal((await pinFor(k)).status, 200);
    const pin = pinIn((await mail.take('dora@example.com')).text ?? '');
    secrets.push(pin);
    assert.equal((await download(k, pin)).status, 200);
    const outbox = await t.server.services.notify.list({ limit: 100_000 });
    assert.ok(!outbox.some((o) => o.kind === 'download-confirmation' && o.userName === 'nomail'));
  });

  test('a recipient token is refused in the backup area', async () => {
    const up = await upload({ file: 'old.txt', m: 'eva@example.com' }, [['x', Buffer.from('old')]]);
    const [entry] = up.body['files'] as { id: number; linkURL: string }[];
    const k = kOf(linkIn((await mail.take('eva@example.com')).text ?? ''));
    secrets.push(k);
    const file = await t.server.services.files.store.byId(entry!.id);
    assert.ok(await t.server.services.files.retire(file!, 'test'));
    assert.equal((await call(`${t.base}/download/file/backup?z=${k}`)).status, 401);
    assert.equal((await call(`${t.base}/download/file/backup?z=${kOf(entry!.linkURL)}`)).status, 200);
    assert.equal((await pinFor(k)).status, 401);
  });
});

describe('REMESSA_RECIPIENT_PIN=false', () => {
  let t: TestServer;
  let mail: MailSink;
  before(async () => {
    mail = await MailSink.start();
    t = await startTestServer({ env: { REMESSA_SMTP_URL: mail.url, REMESSA_RECIPIENT_PIN: 'false' } });
    await t.createUser('sender', 'sender-password', { lang: 'es' });
  });
  after(async () => {
    await closeAll(t, mail);
  });

  test('a recipient link downloads directly; no PIN is offered', async () => {
    const fd = new FormData();
    fd.append('file', new Blob(['direct']), 'direct.txt');
    const up = await call(`${t.base}/upload?m=fer@example.com`, {
      method: 'POST',
      headers: { Authorization: basic('sender', 'sender-password') },
      body: fd,
    });
    assert.equal(up.status, 200);
    const m = await mail.take('fer@example.com');
    const text = m.text ?? '';
    assert.doesNotMatch(text, /PIN/);
    const k = kOf(linkIn(text));
    const res = await fetch(`${t.base}/download/file?k=${k}`);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'direct');
    const info = await call(`${t.base}/download/info?k=${k}`);
    assert.equal((info.body['file'] as { secure: boolean; lang: string }).secure, false);
    assert.equal((info.body['file'] as { lang: string }).lang, 'es');
    assert.equal((await call(`${t.base}/download/pin?k=${k}`, { method: 'POST' })).status, 400);
  });
});

const pgAvailable = await postgresAvailable();
if (!pgAvailable && PG_REQUIRED) throw new Error(PG_SKIP);

describe('secure links on PostgreSQL, two instances', { skip: pgAvailable ? false : PG_SKIP }, () => {
  let database: Awaited<ReturnType<typeof createTempDatabase>>;
  let mail: MailSink;
  let a: TestServer;
  let b: TestServer;

  before(async () => {
    database = await createTempDatabase();
    mail = await MailSink.start();
    const env = { REMESSA_DATABASE_URL: database.url, REMESSA_SMTP_URL: mail.url };
    a = await startTestServer({ env, startWorkers: false });
    // Same contents directory (and secret): the instances share storage as well as the database.
    b = await startTestServer({ env, startWorkers: false, dataDir: a.dataDir });
  });
  after(async () => {
    await closeAll(b, a, mail, () => database?.drop());
  });

  const deliver = async () => {
    await a.server.services.notify.deliverDue();
    await b.server.services.notify.deliverDue();
  };

  test('one PIN per minute across instances; wrong PINs on either instance add up to the lock', async () => {
    await a.createUser('pguser', 'pguser-password', { lang: 'en' });
    const fd = new FormData();
    fd.append('file', new Blob(['on postgres']), 'pg.txt');
    const up = await call(`${a.base}/upload?m=gil@example.com&i=pg`, {
      method: 'POST',
      headers: { Authorization: basic('pguser', 'pguser-password') },
      body: fd,
    });
    assert.equal(up.status, 200, JSON.stringify(up.body));
    await deliver();
    const k = kOf(linkIn((await mail.take('gil@example.com')).text ?? ''));

    // Two instances asked at once: exactly one PIN goes out.
    const asks = await Promise.all(
      [a, b].map((s) => call(`${s.base}/download/pin?k=${k}`, { method: 'POST' })),
    );
    assert.deepEqual(asks.map((r) => r.status).sort(), [200, 429]);
    await deliver();
    const pin = pinIn((await mail.take('gil@example.com')).text ?? '');
    assert.equal(await mail.take('gil@example.com', 500).catch(() => null), null, 'only one PIN mail');

    // The PIN checked on B downloads what A stored.
    const ok = await fetch(`${b.base}/download/file?k=${k}&p=${pin}`);
    assert.equal(ok.status, 200);
    assert.equal(await ok.text(), 'on postgres');

    // Wrong PINs alternate between the instances; the fifth locks the link for both.
    for (let i = 0; i < 5; i++) {
      const s = i % 2 === 0 ? a : b;
      assert.equal((await fetch(`${s.base}/download/file?k=${k}&p=${wrong(pin)}`)).status, 403);
    }
    assert.equal((await fetch(`${a.base}/download/file?k=${k}&p=${pin}`)).status, 403);
    assert.equal((await call(`${b.base}/download/info?k=${k}`)).status, 403);
    assert.equal((await a.server.services.audit.query({ event: 'link.locked' })).length, 1);
  });
});
