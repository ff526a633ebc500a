// Upload, download, lists and the area → backup → purge lifecycle over real HTTP.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import {
  bytes,
  type FileEntry,
  finishedDownloads,
  footprint,
  listArea,
  uploadFile,
  uploadMultipart,
  uploadRaw,
} from './helpers/files.js';
import { eventually } from './helpers/peers.js';
import {
  basic,
  call,
  ERROR_KEYS,
  errorKeys,
  GO_TIME,
  serverFor,
  startTestServer,
  type TestServer,
} from './helpers/server.js';

const DAY = 24 * 3600 * 1000;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function bearer(t: TestServer, name: string, password: string): Promise<string> {
  const r = await call(`${t.base}/oauth2/token`, {
    method: 'POST',
    headers: { Content_type: 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'password', username: name, password }).toString(),
  });
  return `Bearer ${String(r.body['access_token'])}`;
}

async function download(url: string, headers: Record<string, string> = {}, method = 'GET') {
  const res = await fetch(url, { headers, method });
  return { res, body: Buffer.from(await res.arrayBuffer()) };
}

describe('upload and download', () => {
  let t: TestServer;
  const alice = basic('alice', 'alice-password');
  before(async () => {
    t = await startTestServer();
    await t.createUser('alice', 'alice-password');
    await t.createUser('bob', 'bob-password', { lang: 'en' });
    const off = await t.createUser('offline', 'offline-password');
    await t.server.services.users.setEnabled(off.name, false);
  });
  after(() => t.close());

  test('a Bearer upload into another user’s area answers the Download list exactly', async () => {
    const data = bytes(200_000);
    const r = await uploadMultipart(
      t,
      await bearer(t, 'alice', 'alice-password'),
      [{ name: 'anything', filename: 'x.bin', data }],
      {
        file: 'relatório final.pdf',
        d: 'bob',
      },
    );
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(Object.keys(r.body), ['status', 'description', 'apiver', 'time', 'user', 'files']);
    assert.equal(r.body['status'], 0);
    assert.equal(r.body['description'], 'handlerDownloadList:succsessfully');
    assert.equal(r.body['user'], 'alice');
    assert.match(String(r.body['time']), GO_TIME);
    const [f] = r.body['files'] as FileEntry[];
    assert.deepEqual(Object.keys(f!), ['id', 'name', 'length', 'modified', 'linkURL', 'sha256', 'expires']);
    assert.equal(typeof f!.id, 'number');
    assert.equal(f!.name, 'relatório final.pdf');
    assert.equal(f!.length, data.length);
    assert.match(String(f!.modified), /^\d{13}$/);
    assert.equal(f!.sha256, sha(data));
    assert.equal(f!.expires, f!.modified + 7 * DAY);
    const escaped = t.base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    assert.match(f!.linkURL, new RegExp(`^${escaped}/download/file\\?lang=pt&k=[A-Za-z0-9_-]{43}$`));

    // bob sees it in his area, with the link in his language, and downloads it byte-identical.
    const listed = await listArea(t, 'bob', 'bob-password');
    const mine = listed.find((e) => e.id === f!.id)!;
    assert.equal(mine.name, 'relatório final.pdf');
    assert.equal(new URL(mine.linkURL).searchParams.get('k'), new URL(f!.linkURL).searchParams.get('k'));
    assert.equal(new URL(mine.linkURL).searchParams.get('lang'), 'en');
    assert.deepEqual(await listArea(t, 'alice', 'alice-password'), []);

    const { res, body } = await download(mine.linkURL);
    assert.equal(res.status, 200);
    assert.ok(body.equals(data));
    assert.equal(res.headers.get('content-type'), 'application/pdf');
    assert.equal(res.headers.get('content-length'), String(data.length));
    assert.equal(res.headers.get('etag'), `"${sha(data)}"`);
    assert.equal(res.headers.get('accept-ranges'), 'bytes');
    assert.equal(res.headers.get('last-modified'), new Date(f!.modified).toUTCString());
    assert.equal(
      res.headers.get('content-disposition'),
      `attachment; filename="relat_rio final.pdf"; filename*=UTF-8''relat%C3%B3rio%20final.pdf`,
    );
  });

  test('resume with Range: two halves make the file; unsatisfiable → 416; HEAD; conditional GET → 304', async () => {
    const data = bytes(300_001);
    const link = (await uploadFile(t, alice, 'resume.bin', data)).linkURL;

    const first = await download(link, { Range: 'bytes=0-99999' });
    assert.equal(first.res.status, 206);
    assert.equal(first.res.headers.get('content-range'), `bytes 0-99999/${data.length}`);
    assert.equal(first.res.headers.get('content-length'), '100000');
    const rest = await download(link, { Range: 'bytes=100000-' });
    assert.equal(rest.res.status, 206);
    assert.ok(Buffer.concat([first.body, rest.body]).equals(data));
    const suffix = await download(link, { Range: 'bytes=-10' });
    assert.ok(suffix.body.equals(data.subarray(-10)));

    const bad = await call(link, { headers: { Range: `bytes=${data.length}-` } });
    assert.equal(bad.status, 416);
    assert.equal(bad.headers.get('content-range'), `bytes */${data.length}`);
    assert.equal(bad.body['description'], 'Range Not Satisfiable');

    const head = await download(link, {}, 'HEAD');
    assert.equal(head.res.status, 200);
    assert.equal(head.res.headers.get('content-length'), String(data.length));
    assert.equal(head.body.length, 0);

    const etag = head.res.headers.get('etag')!;
    assert.equal((await download(link, { 'If-None-Match': etag })).res.status, 304);
    const lm = head.res.headers.get('last-modified')!;
    assert.equal((await download(link, { 'If-Modified-Since': lm })).res.status, 304);
    // A stale If-Range means "send it all".
    const ifRange = await download(link, { Range: 'bytes=0-9', 'If-Range': '"other"' });
    assert.equal(ifRange.res.status, 200);
    assert.equal(ifRange.body.length, data.length);
  });

  test('several parts in one request keep their own names; a name taken in the area gets " (1)", " (2)"', async () => {
    const a = bytes(1000);
    const b = bytes(2000);
    const r = await uploadMultipart(t, alice, [
      { filename: 'report.txt', data: a },
      { filename: 'report.txt', data: b },
      { filename: 'README', data: a },
    ]);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(
      (r.body['files'] as FileEntry[]).map((f) => [f.name, f.length]),
      [
        ['report.txt', 1000],
        ['report (1).txt', 2000],
        ['README', 1000],
      ],
    );
    const again = await uploadMultipart(t, alice, [{ filename: 'ignored.txt', data: a }], {
      file: 'report.txt',
    });
    assert.equal((again.body['files'] as FileEntry[])[0]!.name, 'report (2).txt');
    // Past the first names looked up one by one (16), the numbering goes on without a gap.
    const names: string[] = [];
    for (let i = 0; i < 18; i++) {
      const up = await uploadRaw(t, alice, bytes(10), { file: 'busy.csv' });
      names.push((up.body['files'] as FileEntry[])[0]!.name);
    }
    assert.deepEqual(names, ['busy.csv', ...Array.from({ length: 17 }, (_, i) => `busy (${i + 1}).csv`)]);
    // Windows-style full paths keep only the last part.
    const win = await uploadRaw(t, alice, a, { file: 'C:\\Users\\ana\\notes.txt' });
    assert.equal((win.body['files'] as FileEntry[])[0]!.name, 'notes.txt');
  });

  type Refusal = [string, () => Promise<{ status: number; body: Record<string, unknown> }>, number];
  const refused: Refusal[] = [
    ['no file name anywhere', () => uploadRaw(t, alice, bytes(10), {}), 400],
    [
      'a part without filename and no file query',
      () => uploadMultipart(t, alice, [{ data: bytes(10) }]),
      400,
    ],
    [
      'empty multipart',
      () =>
        call(`${t.base}/upload?file=a.txt`, {
          method: 'POST',
          headers: { Authorization: alice },
          body: new FormData(),
        }),
      400,
    ],
    ['path traversal', () => uploadRaw(t, alice, bytes(10), { file: '../../etc/passwd' }), 400],
    ['control characters', () => uploadRaw(t, alice, bytes(10), { file: 'bad\u0007name.txt' }), 400],
    ['bidi override', () => uploadRaw(t, alice, bytes(10), { file: 'invoice\u202Efdp.exe' }), 400],
    ['a dot name', () => uploadRaw(t, alice, bytes(10), { file: '..' }), 400],
    ...[
      'con',
      'NUL',
      'nul.txt',
      'Con.tar.gz',
      'aux',
      'PRN.pdf',
      'com1',
      'COM9.log',
      'lpt1.txt',
      'LPT²',
      'conin$',
      'con .txt',
      'nul.',
    ].map(
      (name): Refusal => [
        `reserved device name ${name}`,
        () => uploadRaw(t, alice, bytes(10), { file: name }),
        400,
      ],
    ),
    [
      'a reserved device name as a multipart filename',
      () => uploadMultipart(t, alice, [{ data: bytes(10), filename: 'NUL.txt' }]),
      400,
    ],
    ['a name over 255 bytes', () => uploadRaw(t, alice, bytes(10), { file: `${'é'.repeat(128)}.txt` }), 400],
    ['unknown destination user', () => uploadRaw(t, alice, bytes(10), { file: 'a.txt', d: 'nobody' }), 400],
    ['disabled destination user', () => uploadRaw(t, alice, bytes(10), { file: 'a.txt', d: 'offline' }), 400],
    [
      'a body that is neither multipart nor octet-stream',
      () =>
        call(`${t.base}/upload?file=a.txt`, {
          method: 'POST',
          headers: { Authorization: alice, 'Content-Type': 'application/json' },
          body: '{}',
        }),
      400,
    ],
    ['no credentials', () => call(`${t.base}/upload?file=a.txt`, { method: 'POST', body: 'x' }), 401],
    ['a wrong password', () => uploadRaw(t, basic('alice', 'nope-nope'), bytes(10), { file: 'a.txt' }), 401],
  ];
  for (const [name, attempt, status] of refused) {
    test(`upload refused (${name}) → ${status} envelope, nothing stored`, async () => {
      const before = await footprint(t);
      const r = await attempt();
      assert.equal(r.status, status, JSON.stringify(r.body));
      assert.deepEqual(errorKeys(r.body), ERROR_KEYS);
      assert.equal(r.body['status'], status);
      assert.deepEqual(await footprint(t), before);
    });
  }

  test('names that only start like a device name are kept', async () => {
    for (const name of [
      'console.txt',
      'nullable',
      'com10.txt',
      'CONTRACT.pdf',
      'aux-report.pdf',
      'lpt.txt',
      'my con.txt',
    ]) {
      const r = await uploadRaw(t, alice, bytes(10), { file: name });
      assert.equal(r.status, 200, name);
      assert.equal((r.body['files'] as { name: string }[])[0]!.name, name);
    }
  });

  test('download tokens: missing → 400, unknown → 401, wrong method → 405, all as envelopes', async () => {
    const missing = await call(`${t.base}/download/file`);
    assert.equal(missing.status, 400);
    assert.deepEqual(errorKeys(missing.body), ERROR_KEYS);
    const unknown = await call(`${t.base}/download/file?k=${'A'.repeat(43)}`);
    assert.equal(unknown.status, 401);
    assert.equal(unknown.body['description'], 'Unauthorized');
    const noZ = await call(`${t.base}/download/file/backup`);
    assert.equal(noZ.status, 400);
    const wrong = await call(`${t.base}/upload`);
    assert.equal(wrong.status, 405);
    assert.equal(wrong.body['description'], 'Method Not Allowed');
  });

  test('lists need a positive integer page and credentials', async () => {
    for (const page of ['', '?page=0', '?page=-1', '?page=abc', '?page=1.5']) {
      const r = await call(`${t.base}/download/list${page}`, { headers: { Authorization: alice } });
      assert.equal(r.status, 400, page);
      assert.deepEqual(errorKeys(r.body), ERROR_KEYS);
    }
    const anon = await call(`${t.base}/download/list?page=1`);
    assert.equal(anon.status, 401);
    const ok = await call(`${t.base}/download/list/backup?page=1`, {
      headers: { Authorization: await bearer(t, 'alice', 'alice-password') },
    });
    assert.equal(ok.status, 200);
    assert.deepEqual(Object.keys(ok.body), ['status', 'description', 'apiver', 'time', 'user', 'files']);
    assert.equal(ok.body['description'], 'handlerDownloadList:succsessfully');
  });

  test('uploads and downloads are audited with user, file, bytes and remote address', async () => {
    const events = await t.server.services.audit.query({});
    const up = events.find((e) => e.event === 'upload' && e.user_name === 'alice');
    assert.ok(up?.file_id);
    assert.equal(up.remote, '127.0.0.1');
    assert.match(up.detail ?? '', /"bytes":\d+/);
    const down = events.find((e) => e.event === 'download');
    assert.ok(down?.file_id);
    assert.match(down.detail ?? '', /"bytes":\d+/);
    assert.match(down.detail ?? '', /"link":\d+/);
    assert.ok(!t.logs.join('\n').includes('k=A'), 'download tokens are redacted in logs');
  });
});

