// Nothing lost, nothing half-written: size limit mid-stream, client abort, a
// full disk, kill -9 mid-upload, and damaged contents detected on download.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, open, readdir, rm, truncate, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  bytes,
  type FileEntry,
  finishedDownloads,
  footprint,
  uploadFile,
  uploadMultipart,
  uploadRaw,
} from './helpers/files.js';
import { eventually, MailSink } from './helpers/peers.js';
import {
  basic,
  call,
  closeWith,
  serverFor,
  startChildServer,
  startTestServer,
  type TestServer,
} from './helpers/server.js';

const MiB = 1024 * 1024;

/** Starts a raw streaming upload and returns the request, so a test can cut it off mid-way. */
/** A raw upload declaring `declared` bytes, whose body the caller writes (and may cut short). */
function streamingUpload(base: string, auth: string, file: string, declared = 64 * MiB) {
  const url = new URL(`${base}/upload?file=${encodeURIComponent(file)}`);
  const req = request(url, {
    method: 'POST',
    headers: {
      Authorization: auth,
      'Content-Type': 'application/octet-stream',
      'Content-Length': String(declared),
    },
  });
  req.on('error', () => {});
  return req;
}

async function blobPathOf(t: TestServer, fileId: number): Promise<string> {
  const row = await t.server.services.files.store.byId(fileId);
  return path.join(t.dataDir, 'blobs', row!.blob_key.slice(0, 2), row!.blob_key);
}

/** Writes `filler` until the disk it is on is full (ENOSPC). */
async function fillDisk(filler: string): Promise<void> {
  const fh = await open(filler, 'w');
  try {
    for (;;) await fh.write(Buffer.alloc(64 * 1024));
  } catch (err) {
    assert.equal((err as NodeJS.ErrnoException).code, 'ENOSPC');
  } finally {
    await fh.close().catch(() => {});
  }
}

describe('uploads that fail leave nothing behind', () => {
  let t: TestServer;
  const auth = basic('robust', 'robust-password');
  before(async () => {
    t = await startTestServer({ env: { REMESSA_MAX_FILE_SIZE: '1MiB' } });
    await t.createUser('robust', 'robust-password');
  });
  after(() => t.close());

  test('over the size limit, raw or multipart, mid-stream → 413; a good first part is removed too', async () => {
    const empty = { blobs: 0, temps: 0, files: 0, links: 0 };
    const raw = await uploadRaw(t, auth, bytes(3 * MiB), { file: 'big.bin' });
    assert.equal(raw.status, 413);
    assert.equal(raw.body['description'], 'Payload Too Large');
    assert.deepEqual(await footprint(t), empty);
    const multi = await uploadMultipart(t, auth, [{ filename: 'big.bin', data: bytes(3 * MiB) }]);
    assert.equal(multi.status, 413);
    assert.deepEqual(await footprint(t), empty);
    const mixed = await uploadMultipart(t, auth, [
      { filename: 'fine.bin', data: bytes(1000) },
      { filename: 'big.bin', data: bytes(2 * MiB) },
    ]);
    assert.equal(mixed.status, 413);
    assert.deepEqual(await footprint(t), empty);
    // Exactly at the limit is fine.
    const exact = await uploadRaw(t, auth, bytes(MiB), { file: 'exact.bin' });
    assert.equal(exact.status, 200);
    const events = await t.server.services.audit.query({ event: 'upload.failed' });
    assert.equal(events.length, 3);
  });

  test('a client that drops the connection mid-upload leaves no row, blob or temp file', async () => {
    const before = await footprint(t);
    // (Within the 1 MiB limit: a larger declared length is refused before a byte is read.)
    const req = streamingUpload(t.base, auth, 'dropped.bin', MiB);
    req.write(randomBytes(512 * 1024));
    await eventually(async () => (await footprint(t)).temps === 1);
    req.destroy();
    await eventually(async () => (await footprint(t)).temps === 0);
    assert.deepEqual(await footprint(t), before);
  });
});

