// Resumable uploads (tus 1.0) over real HTTP, with the official tus-js-client.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CutProxy } from './helpers/cut-proxy.js';
import { bytes } from './helpers/files.js';
import { basic, call, startTestServer, type TestServer } from './helpers/server.js';
import { tusUpload, writeBigFile } from './helpers/tus.js';

const MiB = 1024 * 1024;
const TUS = { 'Tus-Resumable': '1.0.0' };
const b64 = (s: string) => Buffer.from(s).toString('base64');
const meta = (m: Record<string, string>) =>
  Object.entries(m)
    .map(([k, v]) => `${k} ${b64(v)}`)
    .join(',');
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function sha256Of(stream: AsyncIterable<Buffer>): Promise<string> {
  const h = createHash('sha256');
  for await (const c of stream) h.update(c);
  return h.digest('hex');
}

async function create(t: TestServer, auth: string, length: number, metadata: Record<string, string>) {
  return fetch(`${t.base}/uploads`, {
    method: 'POST',
    headers: {
      ...TUS,
      Authorization: auth,
      'Upload-Length': String(length),
      'Upload-Metadata': meta(metadata),
    },
  });
}

async function patch(
  url: string,
  auth: string,
  offset: number,
  body: Buffer,
  extra: Record<string, string> = {},
) {
  return fetch(url, {
    method: 'PATCH',
    headers: {
      ...TUS,
      Authorization: auth,
      'Upload-Offset': String(offset),
      'Content-Type': 'application/offset+octet-stream',
      ...extra,
    },
    body: new Uint8Array(body),
  });
}

async function counts(t: TestServer) {
  const { db } = t.server.services;
  const n = async (table: 'uploads' | 'upload_chunks' | 'files' | 'outbox') =>
    Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return {
    uploads: await n('uploads'),
    chunks: await n('upload_chunks'),
    files: await n('files'),
    outbox: await n('outbox'),
  };
}

async function blobCount(t: TestServer): Promise<number> {
  let n = 0;
  for await (const _ of t.server.services.blobs.list()) n++;
  return n;
}

