// Upload requests on PostgreSQL with two instances: tus creations racing on both under one request
// whose limits fit fewer than are tried (exactly as many succeed as fit, the rest are refused with
// the documented envelope and store nothing, the reserved counters equal what was accepted); a
// close on one instance holds on the other at once; the batch job running on both sends one message.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { blobFiles } from './helpers/files.js';
import { MailSink } from './helpers/peers.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';
import { makeRequest, requestUpload } from './helpers/requests.js';
import { basic, call, closeAll, startTestServer, type TestServer } from './helpers/server.js';

const available = await postgresAvailable();
if (!available && PG_REQUIRED) throw new Error(PG_SKIP);

const ANA = basic('ana', 'ana-password-1');

describe('upload requests on PostgreSQL, two instances', { skip: available ? false : PG_SKIP }, () => {
  let database: Awaited<ReturnType<typeof createTempDatabase>>;
  let mail: MailSink;
  let a: TestServer;
  let b: TestServer;

  before(async () => {
    database = await createTempDatabase();
    mail = await MailSink.start();
    const env = {
      REMESSA_DATABASE_URL: database.url,
      REMESSA_INLINE_MAX_SIZE: '0',
      REMESSA_SMTP_URL: mail.url,
    };
    a = await startTestServer({ env, startWorkers: false });
    b = await startTestServer({ env, startWorkers: false });
    await a.createUser('ana', 'ana-password-1', { email: 'ana@example.com', lang: 'en' });
  });
  after(async () => {
    await closeAll(a, b, mail, () => database?.drop());
  });

  const requestRow = (id: string) =>
    a.server.services.db
      .selectFrom('upload_requests')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
  const uploadsOf = async (id: string) =>
    (
      await a.server.services.db
        .selectFrom('request_uploads')
        .select('upload_id')
        .where('request_id', '=', id)
        .execute()
    ).length;

  /** Ten creations of `length` bytes (no body), alternating between the instances, all at once. */
  const race = (token: string, length: number) =>
    Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        requestUpload(i % 2 ? a : b, token, `r${i}.bin`, null, { length }),
      ),
    );

  test('maxFiles: exactly as many creations as fit, the rest 409, nothing stored for them', async () => {
    const made = await makeRequest(a, ANA, { title: 'Three files', maxFiles: 3, reusable: true });
    const blobs = (await blobFiles(a)).length;
    const results = await race(made.token, 100);
    const ok = results.filter((r) => r.status === 201);
    assert.equal(ok.length, 3, results.map((r) => `${r.status} ${r.detail ?? ''}`).join(','));
    for (const r of results.filter((x) => x.status !== 201)) {
      assert.equal(r.status, 409);
      assert.equal(r.detail, 'request full: it takes at most 3 files');
      assert.equal(r.location, null);
    }
    const row = await requestRow(made.id);
    assert.equal(row.reserved_files, 3);
    assert.equal(Number(row.reserved_bytes), 300);
    assert.equal(await uploadsOf(made.id), 3);
    assert.equal((await blobFiles(a)).length, blobs);
  });

  test('maxTotalBytes: exactly as many creations as fit, the rest 413, nothing stored for them', async () => {
    const made = await makeRequest(a, ANA, {
      title: 'A thousand bytes',
      maxFiles: 10,
      maxFileBytes: 400,
      maxTotalBytes: 1000,
      reusable: true,
    });
    const results = await race(made.token, 300);
    const ok = results.filter((r) => r.status === 201);
    assert.equal(ok.length, 3, results.map((r) => `${r.status} ${r.detail ?? ''}`).join(','));
    for (const r of results.filter((x) => x.status !== 201)) {
      assert.equal(r.status, 413);
      assert.equal(r.detail, 'request limit: 100 of 1000 bytes left');
    }
    const row = await requestRow(made.id);
    assert.equal(row.reserved_files, 3);
    assert.equal(Number(row.reserved_bytes), 900);
    assert.equal(await uploadsOf(made.id), 3);
    const page = await call(`${b.base}/requests/open?t=${made.token}`);
    assert.deepEqual((page.body['request'] as { left: unknown }).left, { files: 7, bytes: 100 });
  });

  test('a close on one instance: 410 on the other at once', async () => {
    const made = await makeRequest(a, ANA, { title: 'Closing', reusable: true });
    const started = await requestUpload(b, made.token, 'half.bin', null, { length: 10 });
    assert.equal(started.status, 201, started.detail);
    const closed = await call(`${a.base}/requests/${made.id}/close`, {
      method: 'POST',
      headers: { Authorization: ANA },
    });
    assert.equal(closed.status, 200);
    const page = await call(`${b.base}/requests/open?t=${made.token}`);
    assert.equal(page.status, 410);
    assert.equal(page.body['detail'], 'request closed');
    const late = await requestUpload(b, made.token, 'late.bin', Buffer.from('late'));
    assert.equal(late.status, 410);
    assert.equal(late.detail, 'request closed');
    const patch = await fetch(`${b.origin}${started.location}`, {
      method: 'PATCH',
      headers: {
        'Tus-Resumable': '1.0.0',
        'Upload-Offset': '0',
        'Content-Type': 'application/offset+octet-stream',
      },
      body: new Uint8Array(Buffer.alloc(10)),
    });
    assert.equal(patch.status, 410);
  });

  test('the batch job on both instances: one message for the batch', async () => {
    const made = await makeRequest(a, ANA, { title: 'Receipts', reusable: true });
    for (const [i, t] of [a, b, a].entries()) {
      const r = await requestUpload(t, made.token, `receipt-${i}.txt`, Buffer.from(`receipt ${i}`));
      assert.equal(r.status, 201, r.detail);
    }
    const messages = async () =>
      (
        await a.server.services.db
          .selectFrom('outbox')
          .select('recipient')
          .where('kind', '=', 'request-batch')
          .execute()
      ).length;
    const runBoth = () => Promise.all([a, b].map((t) => t.server.workers.get('request-batches')!.runOnce()));
    await runBoth();
    assert.equal(await messages(), 0, 'not quiet yet');
    await Promise.all([a.advanceClock(21_000), b.advanceClock(21_000)]);
    await runBoth();
    await runBoth();
    assert.equal(await messages(), 1);
    await Promise.all([a, b].map((t) => t.server.services.notify.deliverDue()));
    const m = await mail.take('ana@example.com');
    assert.match(m.subject ?? '', /3 file\(s\) arrived for Receipts/);
    assert.match(m.text ?? '', /- receipt-0\.txt\n- receipt-1\.txt\n- receipt-2\.txt/);
    assert.equal(mail.messages.filter((x) => JSON.stringify(x.to).includes('ana@example.com')).length, 0);
    const sealed = await a.server.services.db
      .selectFrom('request_batches')
      .select('sealed_at')
      .where('request_id', '=', made.id)
      .execute();
    assert.equal(sealed.length, 1);
    assert.notEqual(sealed[0]!.sealed_at, null);
  });
});
