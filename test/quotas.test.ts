// Quotas (docs/quotas.md): an upload past the area's quota is refused before its bytes are stored,
// whatever way it comes (a raw body of known length, multipart, chunked, tus); usage is counted
// with every file row added or removed, and `remessa storage check` recomputes it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { admin, adminSetup, PASSWORDS, snapshot } from './helpers/admin.js';
import { remessa } from './helpers/cli.js';
import { bytes, type FileEntry, footprint, uploadFile, uploadMultipart, uploadRaw } from './helpers/files.js';
import { deleteFile } from './helpers/links.js';
import {
  ownerToken,
  QUOTA_EXCEEDED,
  storageCheck,
  tusCreate,
  tusPatch,
  uploadChunked,
  usageOf,
} from './helpers/quotas.js';
import { basic, call, serverFor } from './helpers/server.js';

const ALICE = basic('alice', 'alice-password-1');
const DAY = 24 * 3600 * 1000;

async function quotaServer(ctx: Parameters<typeof serverFor>[0], env: Record<string, string> = {}) {
  const t = await serverFor(ctx, { env: { REMESSA_QUOTA_DEFAULT: '10000', ...env }, startWorkers: false });
  await t.createUser('alice', 'alice-password-1');
  return t;
}

function refused(r: { status: number; body: Record<string, unknown> }, detail = QUOTA_EXCEEDED) {
  assert.equal(r.status, 413, JSON.stringify(r.body));
  assert.equal(r.body['detail'], detail);
  assert.equal(r.body['status'], 413);
}

