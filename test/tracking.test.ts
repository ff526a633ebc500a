// Delivery tracking over HTTP: the sender sees each recipient go from pending to sent
// to downloaded, a failed message with its reason, and resends it; real SMTP and SMS peers.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eventually, HttpPeer, MailSink } from './helpers/peers.js';
import {
  basic,
  call,
  closeAll,
  ERROR_KEYS,
  errorKeys,
  startTestServer,
  type TestServer,
} from './helpers/server.js';

const RECIPIENT_KEYS = [
  'address',
  'attempts',
  'channel',
  'completeDownloads',
  'downloads',
  'expires',
  'id',
  'lastAttempt',
  'maxDownloads',
  'reason',
  'revoked',
  'status',
];
const DOWNLOAD_KEYS = ['complete', 'count', 'first', 'last'];

interface Recipient {
  id: number;
  address: string;
  channel: string;
  status: string;
  reason: string | null;
  attempts: number;
  lastAttempt: number | null;
  downloads: { count: number; complete: boolean; first: number | null; last: number | null };
}

describe('delivery tracking', () => {
  let t: TestServer;
  let mail: MailSink;
  let sms: HttpPeer;
  let ownerK = '';
  let fileId = 0;

  before(async () => {
    mail = await MailSink.start();
    sms = await HttpPeer.start();
    sms.status = 503;
    t = await startTestServer({
      env: {
        REMESSA_SMTP_URL: mail.url,
        REMESSA_SMS_PROVIDER: 'webhook',
        REMESSA_SMS_URL: `${sms.url}/sms`,
        REMESSA_NOTIFY_MAX_ATTEMPTS: '1',
        REMESSA_RECIPIENT_PIN: 'false',
      },
      startWorkers: false,
    });
    await t.createUser('alice', 'alice-password', { lang: 'en' });
  });
  after(async () => {
    await closeAll(t, mail, sms);
  });

  const alice = basic('alice', 'alice-password');
  const drain = () => t.server.services.notify.deliverDue();
  const status = async () => {
    const r = await call(`${t.base}/download/status?k=${ownerK}`);
    assert.equal(r.status, 200);
    return r.body['recipients'] as Recipient[];
  };

  test('the upload response shows every recipient pending', async () => {
    const fd = new FormData();
    fd.append('file', new Blob([new Uint8Array(Buffer.alloc(5000, 1))]), 'invoice.xml');
    const r = await call(`${t.base}/upload?m=Bob@Example.com&c=%2B5511999990000`, {
      method: 'POST',
      headers: { Authorization: alice },
      body: fd,
    });
    assert.equal(r.status, 200);
    const entry = (r.body['files'] as Record<string, unknown>[])[0]!;
    assert.deepEqual(Object.keys(entry), [
      'id',
      'name',
      'length',
      'modified',
      'linkURL',
      'sha256',
      'expires',
      'recipients',
    ]);
    fileId = entry['id'] as number;
    ownerK = new URL(String(entry['linkURL'])).searchParams.get('k')!;
    const recipients = entry['recipients'] as Recipient[];
    for (const rc of recipients) {
      assert.deepEqual(Object.keys(rc).sort(), RECIPIENT_KEYS);
      assert.deepEqual(Object.keys(rc.downloads).sort(), DOWNLOAD_KEYS);
    }
    assert.deepEqual(
      recipients.map(({ id: _, ...rc }) => rc),
      [
        {
          address: 'b***@example.com',
          channel: 'email',
          status: 'pending',
          reason: null,
          attempts: 0,
          lastAttempt: null,
          downloads: { count: 0, complete: false, first: null, last: null },
          revoked: false,
          expires: null,
          maxDownloads: null,
          completeDownloads: 0,
        },
        {
          address: '+55*******0000',
          channel: 'sms',
          status: 'pending',
          reason: null,
          attempts: 0,
          lastAttempt: null,
          downloads: { count: 0, complete: false, first: null, last: null },
          revoked: false,
          expires: null,
          maxDownloads: null,
          completeDownloads: 0,
        },
      ],
    );
    // A file nobody was told about carries no `recipients` key.
    const plain = new FormData();
    plain.append('file', new Blob([new Uint8Array(Buffer.alloc(10, 2))]), 'plain.txt');
    const p = await call(`${t.base}/upload`, {
      method: 'POST',
      headers: { Authorization: alice },
      body: plain,
    });
    assert.ok(!('recipients' in (p.body['files'] as Record<string, unknown>[])[0]!));
  });

  test('sent, failed with its reason, then downloaded; in the status endpoint and the lists', async () => {
    await drain();
    const bobMail = await mail.take('bob@example.com');
    let [bob, phone] = await status();
    assert.equal(bob!.status, 'sent');
    assert.equal(bob!.attempts, 1);
    assert.equal(typeof bob!.lastAttempt, 'number');
    assert.equal(phone!.status, 'failed');
    assert.equal(phone!.reason, 'SMS webhook answered HTTP 503');
    assert.equal(phone!.attempts, 1);

    const link = /(https?:\/\/\S+\/download\/file\?lang=en&k=[A-Za-z0-9_-]+)/.exec(bobMail.text ?? '')![1]!;
    const part = await fetch(link, { headers: { Range: 'bytes=0-9' } });
    assert.equal(part.status, 206);
    await part.arrayBuffer();
    const whole = await fetch(link);
    assert.equal(whole.status, 200);
    await whole.arrayBuffer();
    [bob, phone] = await eventually(async () => {
      const list = await status();
      return list[0]!.downloads.count === 2 ? list : undefined;
    });
    assert.equal(bob!.downloads.complete, true);
    assert.ok(bob!.downloads.first! <= bob!.downloads.last!);
    assert.deepEqual(phone!.downloads, { count: 0, complete: false, first: null, last: null });

    const r = await call(`${t.base}/download/status?k=${ownerK}`);
    assert.deepEqual(Object.keys(r.body), [
      'status',
      'description',
      'apiver',
      'time',
      'user',
      'id',
      'name',
      'recipients',
    ]);
    assert.equal(r.body['user'], 'alice');
    assert.equal(r.body['id'], fileId);
    assert.equal(r.body['name'], 'invoice.xml');
    assert.equal(r.headers.get('cache-control'), 'no-store');

    const list = await call(`${t.base}/download/list?page=1`, { headers: { Authorization: alice } });
    const entry = (list.body['files'] as { id: number; recipients?: Recipient[] }[]).find(
      (f) => f.id === fileId,
    )!;
    assert.deepEqual(entry.recipients, [bob, phone]);
  });

  test('the failed message is resent and goes out; resend is limited', async () => {
    sms.status = 201;
    const phoneId = (await status())[1]!.id;
    const r = await call(`${t.base}/download/resend?k=${ownerK}&to=%2B55%2011%2099999-0000`, {
      method: 'POST',
    });
    assert.equal(r.status, 200);
    assert.equal((r.body['recipients'] as Recipient[])[1]!.status, 'pending');
    // Still on its way: a second resend is a conflict, not a second message.
    const busy = await call(`${t.base}/download/resend?k=${ownerK}&to=${phoneId}`, { method: 'POST' });
    assert.equal(busy.status, 409);
    assert.equal(busy.body['detail'], 'the message is still being sent');
    await drain();
    const text = (JSON.parse(sms.requests.at(-1)!.body) as { to: string; text: string }).text;
    assert.match(text, /invoice\.xml/);
    assert.match(text, /\/download\/file\?lang=en&k=[A-Za-z0-9_-]{43}/);
    const phone = (await status())[1]!;
    assert.equal(phone.status, 'sent');
    assert.equal(phone.reason, null);

    const soon = await call(`${t.base}/download/resend?k=${ownerK}&to=${phoneId}`, { method: 'POST' });
    assert.equal(soon.status, 429);
    assert.deepEqual(errorKeys(soon.body), ERROR_KEYS);
    assert.match(String(soon.body['detail']), /^sent less than 60s ago; retry in \d+s$/);
    assert.match(soon.headers.get('retry-after') ?? '', /^\d+$/);
    await t.advanceClock(61_000);
    const later = await call(`${t.base}/download/resend?k=${ownerK}&to=${phoneId}`, { method: 'POST' });
    assert.equal(later.status, 200);
    await drain();

    const audit = await t.server.services.audit.query({ event: 'link.resent' });
    assert.equal(audit.length, 2);
    assert.ok(!audit.some((a) => a.detail?.includes(ownerK)));
  });

  test('hostile or wrong requests get a clear 4xx', async () => {
    const recipientK = (await t.server.services.db
      .selectFrom('links')
      .select('token_sealed')
      .where('file_id', '=', fileId)
      .where('kind', '=', 'recipient')
      .executeTakeFirstOrThrow()) as { token_sealed: string };
    const k = t.server.services.keys.unseal(recipientK.token_sealed);
    const cases: [string, string, number, string][] = [
      ['GET', '/download/status', 401, 'invalid or expired download link'],
      ['GET', `/download/status?k=${'x'.repeat(43)}`, 401, 'invalid or expired download link'],
      ['GET', `/download/status?k=${k}`, 403, "only the owner's link shows delivery status"],
      [
        'POST',
        `/download/resend?k=${k}&to=bob@example.com`,
        403,
        "only the owner's link shows delivery status",
      ],
      ['POST', `/download/resend?k=${ownerK}`, 400, 'to: recipient required'],
      ['POST', `/download/resend?k=${ownerK}&to=carol@example.com`, 404, 'to: not a recipient of this file'],
      ['POST', `/download/resend?k=${ownerK}&to=999999`, 404, 'to: not a recipient of this file'],
    ];
    for (const [method, path, code, detail] of cases) {
      const r = await call(`${t.base}${path}`, { method });
      assert.equal(r.status, code, path);
      assert.deepEqual(errorKeys(r.body), ERROR_KEYS);
      assert.equal(r.body['detail'], detail, path);
    }
    const long = await call(`${t.base}/download/status?k=${'x'.repeat(600)}`);
    assert.equal(long.status, 400);
  });
});
