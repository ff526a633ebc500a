// Upload requests over HTTP: the requester makes, lists, shows and closes them; an outsider opens
// the page and sends files with tus and the request's token (and the PIN of an invited link); the
// files land in the area with their origin; limits are reserved at creation and refused before any
// byte is stored; a closed or expired request answers 410 "request closed"; the requester hears
// once per batch; the admin API lists and closes any.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { blobFiles, listArea, rowCount } from './helpers/files.js';
import { MailSink } from './helpers/peers.js';
import { makeRequest, patchUpload, requestUpload, tokenOf } from './helpers/requests.js';
import { basic, call, closeAll, startTestServer, type TestServer } from './helpers/server.js';

const ANA = basic('ana', 'ana-password-1');
const json = (auth: string, body?: unknown) => ({
  method: 'POST',
  headers: { Authorization: auth, 'Content-Type': 'application/json' },
  ...(body === undefined ? {} : { body: JSON.stringify(body) }),
});

describe('upload requests', { timeout: 120_000 }, () => {
  let t: TestServer;
  let mail: MailSink;

  before(async () => {
    mail = await MailSink.start();
    t = await startTestServer({
      env: { REMESSA_SMTP_URL: mail.url, REMESSA_INLINE_MAX_SIZE: '0' },
      startWorkers: false,
    });
    await t.createUser('ana', 'ana-password-1', { email: 'ana@example.com', lang: 'en' });
    await t.createUser('boss', 'boss-password-1', { role: 'admin' });
    await t.createUser('audrey', 'audrey-password-1', { role: 'auditor' });
    await t.createUser('carla', 'carla-password-1');
  });
  after(async () => {
    await closeAll(t, mail);
  });

  const batches = () => t.server.workers.get('request-batches')!.runOnce();
  const deliver = async () => {
    for (const channel of ['email', 'sms']) await t.server.workers.get(`outbox-${channel}`)?.runOnce();
  };

  test('create, list, show, close; the page; 410 afterwards', async () => {
    const made = await makeRequest(t, ANA, { title: 'Invoices', message: 'All of 2024', maxFiles: 3 });
    const req = made.body['request'] as Record<string, unknown>;
    assert.deepEqual(Object.keys(made.body).sort(), [
      'apiver',
      'description',
      'request',
      'status',
      'time',
      'user',
    ]);
    assert.equal(made.body['description'], 'handlerRequests:succsessfully');
    assert.equal(req['state'], 'open');
    assert.equal(req['reusable'], false);
    assert.equal(made.links.length, 1);
    assert.equal(made.links[0]!.to, null);
    assert.match(made.links[0]!.url, /\/request\?t=/);

    const page = await call(`${t.base}/requests/open?t=${made.token}`);
    assert.equal(page.status, 200);
    assert.ok(
      t.logs.some((l) => l.includes('/requests/open?t=[REDACTED]')),
      'the page is logged',
    );
    assert.ok(!t.logs.some((l) => l.includes(made.token)), 'its token is not');
    const p = page.body['request'] as Record<string, unknown>;
    assert.equal(p['title'], 'Invoices');
    assert.equal(p['requester'], 'ana');
    assert.equal(p['pin'], false);
    assert.deepEqual(p['left'], {
      files: 3,
      bytes: (req['limits'] as { maxTotalBytes: number }).maxTotalBytes,
    });

    const list = await call(`${t.base}/requests`, { headers: { Authorization: ANA } });
    assert.equal(list.status, 200);
    assert.equal((list.body['requests'] as { id: string }[])[0]!.id, made.id);
    const other = await call(`${t.base}/requests/${made.id}`, {
      headers: { Authorization: basic('carla', 'carla-password-1') },
    });
    assert.equal(other.status, 404);

    const closed = await call(`${t.base}/requests/${made.id}/close`, json(ANA));
    assert.equal(closed.status, 200);
    assert.equal((closed.body['request'] as Record<string, unknown>)['state'], 'closed');
    assert.equal((closed.body['request'] as Record<string, unknown>)['closedReason'], 'closed');
    const gone = await call(`${t.base}/requests/open?t=${made.token}`);
    assert.equal(gone.status, 410);
    assert.equal(gone.body['detail'], 'request closed');
    const before = await rowCount(t, 'uploads');
    const up = await requestUpload(t, made.token, 'late.pdf', Buffer.from('late'));
    assert.equal(up.status, 410);
    assert.equal(up.detail, 'request closed');
    assert.equal(await rowCount(t, 'uploads'), before);
    const events = (await t.server.services.audit.query({ event: 'request.' })).map((r) => r.event);
    assert.ok(
      events.includes('request.created') &&
        events.includes('request.closed') &&
        events.includes('request.completed'),
    );
  });

  test('validation: exact 400s, nothing created', async () => {
    const n = await rowCount(t, 'upload_requests');
    const cases: [unknown, string][] = [
      [{ title: '' }, 'title: 1 to 200 characters'],
      [{ title: 'x', emails: ['not-an-address'] }, 'emails: invalid e-mail address "not-an-address"'],
      [{ title: 'x', maxFiles: 0 }, 'maxFiles: a whole number from 1 to 10000'],
      [{ title: 'x', expires: 'tomorrow' }, 'expires: an ISO 8601 date or time'],
      [{ title: 'x', expires: '2001-01-01T00:00:00Z' }, 'expires: must be in the future'],
      [{ title: 'x', d: 'nobody-here' }, 'd: no such user'],
    ];
    for (const [body, detail] of cases) {
      const r = await call(`${t.base}/requests`, json(ANA, body));
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.body['detail'], detail);
    }
    const wrongType = await call(`${t.base}/requests`, json(ANA, { title: 'x', maxFiles: 'many' }));
    assert.equal(wrongType.status, 400);
    const anonymous = await call(`${t.base}/requests`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ title: 'x' }),
    });
    assert.equal(anonymous.status, 401);
    assert.equal(await rowCount(t, 'upload_requests'), n);
  });

  test('an open link: files land in the area with their origin; one message per batch; one use', async () => {
    const made = await makeRequest(t, ANA, { title: 'Photos', maxFiles: 5 });
    const a = await requestUpload(t, made.token, 'a.txt', Buffer.from('first file'));
    assert.equal(a.status, 201, a.detail);
    assert.equal(a.offset, '10');
    // In two PATCHes, with no credentials at all.
    const b = await requestUpload(t, made.token, 'b.txt', null, { length: 6 });
    assert.equal(b.status, 201, b.detail);
    assert.equal((await patchUpload(t, b.location!, 0, Buffer.from('bbb'))).status, 204);
    assert.equal((await patchUpload(t, b.location!, 3, Buffer.from('bbb'))).offset, '6');

    const files = await listArea(t, 'ana', 'ana-password-1');
    const mine = files.filter((f) => (f as { origin?: { request: string } }).origin?.request === made.id);
    assert.deepEqual(mine.map((f) => f.name).sort(), ['a.txt', 'b.txt']);
    assert.deepEqual((mine[0] as { origin?: unknown }).origin, { request: made.id, from: null });
    const show = await call(`${t.base}/requests/${made.id}`, { headers: { Authorization: ANA } });
    const shown = show.body['request'] as { files: { name: string; from: null }[]; received: unknown };
    assert.deepEqual(
      shown.files.map((f) => [f.name, f.from]),
      [
        ['a.txt', null],
        ['b.txt', null],
      ],
    );
    assert.deepEqual(shown.received, { files: 2, bytes: 16 });

    // Not yet quiet: no message; 20 s later one message naming both files; the request closes.
    assert.equal(await t.server.services.requestIntake.check('nothing'), false);
    await batches();
    await t.advanceClock(21_000);
    await batches();
    await deliver();
    const m = await mail.take('ana@example.com');
    assert.match(m.subject ?? '', /2 file\(s\) arrived for Photos/);
    assert.match(m.text ?? '', /- a\.txt\n- b\.txt/);
    await t.advanceClock(21_000);
    await batches();
    await deliver();
    const toAna = mail.messages.filter((x) => JSON.stringify(x.to).includes('ana@example.com'));
    assert.equal(toAna.length, 0, 'one message per batch');
    const after = await call(`${t.base}/requests/${made.id}`, { headers: { Authorization: ANA } });
    assert.equal((after.body['request'] as { closedReason: string }).closedReason, 'batch');
    const late = await requestUpload(t, made.token, 'c.txt', Buffer.from('c'));
    assert.equal(late.status, 410);
    assert.equal(late.detail, 'request closed');
  });

  test('limits: refused at creation before any byte or row is stored', async () => {
    const made = await makeRequest(t, ANA, {
      title: 'Small',
      maxFiles: 2,
      maxFileBytes: 100,
      maxTotalBytes: 150,
      reusable: true,
    });
    const uploads = await rowCount(t, 'uploads');
    const blobs = (await blobFiles(t)).length;
    const big = await requestUpload(t, made.token, 'big.bin', Buffer.alloc(101));
    assert.equal(big.status, 413);
    assert.equal(big.detail, "file larger than 100 bytes (this request's limit)");
    assert.equal((await requestUpload(t, made.token, 'one.bin', null, { length: 100 })).status, 201);
    const total = await requestUpload(t, made.token, 'two.bin', Buffer.alloc(51));
    assert.equal(total.status, 413);
    assert.equal(total.detail, 'request limit: 50 of 150 bytes left');
    assert.equal((await requestUpload(t, made.token, 'two.bin', null, { length: 50 })).status, 201);
    const third = await requestUpload(t, made.token, 'three.bin', Buffer.alloc(0));
    assert.equal(third.status, 409);
    assert.equal(third.detail, 'request full: it takes at most 2 files');
    assert.equal(await rowCount(t, 'uploads'), uploads + 2);
    assert.equal((await blobFiles(t)).length, blobs);
    // Full: even a small one is refused, and the page says nothing is left.
    const made2 = await requestUpload(t, made.token, 'again.bin', null, { length: 10 });
    assert.equal(made2.status, 409);
    const page = await call(`${t.base}/requests/open?t=${made.token}`);
    assert.deepEqual((page.body['request'] as { left: unknown }).left, { files: 0, bytes: 0 });
  });

  test('terminated and expired uploads release their reservation', async () => {
    const made = await makeRequest(t, ANA, { title: 'One', maxFiles: 1, reusable: true });
    const a = await requestUpload(t, made.token, 'a.bin', null, { length: 10 });
    assert.equal(a.status, 201);
    const del = await fetch(`${t.origin}${a.location}`, {
      method: 'DELETE',
      headers: { 'Tus-Resumable': '1.0.0' },
    });
    assert.equal(del.status, 204);
    const b = await requestUpload(t, made.token, 'b.bin', null, { length: 10 });
    assert.equal(b.status, 201, b.detail);
    await t.advanceClock(25 * 3600 * 1000);
    // The request is still open (default expiry 7 days); the upload expired and is swept.
    await t.server.workers.get('upload-sweeper')!.runOnce();
    const c = await requestUpload(t, made.token, 'c.bin', Buffer.from('c'));
    assert.equal(c.status, 201, c.detail);
  });

  test('an expired request: 410 everywhere, also mid-upload', async () => {
    const made = await makeRequest(t, ANA, {
      title: 'Soon over',
      expires: new Date(t.clock.now() + 3600_000).toISOString(),
    });
    const a = await requestUpload(t, made.token, 'a.bin', null, { length: 4 });
    assert.equal(a.status, 201);
    await t.advanceClock(3601_000);
    const patch = await patchUpload(t, a.location!, 0, Buffer.from('abcd'));
    assert.equal(patch.status, 410);
    assert.equal(patch.detail, 'request closed');
    assert.equal((await call(`${t.base}/requests/open?t=${made.token}`)).status, 410);
    const show = await call(`${t.base}/requests/${made.id}`, { headers: { Authorization: ANA } });
    assert.equal((show.body['request'] as { state: string }).state, 'expired');
  });

  test('unknown tokens and uploads without credentials', async () => {
    const bad = await call(`${t.base}/requests/open?t=nope`);
    assert.equal(bad.status, 401);
    assert.equal(bad.body['detail'], 'invalid request link');
    const missing = await call(`${t.base}/requests/open`);
    assert.equal(missing.status, 400);
    const up = await requestUpload(t, 'nope', 'x.bin', Buffer.from('x'));
    assert.equal(up.status, 401);
    // A plain tus creation without credentials is refused as before.
    const plain = await fetch(`${t.base}/uploads`, {
      method: 'POST',
      headers: { 'Tus-Resumable': '1.0.0', 'Upload-Length': '1' },
    });
    assert.equal(plain.status, 401);
    assert.ok(plain.headers.get('www-authenticate'));
  });

  test('invited addresses: a link each, the PIN gate, origin names the address', async () => {
    const made = await makeRequest(t, ANA, {
      title: 'Contract',
      emails: ['Bob@Example.com', 'cy@example.com'],
    });
    assert.deepEqual(
      made.links.map((l) => l.to),
      ['bob@example.com', 'cy@example.com'],
    );
    await deliver();
    const invite = await mail.take('bob@example.com');
    assert.match(invite.subject ?? '', /ana asks you for files: Contract/);
    const bobLink = made.links[0]!.url;
    assert.ok((invite.text ?? '').includes(bobLink));
    const token = tokenOf(bobLink);
    const page = await call(`${t.base}/requests/open?t=${token}`);
    assert.equal((page.body['request'] as { pin: boolean }).pin, true);

    const noPin = await requestUpload(t, token, 'c.pdf', Buffer.from('contract'));
    assert.equal(noPin.status, 403);
    assert.equal(noPin.detail, 'PIN required: ask for one with POST /requests/pin');
    const sent = await call(`${t.base}/requests/pin?t=${token}`, { method: 'POST' });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const again = await call(`${t.base}/requests/pin?t=${token}`, { method: 'POST' });
    assert.equal(again.status, 429);
    await deliver();
    const pinMail = await mail.take('bob@example.com');
    const pin = /\b(\d{6})\b/.exec(pinMail.text ?? '')![1]!;
    assert.ok(!t.logs.some((l) => l.includes(pin)), 'the PIN never reaches the log');
    const wrong = await requestUpload(t, token, 'c.pdf', Buffer.from('contract'), {
      pin: pin === '000000' ? '111111' : '000000',
    });
    assert.equal(wrong.status, 403);
    assert.equal(wrong.detail, 'wrong PIN');
    const ok = await requestUpload(t, token, 'c.pdf', Buffer.from('contract'), { pin });
    assert.equal(ok.status, 201, ok.detail);
    const files = await listArea(t, 'ana', 'ana-password-1');
    const got = files.find((f) => f.name === 'c.pdf') as { origin?: unknown } | undefined;
    assert.deepEqual(got?.origin, { request: made.id, from: 'bob@example.com' });
    const openLinkPin = await call(`${t.base}/requests/pin?t=${made.token}x`, { method: 'POST' });
    assert.equal(openLinkPin.status, 401);
  });

  test('admin API: auditors list, admins close any', async () => {
    const made = await makeRequest(t, ANA, { title: 'For the admin' });
    const list = await call(`${t.base}/admin/requests`, {
      headers: { Authorization: basic('audrey', 'audrey-password-1') },
    });
    assert.equal(list.status, 200);
    assert.ok((list.body['requests'] as { id: string }[]).some((r) => r.id === made.id));
    const byAuditor = await call(
      `${t.base}/admin/requests/${made.id}/close`,
      json(basic('audrey', 'audrey-password-1')),
    );
    assert.equal(byAuditor.status, 403);
    const byUser = await call(`${t.base}/admin/requests`, {
      headers: { Authorization: basic('carla', 'carla-password-1') },
    });
    assert.equal(byUser.status, 403);
    const closed = await call(
      `${t.base}/admin/requests/${made.id}/close`,
      json(basic('boss', 'boss-password-1')),
    );
    assert.equal(closed.status, 200);
    assert.equal((closed.body['request'] as { closedReason: string }).closedReason, 'admin');
    const rows = await t.server.services.audit.query({ event: 'request.closed' });
    assert.ok(rows.some((r) => r.actor === 'boss'));
    assert.equal((await call(`${t.base}/requests/open?t=${made.token}`)).status, 410);
  });
});