describe('quotas', () => {
  test('past the quota every kind of upload is refused with "quota exceeded", storing nothing', async (ctx) => {
    const t = await quotaServer(ctx);
    await uploadFile(t, ALICE, 'first.bin', bytes(6000));
    assert.equal(await usageOf(t, 'alice'), 6000);
    const before = await footprint(t);
    refused(await uploadRaw(t, ALICE, bytes(4001), { file: 'raw.bin' }));
    refused(await uploadMultipart(t, ALICE, [{ filename: 'multi.bin', data: bytes(4001) }]));
    refused(
      await uploadMultipart(t, ALICE, [
        { filename: 'a.bin', data: bytes(3000) },
        { filename: 'b.bin', data: bytes(3000) },
      ]),
    );
    refused(await uploadChunked(t, ALICE, bytes(4001), 'chunked.bin'));
    refused(await tusCreate(t.base, ALICE, 4001, 'tus.bin'));
    assert.deepEqual(await footprint(t), before);
    assert.equal(await usageOf(t, 'alice'), 6000);
    assert.equal((await t.server.services.db.selectFrom('uploads').selectAll().execute()).length, 0);
    assert.equal(
      (await t.server.services.db.selectFrom('quota_reservations').selectAll().execute()).length,
      0,
    );
    // What fits still goes in, to the last byte, by every way.
    await uploadFile(t, ALICE, 'raw.bin', bytes(1000));
    assert.equal((await uploadMultipart(t, ALICE, [{ filename: 'm.bin', data: bytes(1000) }])).status, 200);
    assert.equal((await uploadChunked(t, ALICE, bytes(1000), 'c.bin')).status, 200);
    const created = await tusCreate(t.base, ALICE, 1000, 'tus.bin');
    assert.equal(created.status, 201);
    // The unfinished tus upload holds its room: nothing else fits meanwhile.
    refused(await uploadRaw(t, ALICE, bytes(1), { file: 'one.bin' }));
    const url = new URL(created.headers.get('location')!, t.base).toString();
    assert.equal((await tusPatch(url, ALICE, bytes(1000))).status, 204);
    assert.equal(await usageOf(t, 'alice'), 10000);
    refused(await uploadRaw(t, ALICE, bytes(1), { file: 'one.bin' }));
    assert.equal((await uploadRaw(t, ALICE, bytes(0), { file: 'empty.bin' })).status, 200);
    const check = await storageCheck(t.env);
    assert.equal(check.code, 0);
    assert.deepEqual(check.usage, [{ user: 'alice', counted: 10000, recomputed: 10000 }]);
  });

  test("the largest file is the account's own when set, never above REMESSA_MAX_FILE_SIZE", async (ctx) => {
    const t = await quotaServer(ctx, { REMESSA_MAX_FILE_SIZE: '8000', REMESSA_QUOTA_DEFAULT: '1MiB' });
    await t.server.services.users.update('alice', { maxFileSize: '2000' });
    refused(
      await uploadRaw(t, ALICE, bytes(2001), { file: 'big.bin' }),
      'file larger than the limit of 2000 bytes',
    );
    refused(await tusCreate(t.base, ALICE, 2001, 'big.bin'), 'file larger than 2000 bytes');
    refused(
      await uploadChunked(t, ALICE, bytes(2001), 'big.bin'),
      'file larger than the limit of 2000 bytes',
    );
    await uploadFile(t, ALICE, 'fits.bin', bytes(2000));
    await t.server.services.users.update('alice', { maxFileSize: '1GiB' });
    refused(
      await uploadRaw(t, ALICE, bytes(8001), { file: 'big.bin' }),
      'file larger than the limit of 8000 bytes',
    );
    await t.server.services.users.update('alice', { maxFileSize: 'default', quota: '3000' });
    refused(await uploadRaw(t, ALICE, bytes(1001), { file: 'over.bin' }));
    assert.equal(await usageOf(t, 'alice'), 2000);
  });

  test('usage follows uploads, deletion, retirement, purge and removal; the check agrees', async (ctx) => {
    const t = await quotaServer(ctx, { REMESSA_QUOTA_DEFAULT: '1MiB', REMESSA_BACKUP_DAYS: '1' });
    await t.createUser('bob', 'bob-password-1');
    const sweep = () => t.server.workers.get('file-sweeper')!.runOnce();
    const a = await uploadFile(t, ALICE, 'a.bin', bytes(100_000));
    const b = await uploadFile(t, ALICE, 'b.bin', bytes(200_000));
    // Into another's area: the area's owner holds it.
    await uploadFile(t, ALICE, 'for-bob.bin', bytes(50), { d: 'bob' });
    assert.equal(await usageOf(t, 'alice'), 300_000);
    assert.equal(await usageOf(t, 'bob'), 50);
    assert.equal((await deleteFile(t, ownerToken(a))).status, 200);
    assert.equal(await usageOf(t, 'alice'), 200_000);
    // Retired to backup: still held until purged.
    await t.advanceClock(8 * DAY);
    await sweep();
    assert.equal((await call(`${t.base}/download/file?k=${ownerToken(b)}`)).status, 401);
    assert.equal(await usageOf(t, 'alice'), 200_000);
    assert.deepEqual((await storageCheck(t.env)).usage, [
      { user: 'alice', counted: 200_000, recomputed: 200_000 },
      { user: 'bob', counted: 50, recomputed: 50 },
    ]);
    await t.advanceClock(2 * DAY);
    await sweep();
    assert.equal(await usageOf(t, 'alice'), 0);
    await uploadFile(t, ALICE, 'c.bin', bytes(10));
    const r = await remessa(t.env, ['user', 'remove', 'bob']);
    assert.equal(r.code, 0, r.stderr);
    await sweep();
    const check = await storageCheck(t.env);
    assert.equal(check.code, 0);
    assert.deepEqual(check.usage, [{ user: 'alice', counted: 10, recomputed: 10 }]);
  });

  test('a counter changed behind its back: the check exits 1 naming it, --fix sets it right', async (ctx) => {
    const t = await quotaServer(ctx);
    const f: FileEntry = await uploadFile(t, ALICE, 'a.bin', bytes(1234));
    assert.equal(f.length, 1234);
    await t.server.services.db
      .updateTable('users')
      .set({ usage_bytes: 99 })
      .where('name', '=', 'alice')
      .execute();
    const bad = await storageCheck(t.env);
    assert.equal(bad.code, 1);
    assert.deepEqual(bad.usage, [{ user: 'alice', counted: 99, recomputed: 1234 }]);
    const text = await remessa(t.env, ['storage', 'check']);
    assert.equal(text.code, 1);
    assert.match(text.stdout, /usage: alice counted 99 bytes, files hold 1234/);
    const fixed = await storageCheck(t.env, true);
    assert.equal(fixed.code, 0);
    assert.equal(await usageOf(t, 'alice'), 1234);
    assert.equal((await storageCheck(t.env)).code, 0);
  });
});