describe('paging', () => {
  test('oldest first, 100 a page, empty past the end', async (ctx) => {
    const t = await serverFor(ctx);
    await t.createUser('pager', 'pager-password');
    const auth = basic('pager', 'pager-password');
    // Many parts a request keeps this quick; one request carries at most 100 files.
    const parts = Array.from({ length: 130 }, (_, i) => ({
      filename: `f${String(i).padStart(3, '0')}.txt`,
      data: Buffer.from(String(i)),
    }));
    const tooMany = await uploadMultipart(t, auth, [
      ...parts.slice(0, 100),
      { filename: 'x.txt', data: Buffer.from('x') },
    ]);
    assert.equal(tooMany.status, 413);
    assert.deepEqual(await footprint(t), { blobs: 0, temps: 0, files: 0, links: 0 });
    for (const chunk of [parts.slice(0, 100), parts.slice(100)]) {
      const r = await uploadMultipart(t, auth, chunk);
      assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 300));
    }
    const p1 = await listArea(t, 'pager', 'pager-password', 1);
    const p2 = await listArea(t, 'pager', 'pager-password', 2);
    const p3 = await listArea(t, 'pager', 'pager-password', 3);
    assert.equal(p1.length, 100);
    assert.equal(p2.length, 30);
    assert.deepEqual(p3, []);
    assert.equal(p1[0]!.name, 'f000.txt');
    assert.equal(p2[29]!.name, 'f129.txt');
  });
});

