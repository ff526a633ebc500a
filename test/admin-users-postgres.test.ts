// The admin API's accounts on PostgreSQL with two instances: the role walk on both, a demotion on
// one instance refused on the other at the next request, two admins demoting each other at once
// from different instances (one wins, the other is refused), searches and paging with literal
// wildcards, usage sums and last sign-ins written through the group commit.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { admin, assertOneDemotionWins, bearer, restoreDemoted, roleWalk, snapshot } from './helpers/admin.js';
import { uploadFile } from './helpers/files.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';
import { basic, closeAll, startTestServer, type TestServer } from './helpers/server.js';

const available = await postgresAvailable();
if (!available && PG_REQUIRED) throw new Error(PG_SKIP);

describe('admin API: accounts on PostgreSQL, two instances', { skip: available ? false : PG_SKIP }, () => {
  let database: Awaited<ReturnType<typeof createTempDatabase>>;
  let a: TestServer;
  let b: TestServer;

  before(async () => {
    database = await createTempDatabase();
    const env = { REMESSA_DATABASE_URL: database.url };
    a = await startTestServer({ env });
    b = await startTestServer({ env });
    await a.createUser('root', 'root-password-1', { role: 'admin' });
    await a.createUser('aud', 'aud-password-1', { role: 'auditor' });
    await a.createUser('joe', 'joe-password-1');
  });
  after(async () => {
    await closeAll(a, b, () => database?.drop());
  });

  test('role walk on both instances: 403 for a user everywhere, for an auditor on every change', async () => {
    for (const t of [a, b]) {
      const auths = {
        user: await bearer(t, 'joe', 'joe-password-1'),
        auditor: await bearer(t, 'aud', 'aud-password-1'),
      };
      await roleWalk(t, auths, 'joe');
    }
  });

  test('search and paging: name order, literal wildcards, e-mail in any case', async () => {
    const root = basic('root', 'root-password-1');
    for (const name of ['pg_one', 'pgXtwo', 'PG-three', 'pg.four'])
      await b.createUser(name, `${name}-password`, { email: `${name.toLowerCase()}@Pg.Example` });
    const pages: unknown[] = [];
    let cursor: string | null = null;
    do {
      const r = await admin(a, root, 'GET', `/users?q=PG&limit=1${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      pages.push(...(r.body['users'] as { name: string }[]).map((u) => u.name));
      cursor = r.body['next'] as string | null;
    } while (cursor);
    assert.deepEqual(pages, ['PG-three', 'pg.four', 'pg_one', 'pgXtwo']);
    const only = async (q: string) =>
      (
        (await admin(b, root, 'GET', `/users?q=${encodeURIComponent(q)}`)).body['users'] as { name: string }[]
      ).map((u) => u.name);
    assert.deepEqual(await only('pg_'), ['pg_one'], '_ taken literally');
    assert.deepEqual(await only('pg%'), [], '% taken literally');
    assert.deepEqual(await only('PGXTWO@pg.example'), ['pgXtwo']);
  });

  test('usage sums and the last sign-in, written through the group commit', async () => {
    await a.createUser('ann', 'ann-password-1');
    const auth = basic('ann', 'ann-password-1');
    await uploadFile(a, auth, 'x.bin', Buffer.alloc(3000, 1));
    await uploadFile(a, auth, 'y.bin', Buffer.alloc(17, 2));
    await Promise.all([
      bearer(a, 'ann', 'ann-password-1'),
      bearer(b, 'ann', 'ann-password-1'),
      bearer(b, 'joe', 'joe-password-1'),
    ]);
    const r = await admin(b, basic('aud', 'aud-password-1'), 'GET', '/users/ann');
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const account = r.body['account'] as { usage: unknown; lastSignIn: string | null };
    assert.deepEqual(account.usage, {
      areaFiles: 2,
      areaBytes: 3017,
      backupFiles: 0,
      backupBytes: 0,
      bytes: 3017,
      quota: null,
      maxFileSize: 1024 ** 3,
    });
    assert.equal(typeof account.lastSignIn, 'string');
  });

  test('a demotion on one instance is refused on the other at the next request', async () => {
    await a.createUser('boss', 'boss-password-1', { role: 'admin' });
    const onB = await bearer(b, 'boss', 'boss-password-1');
    assert.equal((await admin(b, onB, 'POST', '/users/joe/unlock')).status, 200);
    const r = await admin(a, basic('root', 'root-password-1'), 'PATCH', '/users/boss', { role: 'auditor' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal((await admin(b, onB, 'POST', '/users/joe/unlock')).status, 403);
    assert.equal((await admin(b, onB, 'GET', '/users/joe')).status, 200, 'an auditor reads');
  });

  test('two admins demoting each other at once, from two instances: one wins, the other is refused', async () => {
    const { db } = a.server.services;
    // root and a second admin only.
    await db
      .updateTable('users')
      .set({ role: 'user' })
      .where('role', '=', 'admin')
      .where('name_key', '<>', 'root')
      .execute();
    await a.createUser('rival', 'rival-password-1', { role: 'admin' });
    const root = await bearer(a, 'root', 'root-password-1');
    const rival = await bearer(b, 'rival', 'rival-password-1');
    for (let round = 0; round < 8; round++) {
      const answers = await Promise.all([
        admin(a, root, 'PATCH', '/users/rival', { role: 'user' }),
        admin(b, rival, 'PATCH', '/users/root', { role: 'user' }),
      ]);
      assertOneDemotionWins(answers);
      await restoreDemoted(a, ['root', 'rival']);
    }
    assert.equal((await admin(b, rival, 'DELETE', '/users/rival')).status, 200);
    const before = await snapshot(a);
    assert.equal((await admin(a, root, 'DELETE', '/users/root')).status, 409, 'root is the last now');
    assert.deepEqual(await snapshot(b), before);
  });
});