describe('quotas: setting them', () => {
  test('admin API: PATCH quota and maxFileSize, GET shows usage and quota; a bad size changes nothing', async (ctx) => {
    const { t, auths } = await adminSetup(ctx, { env: { REMESSA_QUOTA_DEFAULT: '5GiB' } });
    await uploadFile(t, basic('joe', PASSWORDS.joe), 'a.bin', bytes(1500));
    const one = async () =>
      (await admin(t, auths.root, 'GET', '/users/joe')).body['account'] as Record<string, unknown>;
    assert.deepEqual((await one())['usage'], {
      areaFiles: 1,
      areaBytes: 1500,
      backupFiles: 0,
      backupBytes: 0,
      bytes: 1500,
      quota: 5 * 1024 ** 3,
      maxFileSize: 1024 ** 3,
    });
    const r = await admin(t, auths.root, 'PATCH', '/users/joe', { quota: '10GiB', maxFileSize: '1MiB' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const usage = (await one())['usage'] as Record<string, unknown>;
    assert.deepEqual([usage['quota'], usage['maxFileSize']], [10 * 1024 ** 3, 1024 ** 2]);
    const before = await snapshot(t);
    for (const body of [
      { quota: '10 parsecs' },
      { maxFileSize: '0' },
      { quota: 12 },
      { quota: '1GiB', lang: 'xx' },
    ]) {
      const bad = await admin(t, auths.root, 'PATCH', '/users/joe', body);
      assert.equal(bad.status, 400, JSON.stringify(body));
    }
    assert.deepEqual(await snapshot(t), before);
    assert.equal((await admin(t, auths.aud, 'PATCH', '/users/joe', { quota: '1' })).status, 403);
    assert.equal(
      (await admin(t, auths.root, 'PATCH', '/users/joe', { quota: null, maxFileSize: 'default' })).status,
      200,
    );
    const cleared = (await one())['usage'] as Record<string, unknown>;
    assert.deepEqual([cleared['quota'], cleared['maxFileSize']], [5 * 1024 ** 3, 1024 ** 3]);
    // The portal's own endpoint tells the account its figures.
    const me = await call(`${t.origin}/portal/me`, { headers: { Authorization: auths.joe } });
    assert.deepEqual(me.body['usage'], { bytes: 1500, quota: 5 * 1024 ** 3, maxFileSize: 1024 ** 3 });
  });

  test('CLI: user set --quota/--max-file-size; "default" clears; a bad size exits 1 and changes nothing', async (ctx) => {
    const t = await quotaServer(ctx);
    const row = () =>
      t.server.services.db
        .selectFrom('users')
        .select(['quota_bytes', 'max_file_bytes'])
        .where('name', '=', 'alice')
        .executeTakeFirstOrThrow();
    let r = await remessa(t.env, ['user', 'set', 'alice', '--quota', '10GiB', '--max-file-size', '1GiB']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(await row(), { quota_bytes: 10 * 1024 ** 3, max_file_bytes: 1024 ** 3 });
    r = await remessa(t.env, ['user', 'set', 'alice', '--quota', 'lots']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /remessa: quota must be a size such as 10GiB/);
    assert.deepEqual(await row(), { quota_bytes: 10 * 1024 ** 3, max_file_bytes: 1024 ** 3 });
    r = await remessa(t.env, ['user', 'set', 'alice', '--quota', 'default', '--max-file-size', 'none']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(await row(), { quota_bytes: null, max_file_bytes: null });
  });
});