describe('storage cleanup racing an upload', () => {
  test('a blob the reconciler removed before its row committed fails the upload with a 503; no row names a missing blob', async (ctx) => {
    const t = await serverFor(ctx, { env: { REMESSA_INLINE_MAX_SIZE: '0' } });
    await t.createUser('race', 'race-password');
    const B = 'race-boundary';
    const part = (name: string) =>
      Buffer.from(
        `--${B}\r\nContent-Disposition: form-data; name="${name}"; filename="${name}.bin"\r\n` +
          'Content-Type: application/octet-stream\r\n\r\n',
      );
    const first = Buffer.concat([part('first'), bytes(100 * 1024), Buffer.from('\r\n')]);
    const rest = Buffer.concat([part('second'), bytes(200 * 1024), Buffer.from(`\r\n--${B}--\r\n`)]);
    const req = request(new URL(`${t.base}/upload`), {
      method: 'POST',
      headers: {
        Authorization: basic('race', 'race-password'),
        'Content-Type': `multipart/form-data; boundary=${B}`,
        'Content-Length': String(first.length + rest.length),
      },
    });
    const answer = new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
      req.on('response', (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
      });
      req.on('error', reject);
    });
    // The first file whole and the second begun: the first one's blob is stored, its row not yet.
    req.write(Buffer.concat([first, rest.subarray(0, 1000)]));
    const { db, blobs, reconciler } = t.server.services;
    const stored = await eventually(async () => {
      for await (const o of blobs.list()) return o.key;
      return undefined;
    });
    // What the reconciler does to an intent it takes for a dead writer's (here: stale).
    await db.updateTable('blob_intents').set({ touched_at: 0 }).where('blob_key', '=', stored).execute();
    await reconciler.reconcile();
    assert.equal(await blobs.stat(stored), null);
    req.end(rest.subarray(1000));
    const r = await answer;
    assert.equal(r.status, 503);
    assert.match(String(r.body['description']), /Service Unavailable/);
    assert.deepEqual(await footprint(t), { blobs: 0, temps: 0, files: 0, links: 0 });
    const failed = await t.server.services.audit.query({ event: 'upload.failed' });
    assert.equal(failed.length, 1);
  });
});

describe('a full disk', () => {
  let mountPoint = '';
  let mounted = false;
  before(async () => {
    mountPoint = await mkdtemp(path.join(tmpdir(), 'remessa-full-'));
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=6m', 'tmpfs', mountPoint], { stdio: 'ignore' });
      mounted = true;
    } catch {
      mounted = false;
    }
  });
  after(async () => {
    if (mounted) execFileSync('umount', [mountPoint]);
    await rm(mountPoint, { recursive: true, force: true });
  });

  test('ENOSPC mid-upload → 503 with Retry-After, nothing stored, and the service keeps working', async (ctx) => {
    if (!mounted) {
      ctx.skip('cannot mount a small tmpfs here (needs root): full-disk test skipped');
      return;
    }
    const t = await serverFor(ctx, { dataDir: mountPoint });
    await t.createUser('full', 'full-password');
    const auth = basic('full', 'full-password');
    const r = await uploadRaw(t, auth, bytes(8 * MiB), { file: 'toobig.bin' });
    assert.equal(r.status, 503);
    assert.equal(r.body['description'], 'Service Unavailable');
    assert.equal(r.headers.get('retry-after'), '60');
    assert.deepEqual(await footprint(t), { blobs: 0, temps: 0, files: 0, links: 0 });
    // The same as a part of a multipart body (it was a 400 "malformed multipart body: ENOSPC",
    // which tells a client not to retry; found by a crash probe).
    const multi = await uploadMultipart(t, auth, [{ filename: 'toobig.bin', data: bytes(8 * MiB) }]);
    assert.equal(multi.status, 503);
    assert.equal(multi.headers.get('retry-after'), '60');
    assert.deepEqual(await footprint(t), { blobs: 0, temps: 0, files: 0, links: 0 });
    const ok = await uploadRaw(t, auth, bytes(1000), { file: 'small.bin' });
    assert.equal(ok.status, 200);
  });
  test('a full disk fails sign-ins cleanly: 503 with Retry-After, nothing half-done, and works again once space returns', async (ctx) => {
    if (!mounted) {
      ctx.skip('cannot mount a small tmpfs here (needs root): full-disk test skipped');
      return;
    }
    const dataDir = path.join(mountPoint, 'signins');
    const t = await serverFor(ctx, { dataDir });
    const filler = path.join(mountPoint, 'filler');
    closeWith(ctx, () => rm(filler, { force: true }));
    await t.createUser('fullsign', 'fullsign-password');
    // Fill what is left of the disk.
    await fillDisk(filler);
    const token = () =>
      call(`${t.base}/oauth2/token`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'password',
          username: 'fullsign',
          password: 'fullsign-password',
        }),
      });
    const login = () =>
      call(`${t.base}/auth/login`, {
        method: 'POST',
        headers: { Authorization: basic('fullsign', 'fullsign-password') },
      });
    // SQLite may still have room in pages it holds: the WAL is reused after each checkpoint (in
    // their own thread, which now fail). Use that up, then a few sign-ins use up the rest.
    for (let i = 0; i < 10_000; i++) {
      const wrote = await t.server.services.audit
        .record({ event: 'user.updated', detail: 'x'.repeat(100_000) })
        .then(() => true)
        .catch(() => false);
      if (!wrote) break;
    }
    const answers: number[] = [];
    for (let i = 0; i < 40 && !answers.includes(503); i++) answers.push((await login()).status);
    assert.ok(answers.includes(503), `no 503 in ${answers.join(',')}`);
    assert.ok(
      answers.every((s) => s === 200 || s === 503),
      answers.join(','),
    );
    const refused = await login();
    assert.equal(refused.status, 503);
    assert.equal(refused.body['description'], 'Service Unavailable');
    assert.equal(refused.headers.get('retry-after'), '60');
    const oauth = await token();
    assert.equal(oauth.status, 503);
    assert.equal(oauth.body['error'], 503);
    assert.equal(oauth.headers.get('retry-after'), '60');
    assert.ok(!t.logs.some((l) => /"level":50/.test(l) && l.includes('request failed')));
    await rm(filler);
    assert.equal((await login()).status, 200);
    assert.equal((await token()).status, 200);
  });
  test('a full disk refuses downloads whose audit row cannot be written: 503 with Retry-After and no byte; every one served is audited', async (ctx) => {
    if (!mounted) {
      ctx.skip('cannot mount a small tmpfs here (needs root): full-disk test skipped');
      return;
    }
    const dataDir = path.join(mountPoint, 'downloads');
    const t = await serverFor(ctx, { dataDir });
    const filler = path.join(mountPoint, 'filler-downloads');
    closeWith(ctx, () => rm(filler, { force: true }));
    await t.createUser('fulldl', 'fulldl-password');
    const data = bytes(4096);
    const up = await uploadRaw(t, basic('fulldl', 'fulldl-password'), data, { file: 'small.bin' });
    const link = (up.body['files'] as FileEntry[])[0]!.linkURL;
    await fillDisk(filler);
    // SQLite may still have room in pages it holds; a few downloads use it up.
    let served = 0;
    let refused: Awaited<ReturnType<typeof fetch>> | null = null;
    for (let i = 0; i < 200 && !refused; i++) {
      const res = await fetch(link);
      if (res.status === 200) {
        assert.ok(Buffer.from(await res.arrayBuffer()).equals(data));
        served++;
      } else refused = res;
    }
    assert.ok(refused, `no refusal in ${served} downloads`);
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get('retry-after'), '60');
    assert.match(refused.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(refused.headers.get('content-disposition'), null);
    const body = (await refused.json()) as Record<string, unknown>;
    assert.equal(body['description'], 'Service Unavailable');
    await rm(filler);
    // Every download that was served has its row (some may still say the outcome is unknown:
    // the disk filled between their first byte and their end).
    assert.equal((await t.server.services.audit.query({ event: 'download' })).length, served);
    const again = await fetch(link);
    assert.equal(again.status, 200);
    assert.ok(Buffer.from(await again.arrayBuffer()).equals(data));
    assert.ok(!t.logs.some((l) => /"level":50/.test(l)), 'nothing logged at error level');
  });
});