describe('lifecycle: area → backup → purge', () => {
  test('link validity ends: the sweeper retires to backup, the backup link works, then the file is purged', async (ctx) => {
    const t = await serverFor(ctx, {
      env: { REMESSA_LINK_DAYS: '2', REMESSA_BACKUP_DAYS: '3' },
      startWorkers: false,
    });
    await t.createUser('life', 'life-password');
    const data = bytes(5000);
    const up = await uploadRaw(t, basic('life', 'life-password'), data, { file: 'old.txt' });
    const entry = (up.body['files'] as FileEntry[])[0]!;
    const token = new URL(entry.linkURL).searchParams.get('k')!;
    const sweep = () => t.server.workers.get('file-sweeper')!.runOnce();

    await t.advanceClock(2 * DAY - 60_000);
    await sweep();
    assert.equal((await download(entry.linkURL)).res.status, 200, 'still inside its validity');

    await t.advanceClock(120_000);
    await sweep();
    assert.equal((await call(entry.linkURL)).status, 401, 'the area link is over');
    assert.deepEqual(await listArea(t, 'life', 'life-password'), []);
    const [backup] = await listArea(t, 'life', 'life-password', 1, true);
    assert.equal(backup!.id, entry.id);
    assert.match(backup!.linkURL, /\/download\/file\/backup\?lang=pt&z=/);
    assert.equal(new URL(backup!.linkURL).searchParams.get('z'), token, 'the same token serves the backup');
    const fromBackup = await download(backup!.linkURL);
    assert.equal(fromBackup.res.status, 200);
    assert.ok(fromBackup.body.equals(data));
    // The area name is free again.
    const again = await uploadRaw(t, basic('life', 'life-password'), data, { file: 'old.txt' });
    assert.equal((again.body['files'] as FileEntry[])[0]!.name, 'old.txt');

    await t.advanceClock(3 * DAY);
    await sweep();
    assert.equal((await call(backup!.linkURL)).status, 401, 'purged');
    // Only the re-upload is left (itself retired to backup by now).
    const left = await listArea(t, 'life', 'life-password', 1, true);
    assert.deepEqual(
      left.map((e) => e.id),
      [(again.body['files'] as FileEntry[])[0]!.id],
    );
    const fp = await footprint(t);
    assert.equal(fp.files, 1);
    assert.equal(fp.blobs, 1);
    const events = (await t.server.services.audit.query({})).map((e) => e.event);
    assert.ok(events.includes('file.retired'));
    assert.ok(events.includes('file.purged'));
  });

  test('REMESSA_BACKUP_DAYS=0 purges at once when the link ends', async (ctx) => {
    const t = await serverFor(ctx, {
      env: { REMESSA_LINK_DAYS: '1', REMESSA_BACKUP_DAYS: '0' },
      startWorkers: false,
    });
    await t.createUser('zero', 'zero-password');
    await uploadRaw(t, basic('zero', 'zero-password'), bytes(10), { file: 'a.txt' });
    await t.advanceClock(DAY + 1);
    await t.server.workers.get('file-sweeper')!.runOnce();
    assert.deepEqual(await footprint(t), { blobs: 0, temps: 0, files: 0, links: 0 });
  });

  test('mailbox mode: only a complete download retires the file; Range and HEAD do not', async (ctx) => {
    const t = await serverFor(ctx, { env: { REMESSA_RETIRE_ON_DOWNLOAD: 'true' } });
    await t.createUser('mbox', 'mbox-password');
    // Larger than what socket buffers on both ends can hold (loopback: up to 4 MiB sent, and a
    // receiver that does not read keeps a small window), so the aborted download below cannot
    // have been handed to the kernel whole before the client goes.
    const data = bytes(16 * 1024 * 1024);
    const up = await uploadRaw(t, basic('mbox', 'mbox-password'), data, { file: 'once.bin' });
    const link = (up.body['files'] as FileEntry[])[0]!.linkURL;
    assert.equal((await download(link, {}, 'HEAD')).res.status, 200);
    assert.equal((await download(link, { Range: 'bytes=0-1023' })).res.status, 206);
    // An aborted download: take the first bytes, then drop the connection. (A raw socket: fetch
    // would go on reading into its own buffers, as fast as the server sends.)
    const finished = (await finishedDownloads(t)).length;
    await new Promise<void>((resolve, reject) => {
      const url = new URL(link);
      const sock = connect(Number(url.port), url.hostname, () =>
        sock.write(`GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: x\r\n\r\n`),
      );
      sock.once('data', () => {
        sock.destroy();
        resolve();
      });
      sock.on('error', reject);
    });
    // Its outcome is recorded, and with it whether the file is retired.
    await eventually(async () => (await finishedDownloads(t)).length > finished);
    const still = await download(link);
    assert.equal(still.res.status, 200, 'aborted download did not retire it');
    assert.ok(still.body.equals(data));
    await eventually(async () => (await call(link)).status === 401);
    const [b] = await listArea(t, 'mbox', 'mbox-password', 1, true);
    assert.equal(b!.name, 'once.bin');
  });

  test('two instances sweeping the same database at once retire and purge each file exactly once', async (ctx) => {
    const a = await serverFor(ctx, {
      env: { REMESSA_LINK_DAYS: '1', REMESSA_BACKUP_DAYS: '1' },
      startWorkers: false,
    });
    const b = await serverFor(ctx, {
      dataDir: a.dataDir,
      env: { REMESSA_LINK_DAYS: '1', REMESSA_BACKUP_DAYS: '1' },
      startWorkers: false,
    });
    await a.createUser('multi', 'multi-password');
    const parts = Array.from({ length: 40 }, (_, i) => ({ filename: `m${i}.txt`, data: bytes(100) }));
    assert.equal((await uploadMultipart(a, basic('multi', 'multi-password'), parts)).status, 200);
    for (const s of [a, b]) await s.advanceClock(DAY + 1);
    await Promise.all([
      a.server.workers.get('file-sweeper')!.runOnce(),
      b.server.workers.get('file-sweeper')!.runOnce(),
    ]);
    for (const s of [a, b]) await s.advanceClock(DAY + 1);
    await Promise.all([
      a.server.workers.get('file-sweeper')!.runOnce(),
      b.server.workers.get('file-sweeper')!.runOnce(),
    ]);
    const events = await a.server.services.audit.query({});
    assert.equal(events.filter((e) => e.event === 'file.retired').length, 40);
    assert.equal(events.filter((e) => e.event === 'file.purged').length, 40);
    assert.deepEqual(await footprint(a), { blobs: 0, temps: 0, files: 0, links: 0 });
  });
});
