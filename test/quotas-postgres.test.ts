// Quotas on PostgreSQL with two instances: uploads racing on both into one area whose quota fits
// only some of them; exactly as many succeed as fit, whichever way they come (raw bodies of known
// length, tus creations, chunked bodies), and the counter equals the sum of the stored files.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { bytes, uploadRaw } from './helpers/files.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';
import { QUOTA_EXCEEDED, storageCheck, tusCreate, uploadChunked, usageOf } from './helpers/quotas.js';
import { basic, closeAll, startTestServer, type TestServer } from './helpers/server.js';

const available = await postgresAvailable();
if (!available && PG_REQUIRED) throw new Error(PG_SKIP);

const sumOfFiles = async (t: TestServer, name: string) => {
  const r = await t.server.services.db
    .selectFrom('files')
    .innerJoin('users', 'users.id', 'files.owner_id')
    .select((eb) => eb.fn.sum<string | number>('files.length').as('n'))
    .where('users.name', '=', name)
    .executeTakeFirst();
  return Number(r?.n ?? 0);
};

describe('quotas on PostgreSQL, two instances', { skip: available ? false : PG_SKIP }, () => {
  let database: Awaited<ReturnType<typeof createTempDatabase>>;
  let a: TestServer;
  let b: TestServer;

  before(async () => {
    database = await createTempDatabase();
    const env = { REMESSA_DATABASE_URL: database.url, REMESSA_INLINE_MAX_SIZE: '0' };
    a = await startTestServer({ env, startWorkers: false });
    b = await startTestServer({ env, startWorkers: false });
    for (const name of ['ana', 'bea', 'cid']) {
      await a.createUser(name, `${name}-password-1`);
      await a.server.services.users.update(name, { quota: '100000' });
    }
  });
  after(async () => {
    await closeAll(a, b, () => database?.drop());
  });

  test('raw bodies of known length: exactly as many as fit, from both instances at once', async () => {
    const auth = basic('ana', 'ana-password-1');
    const results = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        uploadRaw(i % 2 ? a : b, auth, bytes(15_000), { file: `f${i}.bin` }),
      ),
    );
    const ok = results.filter((r) => r.status === 200).length;
    assert.equal(ok, 6, results.map((r) => r.status).join(','));
    for (const r of results.filter((x) => x.status !== 200)) {
      assert.equal(r.status, 413);
      assert.equal(r.body['detail'], QUOTA_EXCEEDED);
    }
    assert.equal(await usageOf(a, 'ana'), 90_000);
    assert.equal(await sumOfFiles(a, 'ana'), 90_000);
    assert.equal(
      (await a.server.services.db.selectFrom('quota_reservations').selectAll().execute()).length,
      0,
    );
  });

  test('tus creations racing: as many as fit hold their room', async () => {
    const auth = basic('bea', 'bea-password-1');
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => tusCreate((i % 2 ? a : b).base, auth, 30_000, `t${i}.bin`)),
    );
    assert.equal(results.filter((r) => r.status === 201).length, 3, results.map((r) => r.status).join(','));
    assert.ok(results.every((r) => r.status === 201 || r.body['detail'] === QUOTA_EXCEEDED));
  });

  test('chunked bodies racing: never more than the quota is stored', async () => {
    const auth = basic('cid', 'cid-password-1');
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => uploadChunked(i % 2 ? a : b, auth, bytes(30_000), `c${i}.bin`)),
    );
    const ok = results.filter((r) => r.status === 200).length;
    assert.ok(ok >= 1 && ok <= 3, `${ok} stored`);
    assert.ok(results.every((r) => r.status === 200 || r.body['detail'] === QUOTA_EXCEEDED));
    assert.equal(await usageOf(a, 'cid'), ok * 30_000);
    assert.equal(await sumOfFiles(a, 'cid'), ok * 30_000);
    const check = await storageCheck(a.env);
    assert.equal(check.code, 0);
    assert.ok(check.usage.every((u) => u.counted === u.recomputed));
  });
});