describe('a crash mid-upload', () => {
  test('kill -9 leaves a temp file; the next start removes it and nothing else', async (ctx) => {
    const child = await startChildServer({ user: { name: 'crash', password: 'crash-password' } });
    const { base, dataDir } = child;
    closeWith(ctx, child);
    await child.start();
    const req = streamingUpload(base, basic('crash', 'crash-password'), 'interrupted.bin');
    req.write(randomBytes(MiB));
    const tmp = path.join(dataDir, 'tmp');
    await eventually(async () => (await readdir(tmp)).length === 1);
    await child.kill();
    req.destroy();
    assert.equal((await readdir(tmp)).length, 1, 'the crash left a partial file');

    const t = await serverFor(ctx, { dataDir, env: { REMESSA_SECRET: child.env.REMESSA_SECRET! } });
    assert.deepEqual(await footprint(t), { blobs: 0, temps: 0, files: 0, links: 0 });
    assert.ok(t.logs.some((l) => l.includes('removed partial uploads')));
  });
});

describe('damaged contents are detected on download', () => {
  let t: TestServer;
  const auth = basic('integrity', 'integrity-password');
  before(async () => {
    // These damage blob files on disk, small ones too: nothing is kept in the database here
    // (contents in the database: files-in-database.test.ts).
    t = await startTestServer({ env: { REMESSA_INLINE_MAX_SIZE: '0' } });
    await t.createUser('integrity', 'integrity-password');
  });
  after(() => t.close());

  async function put(size: number, name: string): Promise<FileEntry> {
    const r = await uploadRaw(t, auth, bytes(size), { file: name });
    return (r.body['files'] as FileEntry[])[0]!;
  }

  test('contents changed on disk (same size) → 500 envelope and an audit row', async () => {
    const f = await put(100_000, 'changed.bin');
    const blob = await blobPathOf(t, f.id);
    await writeFile(blob, bytes(100_000));
    const r = await call(f.linkURL);
    assert.equal(r.status, 500);
    assert.equal(r.body['description'], 'Internal Server Error');
    const events = await t.server.services.audit.query({ event: 'file.corrupt' });
    assert.ok(events.some((e) => e.file_id === f.id && /SHA-256/.test(e.detail ?? '')));
  });

  test('a truncated or missing blob → 500 before any byte', async () => {
    const f = await put(50_000, 'short.bin');
    await truncate(await blobPathOf(t, f.id), 10);
    assert.equal((await call(f.linkURL)).status, 500);
    const g = await put(50_000, 'gone.bin');
    await rm(await blobPathOf(t, g.id));
    assert.equal((await call(g.linkURL)).status, 500);
  });

  test('a blob rewritten with the same bytes (restored from backup) is re-verified and served', async () => {
    const data = bytes(70_000);
    const f = await uploadFile(t, auth, 'restored.bin', data);
    const blob = await blobPathOf(t, f.id);
    await rm(blob);
    await writeFile(blob, data);
    const res = await fetch(f.linkURL);
    assert.equal(res.status, 200);
    assert.ok(Buffer.from(await res.arrayBuffer()).equals(data));
    const row = await t.server.services.files.store.byId(f.id);
    assert.equal(row!.blob_fingerprint, (await t.server.services.blobs.stat(row!.blob_key))!.fingerprint);
  });

  test('REMESSA_VERIFY_DOWNLOADS=always catches silent corruption: small → 500, large → broken transfer', async (ctx) => {
    const v = await serverFor(ctx, {
      env: { REMESSA_VERIFY_DOWNLOADS: 'always', REMESSA_INLINE_MAX_SIZE: '0' },
    });
    await v.createUser('integrity', 'integrity-password');
    const silently = async (size: number, name: string) => {
      const r = await uploadRaw(v, auth, bytes(size), { file: name });
      const f = (r.body['files'] as FileEntry[])[0]!;
      const row = (await v.server.services.files.store.byId(f.id))!;
      await writeFile(await blobPathOf(v, f.id), bytes(size));
      // Bit rot does not change the file's metadata: pretend the fingerprint still matches.
      await v.server.services.files.store.setFingerprint(
        f.id,
        (await v.server.services.blobs.stat(row.blob_key))!.fingerprint,
      );
      return f;
    };
    const small = await silently(10_000, 'small.bin');
    assert.equal((await call(small.linkURL)).status, 500);
    const large = await silently(20 * MiB, 'large.bin');
    const res = await fetch(large.linkURL);
    assert.equal(res.status, 200, 'headers went out before the damage was known');
    await assert.rejects(res.arrayBuffer(), 'the transfer is cut short, never completed with wrong bytes');
    await eventually(
      async () => (await v.server.services.audit.query({ event: 'file.corrupt' })).length === 2,
    );
  });
});

