// The admin API's accounts (docs/admin.md, "Roles" and "Users") over real HTTP on SQLite: the
// role walk over every /admin operation of openapi.json, searches and paging, one account with its
// usage and last sign-in, and every change, audited with the acting account. The last enabled
// admin, first access and password reset by e-mail, and hostile input: admin-users-rules.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  ACCOUNT_FIELDS,
  admin,
  adminSetup,
  auditRows,
  bearer,
  PASSWORDS,
  roleWalk,
  snapshot,
} from './helpers/admin.js';
import { uploadFile } from './helpers/files.js';
import { basic, call } from './helpers/server.js';

type Summary = Record<string, unknown>;
const namesOf = (r: { body: Record<string, unknown> }) =>
  (r.body['users'] as Summary[]).map((u) => u['name']);

describe('admin API: accounts', () => {
  test('openapi.json documents the users routes under the tag admin, with their components', async (ctx) => {
    const { t } = await adminSetup(ctx);
    const doc = (await call(`${t.base}/openapi.json`)).body as {
      paths: Record<string, Record<string, { tags?: string[] }>>;
      components: { schemas: Record<string, unknown> };
    };
    const admins = Object.entries(doc.paths).filter(([p]) => p.startsWith('/admin/'));
    assert.ok(admins.length >= 6);
    for (const [p, methods] of admins)
      for (const [m, op] of Object.entries(methods)) assert.deepEqual(op.tags, ['admin'], `${m} ${p}`);
    for (const name of ['UserSummary', 'UserDetail', 'AdminUserList', 'AdminUser', 'AdminUserChanged'])
      assert.ok(doc.components.schemas[name], name);
  });

  test('role walk: a user gets 403 on every admin route, an auditor on every change', async (ctx) => {
    const { t, auths } = await adminSetup(ctx);
    const walked = await roleWalk(t, { user: auths.joe, auditor: auths.aud }, 'joe');
    assert.ok(walked.some((op) => op.method === 'DELETE' && op.path === '/admin/users/{name}'));
    // Basic works as Bearer does, and an admin reads what an auditor reads.
    assert.equal((await admin(t, basic('joe', PASSWORDS.joe), 'GET', '/users')).status, 403);
    assert.equal((await admin(t, basic('aud', PASSWORDS.aud), 'DELETE', '/users/joe')).status, 403);
    const list = await admin(t, auths.root, 'GET', '/users');
    assert.equal(list.status, 200);
    assert.equal(list.body['description'], 'handlerAdminUsers:succsessfully');
    assert.equal(list.body['user'], 'root');
    assert.equal((await admin(t, auths.aud, 'GET', '/users/joe')).body['user'], 'aud');
  });

  test('list: name order, filters, keyset paging; bad parameters are 400', async (ctx) => {
    const { t, auths } = await adminSetup(ctx);
    for (let i = 7; i >= 1; i--)
      await t.createUser(`Page-${i}`, `page-password-${i}`, { email: `p${i}@Corp.example` });
    await t.createUser('odd_one', null, { email: 'odd@example.com' });
    await t.server.services.users.setEnabled('page-3', false);
    const seen: unknown[] = [];
    let cursor: string | null = null;
    do {
      const r = await admin(t, auths.aud, 'GET', `/users?q=PAGE&limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.ok((r.body['users'] as unknown[]).length <= 3);
      seen.push(...namesOf(r));
      cursor = r.body['next'] as string | null;
    } while (cursor);
    assert.deepEqual(seen, ['Page-1', 'Page-2', 'Page-3', 'Page-4', 'Page-5', 'Page-6', 'Page-7']);

    const names = async (query: string) => {
      const r = await admin(t, auths.root, 'GET', `/users?${query}`);
      assert.equal(r.status, 200, `${query}: ${JSON.stringify(r.body)}`);
      return namesOf(r);
    };
    assert.deepEqual(await names('q=corp.EXAMPLE&limit=2'), ['Page-1', 'Page-2'], 'e-mail, any case');
    assert.deepEqual(await names('q=_'), ['odd_one'], '_ is no wildcard');
    assert.deepEqual(await names('q=%25'), [], '% is no wildcard');
    assert.deepEqual(await names('role=admin'), ['root']);
    assert.deepEqual(await names('role=auditor'), ['aud']);
    assert.deepEqual(await names('enabled=false'), ['Page-3']);
    assert.deepEqual(await names('firstAccess=true'), ['odd_one']);
    assert.deepEqual(await names('locked=true'), []);
    assert.equal((await names('q=page&enabled=true&firstAccess=false&locked=false')).length, 6);
    const first = (await admin(t, auths.root, 'GET', '/users?q=odd')).body['users'] as Summary[];
    assert.deepEqual(Object.keys(first[0]!), [
      ...ACCOUNT_FIELDS,
      'locked',
      'lockedUntil',
      'firstAccess',
      'created',
      'lastSignIn',
    ]);
    for (const bad of [
      'limit=0',
      'limit=501',
      'limit=abc',
      'cursor=!!',
      'cursor=Zm9v_',
      'role=root',
      'enabled=yes',
    ]) {
      const r = await admin(t, auths.root, 'GET', `/users?${bad}`);
      assert.equal(r.status, 400, bad);
      assert.equal(r.body['status'], 400, bad);
    }
  });

  test('one account: usage in area and backup, last sign-in by token and login', async (ctx) => {
    const { t, auths } = await adminSetup(ctx);
    await t.createUser('ann', 'ann-password-1');
    const one = async () => {
      const r = await admin(t, auths.aud, 'GET', '/users/ANN');
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body['account'] as Summary & { usage: Record<string, number> };
    };
    const fresh = await one();
    assert.equal(fresh['lastSignIn'], null);
    assert.deepEqual(fresh.usage, {
      areaFiles: 0,
      areaBytes: 0,
      backupFiles: 0,
      backupBytes: 0,
      bytes: 0,
      quota: null,
      maxFileSize: 1024 ** 3,
    });
    const auth = basic('ann', 'ann-password-1');
    await uploadFile(t, auth, 'a.bin', Buffer.alloc(1000, 1));
    await uploadFile(t, auth, 'b.bin', Buffer.alloc(234, 2));
    const retired = await uploadFile(t, auth, 'c.bin', Buffer.alloc(50, 3));
    await t.server.services.db
      .updateTable('files')
      .set({ state: 'backup', retired_at: t.clock.now(), purge_at: t.clock.now() + 86_400_000 })
      .where('id', '=', retired.id)
      .execute();
    assert.deepEqual((await one()).usage, {
      areaFiles: 2,
      areaBytes: 1234,
      backupFiles: 1,
      backupBytes: 50,
      bytes: 1284,
      quota: null,
      maxFileSize: 1024 ** 3,
    });

    await bearer(t, 'ann', 'ann-password-1');
    const byToken = (await one())['lastSignIn'];
    assert.equal(byToken, new Date(Date.parse(String(byToken))).toISOString());
    assert.ok(Math.abs(Date.parse(String(byToken)) - t.clock.now()) < 60_000);
    await t.advanceClock(600_000);
    const login = await call(`${t.base}/auth/login`, { method: 'POST', headers: { Authorization: auth } });
    assert.equal(login.status, 200);
    assert.ok(Date.parse(String((await one())['lastSignIn'])) >= Date.parse(String(byToken)) + 600_000);
    assert.equal((await admin(t, auths.root, 'GET', '/users/nobody')).status, 404);
  });

  test('create: with a password it signs in; audited with the acting account', async (ctx) => {
    const { t, auths } = await adminSetup(ctx);
    const r = await admin(t, auths.root, 'POST', '/users', {
      name: 'Carla',
      password: 'carla-password-1',
      email: 'carla@example.com',
      mobile: '+55 11 98765-4321',
      lang: 'en',
      role: 'auditor',
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body['user'], 'root');
    const account = r.body['account'] as Summary;
    assert.deepEqual(
      { ...account, created: undefined },
      {
        name: 'Carla',
        email: 'carla@example.com',
        mobile: '+5511987654321',
        lang: 'en',
        role: 'auditor',
        enabled: true,
        locked: false,
        lockedUntil: null,
        firstAccess: false,
        created: undefined,
        lastSignIn: null,
      },
    );
    const carla = await bearer(t, 'carla', 'carla-password-1');
    assert.equal((await admin(t, carla, 'GET', '/users')).status, 200, 'an auditor reads');
    const [row] = await auditRows(t, 'user.created').then((rows) =>
      rows.filter((x) => x.user_name === 'Carla'),
    );
    assert.equal(row?.actor, 'root');
    assert.equal(row?.remote, '127.0.0.1');
    assert.match(String(row?.detail), /^admin; role=auditor$/);

    const again = await admin(t, auths.root, 'POST', '/users', { name: 'CARLA', password: 'x-password-1' });
    assert.equal(again.status, 409);
    for (const body of [
      { name: 'bad name!', password: 'x-password-1' },
      { name: 'short', password: 'x' },
      { name: 'nomail' },
      { name: 'badrole', password: 'x-password-1', role: 'root' },
      { name: 'badlang', password: 'x-password-1', lang: 'fr' },
    ]) {
      const before = await snapshot(t);
      const bad = await admin(t, auths.root, 'POST', '/users', body);
      assert.equal(bad.status, 400, JSON.stringify(body));
      assert.ok(String(bad.body['detail']).length > 0, 'a reason');
      assert.deepEqual(await snapshot(t), before, JSON.stringify(body));
    }
  });

  test('PATCH changes e-mail, mobile, language and role; "" and null clear; audited', async (ctx) => {
    const { t, auths } = await adminSetup(ctx);
    const patch = (body: unknown) => admin(t, auths.root, 'PATCH', '/users/joe', body);
    const r = await patch({
      email: 'JOE@new.example',
      mobile: '+55 11 91234-5678',
      lang: 'es',
      role: 'auditor',
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const account = r.body['account'] as Summary;
    assert.deepEqual(
      [account['email'], account['mobile'], account['lang'], account['role']],
      ['JOE@new.example', '+5511912345678', 'es', 'auditor'],
    );
    assert.equal((await admin(t, auths.joe, 'GET', '/users')).status, 200, 'promoted at once');
    const cleared = await patch({ email: '', mobile: null });
    assert.deepEqual(
      [(cleared.body['account'] as Summary)['email'], (cleared.body['account'] as Summary)['mobile']],
      [null, null],
    );
    const rows = (await auditRows(t, 'user.updated')).filter((x) => x.user_name === 'joe');
    assert.deepEqual(
      rows.map((x) => [x.actor, x.detail]),
      [
        ['root', 'email,mobile,lang,role=auditor'],
        ['root', 'email,mobile'],
      ],
    );
    assert.equal((await admin(t, auths.root, 'PATCH', '/users/nobody', { lang: 'en' })).status, 404);
  });

  test('disable ends sessions, enable lets it in again; both audited', async (ctx) => {
    const { t, auths } = await adminSetup(ctx);
    assert.equal(
      (await call(`${t.base}/download/list?page=1`, { headers: { Authorization: auths.joe } })).status,
      200,
    );
    const off = await admin(t, auths.root, 'POST', '/users/joe/disable');
    assert.equal(off.status, 200, JSON.stringify(off.body));
    assert.equal((off.body['account'] as Summary)['enabled'], false);
    assert.equal(
      (await call(`${t.base}/download/list?page=1`, { headers: { Authorization: auths.joe } })).status,
      401,
    );
    assert.equal(
      (
        await call(`${t.base}/auth/login`, {
          method: 'POST',
          headers: { Authorization: basic('joe', PASSWORDS.joe) },
        })
      ).status,
      401,
    );
    const on = await admin(t, auths.root, 'POST', '/users/joe/enable');
    assert.equal((on.body['account'] as Summary)['enabled'], true);
    await bearer(t, 'joe', PASSWORDS.joe);
    for (const event of ['user.disabled', 'user.enabled']) {
      const [row] = (await auditRows(t, event)).filter((x) => x.user_name === 'joe');
      assert.deepEqual([row?.actor, row?.detail], ['root', 'admin'], event);
    }
  });

  test('unlock ends a sign-in lockout and a password-recovery lockout', async (ctx) => {
    const { t, auths } = await adminSetup(ctx);
    for (let i = 0; i < 5; i++)
      await call(`${t.base}/auth/login`, {
        method: 'POST',
        headers: { Authorization: basic('joe', 'wrong') },
      });
    const until = t.clock.now() + 7_200_000;
    await t.server.services.db
      .updateTable('users')
      .set({ recovery_locked_until: until })
      .where('name_key', '=', 'joe')
      .execute();
    const locked = (await admin(t, auths.aud, 'GET', '/users/joe')).body['account'] as Summary;
    assert.equal(locked['locked'], true);
    assert.equal(locked['lockedUntil'], new Date(until).toISOString(), 'the later of the two');
    assert.deepEqual(namesOf(await admin(t, auths.aud, 'GET', '/users?locked=true')), ['joe']);
    const login = () =>
      call(`${t.base}/auth/login`, {
        method: 'POST',
        headers: { Authorization: basic('joe', PASSWORDS.joe) },
      });
    assert.equal((await login()).status, 401, 'locked');
    const r = await admin(t, auths.root, 'POST', '/users/joe/unlock');
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(
      [(r.body['account'] as Summary)['locked'], (r.body['account'] as Summary)['lockedUntil']],
      [false, null],
    );
    assert.equal((await login()).status, 200);
    const row = await t.server.services.users.get('joe');
    assert.equal(Number(row.recovery_locked_until), 0);
    const [audit] = await auditRows(t, 'user.unlocked');
    assert.deepEqual([audit?.user_name, audit?.actor], ['joe', 'root']);
  });

  test('DELETE removes the account as `user remove` does; audit rows stay', async (ctx) => {
    const { t, auths } = await adminSetup(ctx);
    const file = await uploadFile(t, basic('joe', PASSWORDS.joe), 'gone.bin', Buffer.alloc(10, 1));
    assert.equal((await fetch(file.linkURL)).status, 200);
    const r = await admin(t, auths.root, 'DELETE', '/users/JOE');
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body['removed'], 'joe');
    assert.equal((await fetch(file.linkURL)).status >= 400, true, 'its links stop at once');
    assert.equal(
      (await call(`${t.base}/download/list?page=1`, { headers: { Authorization: auths.joe } })).status,
      401,
    );
    assert.equal((await admin(t, auths.root, 'GET', '/users/joe')).status, 404);
    assert.equal((await admin(t, auths.root, 'DELETE', '/users/joe')).status, 404);
    const [row] = await auditRows(t, 'user.removed');
    assert.deepEqual([row?.user_name, row?.actor], ['joe', 'root']);
    assert.match(String(row?.detail), /"via":"admin","filesPurged":1/);
    assert.ok(
      (await auditRows(t, 'token.issued')).some((x) => x.user_name === 'joe'),
      'earlier rows stay',
    );
  });
});