describe('tus uploads', () => {
  let t: TestServer;
  let dir: string;
  const alice = basic('alice', 'alice-password');
  const bob = basic('bob', 'bob-password');
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'remessa-tus-'));
    t = await startTestServer({ env: { REMESSA_UPLOAD_MAX_OPEN: '4' }, startWorkers: false });
    await t.createUser('alice', 'alice-password');
    await t.createUser('bob', 'bob-password');
  });
  after(async () => {
    await t.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('OPTIONS advertises the protocol, its extensions and the size limit', async () => {
    const r = await fetch(`${t.base}/uploads`, { method: 'OPTIONS' });
    assert.equal(r.status, 204);
    assert.equal(r.headers.get('tus-resumable'), '1.0.0');
    assert.equal(r.headers.get('tus-version'), '1.0.0');
    assert.equal(
      r.headers.get('tus-extension'),
      'creation,creation-with-upload,termination,expiration,checksum',
    );
    assert.equal(r.headers.get('tus-max-size'), String(1024 ** 3));
    assert.equal(r.headers.get('tus-checksum-algorithm'), 'sha256');
  });

  test('a method an upload URL does not take: 405 with Allow, as for any route (was a 404)', async () => {
    for (const method of ['POST', 'PUT']) {
      const r = await fetch(`${t.base}/uploads/AnyIdAtAll`, { method });
      assert.equal(r.status, 405, method);
      assert.equal(r.headers.get('allow'), 'GET, HEAD, DELETE, PATCH');
      assert.equal(((await r.json()) as { status: number }).status, 405);
    }
    // A path that names nothing is still a 404, whatever the method.
    assert.equal((await fetch(`${t.base}/uploads/a/b`, { method: 'POST' })).status, 404);
  });

  test('creation refuses bad metadata, like POST /upload, before storing anything', async () => {
    const before = await counts(t);
    const cases: [Record<string, string>, number, string][] = [
      [{ filename: 'a.txt', m: 'not-an-email' }, 400, 'm'],
      [{ filename: 'a.txt', c: '12' }, 400, 'c'],
      [{ filename: 'a.txt', d: 'nobody' }, 400, 'd: no such user'],
      [{}, 400, 'file: no file name given'],
      [{ filename: '../x' }, 400, 'file name must not contain path parts'],
      [{ filename: 'a.txt', i: 'x'.repeat(1001) }, 400, 'i: longer than 1000 characters'],
    ];
    for (const [m, status, detail] of cases) {
      const r = await create(t, alice, 10, m);
      assert.equal(r.status, status, JSON.stringify(m));
      const body = (await r.json()) as Record<string, unknown>;
      assert.ok(String(body['detail']).startsWith(detail), `${JSON.stringify(m)}: ${String(body['detail'])}`);
      assert.equal(r.headers.get('tus-resumable'), '1.0.0');
    }
    assert.equal((await create(t, alice, 1024 ** 3 + 1, { filename: 'a' })).status, 413);
    const noVersion = await fetch(`${t.base}/uploads`, {
      method: 'POST',
      headers: { Authorization: alice, 'Upload-Length': '1' },
    });
    assert.equal(noVersion.status, 412);
    assert.equal(noVersion.headers.get('tus-version'), '1.0.0');
    const anonymous = await fetch(`${t.base}/uploads`, {
      method: 'POST',
      headers: { ...TUS, 'Upload-Length': '1' },
    });
    assert.equal(anonymous.status, 401);
    assert.deepEqual(await counts(t), before);
  });

  test('core protocol by hand: offsets, 409 on a wrong offset, checksum, another user gets 404, GET gives the file', async () => {
    const data = bytes(3 * MiB + 17);
    const r = await create(t, alice, data.length, { filename: 'by-hand.bin', i: 'olá' });
    assert.equal(r.status, 201);
    assert.match(r.headers.get('location')!, /^\/v1\/uploads\/[A-Za-z0-9_-]{24}$/);
    const url = t.origin + r.headers.get('location')!;
    assert.ok(r.headers.get('upload-expires'));

    let head = await fetch(url, { method: 'HEAD', headers: { ...TUS, Authorization: alice } });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('upload-offset'), '0');
    assert.equal(head.headers.get('upload-length'), String(data.length));
    assert.equal(head.headers.get('cache-control'), 'no-store');

    assert.equal((await fetch(url, { method: 'HEAD', headers: { ...TUS, Authorization: bob } })).status, 404);
    assert.equal((await patch(url, bob, 0, data.subarray(0, 10))).status, 404);

    let p = await patch(url, alice, 0, data.subarray(0, MiB));
    assert.equal(p.status, 204);
    assert.equal(p.headers.get('upload-offset'), String(MiB));
    p = await patch(url, alice, 0, data.subarray(0, 10));
    assert.equal(p.status, 409);
    const wrongSum = sha(Buffer.from('something else'));
    p = await patch(url, alice, MiB, data.subarray(MiB, 2 * MiB), {
      'Upload-Checksum': `sha256 ${Buffer.from(wrongSum, 'hex').toString('base64')}`,
    });
    assert.equal(p.status, 460);
    p = await patch(url, alice, MiB, data.subarray(MiB, 2 * MiB), { 'Upload-Checksum': 'md5 AAAA' });
    assert.equal(p.status, 400);
    p = await patch(url, alice, MiB, data.subarray(MiB, 2 * MiB), {
      'Upload-Checksum': `sha256 ${createHash('sha256')
        .update(data.subarray(MiB, 2 * MiB))
        .digest('base64')}`,
    });
    assert.equal(p.status, 204);
    assert.equal(p.headers.get('upload-offset'), String(2 * MiB));
    p = await fetch(url, {
      method: 'PATCH',
      headers: {
        ...TUS,
        Authorization: alice,
        'Upload-Offset': String(2 * MiB),
        'Content-Type': 'text/plain',
      },
      body: 'x',
    });
    assert.equal(p.status, 415);
    const early = await call(url, { headers: { Authorization: alice } });
    assert.equal(early.status, 409);

    p = await patch(url, alice, 2 * MiB, data.subarray(2 * MiB));
    assert.equal(p.status, 204);
    assert.equal(p.headers.get('upload-offset'), String(data.length));
    assert.equal(p.headers.get('upload-expires'), null);
    head = await fetch(url, { method: 'HEAD', headers: { ...TUS, Authorization: alice } });
    assert.equal(head.headers.get('upload-offset'), String(data.length));

    const g = await call(url, { headers: { Authorization: alice } });
    assert.equal(g.status, 200);
    assert.deepEqual(Object.keys(g.body), ['status', 'description', 'apiver', 'time', 'user', 'files']);
    assert.equal(g.body['description'], 'handlerDownloadList:succsessfully');
    const [entry] = g.body['files'] as Record<string, unknown>[];
    assert.equal(entry!['name'], 'by-hand.bin');
    assert.equal(entry!['length'], data.length);
    assert.equal(entry!['sha256'], sha(data));
    const dl = await fetch(String(entry!['linkURL']));
    assert.equal(dl.status, 200);
    assert.equal(sha(Buffer.from(await dl.arrayBuffer())), sha(data));
    assert.equal((await call(url, { headers: { Authorization: bob } })).status, 404);
    // Chunks are gone once the file is committed: only the file's blob is left of this upload.
    assert.equal((await counts(t)).chunks, 0);
  });

  test('creation-with-upload, termination, quota of open uploads, expiry and the sweeper', async () => {
    const blobsBefore = await blobCount(t);
    const data = bytes(100_000);
    const r = await fetch(`${t.base}/uploads`, {
      method: 'POST',
      headers: {
        ...TUS,
        Authorization: alice,
        'Upload-Length': String(data.length * 2),
        'Upload-Metadata': meta({ filename: 'half.bin' }),
        'Content-Type': 'application/offset+octet-stream',
      },
      body: new Uint8Array(data),
    });
    assert.equal(r.status, 201);
    assert.equal(r.headers.get('upload-offset'), String(data.length));
    const url = t.origin + r.headers.get('location')!;
    assert.equal(await blobCount(t), blobsBefore + 1);
    const del = await fetch(url, { method: 'DELETE', headers: { ...TUS, Authorization: alice } });
    assert.equal(del.status, 204);
    assert.equal(
      (await fetch(url, { method: 'HEAD', headers: { ...TUS, Authorization: alice } })).status,
      404,
    );
    assert.equal(await blobCount(t), blobsBefore);

    // Quota: REMESSA_UPLOAD_MAX_OPEN=4 for this server.
    const open: string[] = [];
    for (let i = 0; i < 4; i++) {
      const c = await create(t, bob, 10, { filename: `q${i}` });
      assert.equal(c.status, 201);
      open.push(t.origin + c.headers.get('location')!);
    }
    await patch(open[0]!, bob, 0, Buffer.from('12345'));
    const over = await create(t, bob, 10, { filename: 'q5' });
    assert.equal(over.status, 403);
    assert.match(
      String(((await over.json()) as Record<string, unknown>)['detail']),
      /at most 4 unfinished uploads/,
    );
    assert.equal((await create(t, alice, 10, { filename: 'other-user' })).status, 201);

    // A day later they have expired: 410, then the sweeper removes rows and bytes.
    await t.advanceClock(24 * 3600 * 1000 + 1000);
    assert.equal(
      (await fetch(open[0]!, { method: 'HEAD', headers: { ...TUS, Authorization: bob } })).status,
      410,
    );
    assert.equal((await create(t, bob, 10, { filename: 'fresh' })).status, 201);
    await t.server.workers.get('upload-sweeper')!.runOnce();
    assert.equal(
      (await fetch(open[0]!, { method: 'HEAD', headers: { ...TUS, Authorization: bob } })).status,
      404,
    );
    assert.equal(await blobCount(t), blobsBefore);
  });

  test('one-byte PATCHes: past 1,000 pieces only the PATCH that completes the upload is taken (found by a probe)', async () => {
    const data = bytes(1100);
    const r = await create(t, alice, data.length, { filename: 'crumbs.bin' });
    const url = t.origin + r.headers.get('location')!;
    for (let i = 0; i < 1000; i++)
      assert.equal((await patch(url, alice, i, data.subarray(i, i + 1))).status, 204);
    const refused = await patch(url, alice, 1000, data.subarray(1000, 1001));
    assert.equal(refused.status, 400);
    assert.equal((await counts(t)).chunks, 1000);
    const last = await patch(url, alice, 1000, data.subarray(1000));
    assert.equal(last.status, 204);
    assert.equal(last.headers.get('upload-offset'), String(data.length));
    const entry = (
      (await call(url, { headers: { Authorization: alice } })).body['files'] as Record<string, unknown>[]
    )[0]!;
    assert.equal(entry['sha256'], sha(data));
  });

  test('concurrent PATCHes to one upload: the second is refused (423 or 409), the bytes stay right', async () => {
    const data = bytes(8 * MiB);
    const url =
      t.origin + (await create(t, alice, data.length, { filename: 'race.bin' })).headers.get('location')!;
    const [a, b] = await Promise.all([patch(url, alice, 0, data), patch(url, alice, 0, data)]);
    const statuses = [a.status, b.status].sort();
    assert.equal(statuses[0], 204, String(statuses));
    assert.ok([409, 423].includes(statuses[1]!), String(statuses));
    const g = await call(url, { headers: { Authorization: alice } });
    assert.equal(g.status, 200);
    assert.equal((g.body['files'] as Record<string, unknown>[])[0]!['sha256'], sha(data));
  });

  test('tus-js-client: 300 MiB through a proxy that drops the connection every 50 MiB; recipients told once', async () => {
    const file = path.join(dir, 'big.bin');
    const digest = await writeBigFile(file, 300);
    const proxy = await CutProxy.start({
      target: { host: '127.0.0.1', port: Number(new URL(t.origin).port) },
      everyBytes: 50 * MiB,
    });
    try {
      const before = await counts(t);
      const url = await tusUpload(file, {
        endpoint: `${proxy.origin}/v1/uploads`,
        auth: alice,
        metadata: {
          filename: 'big.bin',
          filetype: 'application/octet-stream',
          m: 'carol@example.com',
          i: 'the big one',
        },
      });
      assert.ok(proxy.cuts >= 5, `only ${proxy.cuts} cuts`);
      const g = await call(url.replace(proxy.origin, t.origin), { headers: { Authorization: alice } });
      assert.equal(g.status, 200, JSON.stringify(g.body));
      const [entry] = g.body['files'] as Record<string, unknown>[];
      assert.equal(entry!['length'], 300 * MiB);
      assert.equal(entry!['sha256'], digest);
      assert.deepEqual(
        (entry!['recipients'] as Record<string, unknown>[]).map((x) => x['address']),
        ['c***@example.com'],
      );
      const dl = await fetch(String(entry!['linkURL']));
      assert.equal(dl.status, 200);
      assert.equal(await sha256Of(dl.body as unknown as AsyncIterable<Buffer>), digest);
      const outbox = await t.server.services.db
        .selectFrom('outbox')
        .select(['recipient', 'kind'])
        .where('file_id', '=', Number(entry!['id']))
        .where('channel', '=', 'email')
        .execute();
      assert.deepEqual(outbox, [{ recipient: 'carol@example.com', kind: 'file-link' }]);
      const after = await counts(t);
      assert.equal(after.files, before.files + 1);
      assert.equal(after.chunks, 0);
      const audit = await t.server.services.db
        .selectFrom('audit')
        .select('event')
        .where('file_id', '=', Number(entry!['id']))
        .where('event', '=', 'upload')
        .execute();
      assert.equal(audit.length, 1);
    } finally {
      await proxy.close();
      await rm(file, { force: true });
    }
  });

  test('resumes after a server restart (state in the database and the blob store)', async () => {
    const file = path.join(dir, 'restart.bin');
    const digest = await writeBigFile(file, 12);
    const first = await tusUpload(file, {
      endpoint: `${t.base}/uploads`,
      auth: alice,
      metadata: { filename: 'restart.bin' },
      chunkSize: 2 * MiB,
      stopAfter: 5 * MiB,
    });
    const id = first.split('/').pop()!;
    const dataDir = t.dataDir;
    await t.server.close();
    const t2 = await startTestServer({ dataDir, startWorkers: false });
    try {
      const resumed = await tusUpload(file, {
        uploadUrl: `${t2.base}/uploads/${id}`,
        auth: alice,
        chunkSize: 2 * MiB,
      });
      const g = await call(resumed, { headers: { Authorization: alice } });
      assert.equal(g.status, 200);
      assert.equal((g.body['files'] as Record<string, unknown>[])[0]!['sha256'], digest);
    } finally {
      await t2.close();
      await rm(dataDir, { recursive: true, force: true });
      // The suite's own server was closed above; a fresh one keeps `after` simple.
      t = await startTestServer({ startWorkers: false });
      await rm(file, { force: true });
    }
  });
});