/**
 * Downloads `url` to the end while another connection holds SQLite's write lock, so the server's
 * bookkeeping after the response fails (SQLITE_BUSY after its 5 s busy timeout); then lets go, or
 * with `keepLocked` returns the way to let go.
 */
async function endDownloadWhileLocked(
  t: TestServer,
  url: URL,
  length: number,
  { keepLocked = false } = {},
): Promise<() => void> {
  const { default: SQLite } = await import('better-sqlite3');
  const failures = () => t.logs.filter((l) => l.includes('after the download: bookkeeping failed')).length;
  const failedBefore = failures();
  const sock = connect(Number(url.port), url.hostname, () =>
    sock.write(`GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`),
  );
  sock.on('error', () => {});
  // Everything the server sends, head and body, from the first chunk on.
  let received = 0;
  const firstBytes = new Promise((resolve) => sock.once('data', resolve));
  sock.on('data', (d: Buffer) => {
    received += d.length;
  });
  // The first bytes arrive (the audit row is committed), then the client stops reading.
  await firstBytes;
  sock.pause();
  const holder = new SQLite(path.join(t.dataDir, 'remessa.db'));
  const letGo = () => {
    if (!holder.open) return;
    if (holder.inTransaction) holder.exec('ROLLBACK');
    holder.close();
  };
  try {
    holder.exec('BEGIN IMMEDIATE');
    const closed = new Promise((resolve) => sock.once('close', resolve));
    sock.resume();
    await closed;
    assert.ok(received >= length, `${received} bytes`);
    await eventually(async () => failures() > failedBefore, 30_000);
  } catch (err) {
    letGo();
    throw err;
  }
  if (!keepLocked) letGo();
  return letGo;
}

describe('the database out of reach when a download ends', () => {
  test("the download's outcome, count and mailbox retirement are written once it is back", async (ctx) => {
    const t = await serverFor(ctx, { env: { REMESSA_RETIRE_ON_DOWNLOAD: 'true' }, startWorkers: false });
    await t.createUser('mbox', 'mbox-password');
    // More than the socket buffers hold, so the response waits for the client to read.
    const data = bytes(24 * MiB);
    const up = await uploadRaw(t, basic('mbox', 'mbox-password'), data, { file: 'late.bin' });
    const url = new URL((up.body['files'] as FileEntry[])[0]!.linkURL);
    await endDownloadWhileLocked(t, url, data.length);
    assert.equal((await finishedDownloads(t)).length, 0, 'no outcome yet');
    const waiting = t.server.workers.get('download-bookkeeping')!;
    await waiting.runOnce();
    const [row] = await finishedDownloads(t);
    assert.match(row!.detail!, /"bytes":25165824,"complete":true/);
    const links = await t.server.services.db.selectFrom('links').select('downloads').execute();
    assert.deepEqual(
      links.map((l) => l.downloads),
      [1],
    );
    // Mailbox mode: the complete download retired the file, as it would have at once.
    assert.equal((await call(url.href)).status, 401);
    // Nothing is left to try, and trying again changes nothing.
    await waiting.runOnce();
    assert.equal((await finishedDownloads(t)).length, 1);
  });

  test('bookkeeping still out of reach at shutdown is logged as given up', async () => {
    const t = await startTestServer({ startWorkers: false });
    let letGo = () => {};
    let closed = false;
    try {
      await t.createUser('late', 'late-password');
      const data = bytes(24 * MiB);
      const up = await uploadRaw(t, basic('late', 'late-password'), data, { file: 'late.bin' });
      const url = new URL((up.body['files'] as FileEntry[])[0]!.linkURL);
      letGo = await endDownloadWhileLocked(t, url, data.length, { keepLocked: true });
      // The last try at shutdown meets the same lock: the download's row stays "unknown", and the
      // log says so instead of dropping it silently.
      await t.close();
      closed = true;
      const line = t.logs.find((l) => l.includes('shutdown: downloads whose bookkeeping is given up'));
      assert.ok(line, 'the shutdown logs what it gave up');
      assert.match(line, /"left":(1|"unknown")/);
    } finally {
      letGo();
      if (!closed) await t.close();
    }
  });

  test('the sender hears of the first complete download once, though an earlier one is counted late (found by a review)', async (ctx) => {
    const mail = await MailSink.start();
    const t = await startTestServer({
      env: {
        REMESSA_SMTP_URL: mail.url,
        REMESSA_MAIL_FROM: 'Remessa <no-reply@remessa.test>',
        REMESSA_NOTIFY_SENDER: 'true',
        REMESSA_RECIPIENT_PIN: 'false',
      },
      startWorkers: false,
    });
    closeWith(ctx, t, mail);
    await t.createUser('sender', 'sender-password', { email: 'sender@example.com', lang: 'en' });
    const data = bytes(24 * MiB);
    const up = await uploadRaw(t, basic('sender', 'sender-password'), data, {
      file: 'twice.bin',
      m: 'ana@example.com',
    });
    assert.equal(up.status, 200);
    await t.server.services.notify.deliverDue();
    const link = /https?:\/\/\S+download\/file\?\S+/.exec(
      (await mail.take('ana@example.com')).text ?? '',
    )![0];
    // Download A ends while the database is locked: its count waits. Download B then completes
    // and is counted first: B is the link's first complete download, and A, counted later, is not.
    await endDownloadWhileLocked(t, new URL(link), data.length);
    const b = await call(link);
    assert.equal(b.status, 200);
    // B's bookkeeping, done, shows the database is back: A's is tried again without waiting for
    // the job's next pass.
    await eventually(async () => (await finishedDownloads(t)).length === 2);
    const counts = await t.server.services.db.selectFrom('links').select(['kind', 'downloads']).execute();
    assert.deepEqual(
      counts.filter((l) => l.kind === 'recipient').map((l) => l.downloads),
      [2],
    );
    const confirmations = await t.server.services.db
      .selectFrom('outbox')
      .select('id')
      .where('kind', '=', 'download-confirmation')
      .execute();
    assert.equal(confirmations.length, 1);
  });
});
