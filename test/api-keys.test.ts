// API keys (docs/api-keys.md): made over the API, shown once, kept as a hash; used as Basic's
// password, as a Bearer token and in the password grant with no other change; revoked, expired,
// disabled or removed owners stop them at once, with the tokens obtained with them; scopes narrow
// what a key may call; a key never appears in the logs.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { adminSetup, auditRows, PASSWORDS } from './helpers/admin.js';
import { keyAuths, makeKey, passwordGrant, uploadStatus } from './helpers/keys.js';
import { eventually } from './helpers/peers.js';
import { basic, call, serverFor, type TestServer } from './helpers/server.js';

const JOE = basic('joe', PASSWORDS.joe);

const get = (t: TestServer, auth: string, path: string) =>
  call(`${t.base}${path}`, { headers: { Authorization: auth } });
const revoke = (t: TestServer, auth: string, id: string) =>
  call(`${t.base}/keys/${id}`, { method: 'DELETE', headers: { Authorization: auth } });

/** Statuses of an upload with each of `auths` (null: that way was refused earlier). */
async function uploads(t: TestServer, auths: Record<string, string | null>) {
  const out: Record<string, number | null> = {};
  for (const [way, auth] of Object.entries(auths))
    out[way] = auth === null ? null : await uploadStatus(t, auth);
  return out;
}

describe('API keys', () => {
  test('shown once, listed without the key; a script swaps its password for the key', async (ctx) => {
    const { t } = await adminSetup(ctx);
    const made = await makeKey(t, JOE, { name: 'erp export' });
    assert.match(made.key, /^rmk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    assert.ok(made.key.startsWith(`rmk_${made.id}_`));
    const list = await get(t, JOE, '/keys');
    assert.equal(list.status, 200);
    assert.equal(list.body['description'], 'handlerKeys:succsessfully');
    const keys = list.body['keys'] as Record<string, unknown>[];
    assert.deepEqual(Object.keys(keys[0]!), [
      'id',
      'name',
      'user',
      'scopes',
      'created',
      'expires',
      'lastUsed',
      'revoked',
    ]);
    assert.equal(JSON.stringify(list.body).includes(made.key.slice(22)), false);
    const row = await t.server.services.db.selectFrom('api_keys').selectAll().executeTakeFirstOrThrow();
    assert.equal(JSON.stringify(row).includes(made.key.slice(22)), false, 'only a hash is stored');

    const auths = await keyAuths(t, 'joe', made.key);
    assert.deepEqual(await uploads(t, auths), { basic: 200, bearer: 200, token: 200 });
    // /auth/login with the key as Basic's password gives a bearer token like a password does.
    const login = await call(`${t.base}/auth/login`, {
      method: 'POST',
      headers: { Authorization: auths.basic },
    });
    assert.equal(login.status, 200);
    assert.equal(await uploadStatus(t, `Bearer ${String(login.body['bearer'])}`), 200);
    // A password change does not break the script; its last use shows in the list.
    const joe = await t.server.services.users.find('joe');
    await t.server.services.users.setPassword(joe!, 'joe-password-2', 'test');
    assert.deepEqual(await uploads(t, auths), { basic: 200, bearer: 200, token: 200 });
    await eventually(async () => {
      const r = await get(t, basic('joe', 'joe-password-2'), '/keys');
      return (r.body['keys'] as { lastUsed: string | null }[])[0]!.lastUsed !== null;
    });
    // The key is the account's own: another name with it is refused like a wrong password.
    assert.equal(await uploadStatus(t, basic('aud', made.key)), 401);
    const failed = await auditRows(t, 'login.failed');
    assert.equal(failed.at(-1)!.detail, 'invalid API key');
  });

  test('revoking stops the key and every token obtained with it, at once', async (ctx) => {
    const { t } = await adminSetup(ctx);
    const made = await makeKey(t, JOE);
    const auths = await keyAuths(t, 'joe', made.key);
    const login = await call(`${t.base}/auth/login`, {
      method: 'POST',
      headers: { Authorization: auths.basic },
    });
    const loginToken = `Bearer ${String(login.body['bearer'])}`;
    assert.equal(await uploadStatus(t, loginToken), 200);
    const r = await revoke(t, JOE, made.id);
    assert.equal(r.status, 200);
    assert.equal(typeof (r.body['apiKey'] as { revoked: string }).revoked, 'string');
    assert.deepEqual(await uploads(t, { ...auths, loginToken }), {
      basic: 401,
      bearer: 401,
      token: 401,
      loginToken: 401,
    });
    assert.equal((await passwordGrant(t, 'joe', made.key)).status, 401);
    assert.equal((await revoke(t, JOE, made.id)).status, 200, 'revoking again changes nothing');
    assert.equal((await auditRows(t, 'key.revoked')).length, 1);
    // Someone else's key is not found, as an unknown one.
    const other = await makeKey(t, basic('aud', PASSWORDS.aud));
    assert.equal((await revoke(t, JOE, other.id)).status, 404);
    assert.equal((await revoke(t, JOE, '0123456789abcdef')).status, 404);
    assert.equal(await uploadStatus(t, basic('aud', other.key)), 200);
  });

  test('an expired key, a disabled or removed owner: refused at once', async (ctx) => {
    const { t } = await adminSetup(ctx);
    const soon = await makeKey(t, JOE, { expires: '1h' });
    const made = await makeKey(t, JOE);
    assert.equal(await uploadStatus(t, basic('joe', soon.key)), 200);
    t.clock.advance(61 * 60_000);
    assert.equal(await uploadStatus(t, basic('joe', soon.key)), 401);
    assert.equal(await uploadStatus(t, `Bearer ${soon.key}`), 401);
    const auths = await keyAuths(t, 'joe', made.key);
    await t.server.services.users.setEnabled('joe', false);
    assert.deepEqual(await uploads(t, auths), { basic: 401, bearer: 401, token: 401 });
    await t.server.services.users.setEnabled('joe', true);
    assert.deepEqual(await uploads(t, { basic: auths.basic, bearer: auths.bearer }), {
      basic: 200,
      bearer: 200,
    });
    await t.server.services.users.remove('joe');
    assert.deepEqual(await uploads(t, { basic: auths.basic, bearer: auths.bearer }), {
      basic: 401,
      bearer: 401,
    });
    assert.equal(
      await t.server.services.db
        .selectFrom('api_keys')
        .select('id')
        .where('id', '=', made.id)
        .executeTakeFirst(),
      undefined,
    );
  });

  test('scopes: an upload key uploads and nothing else; admin-read reads the admin API', async (ctx) => {
    const { t } = await adminSetup(ctx);
    const up = await makeKey(t, JOE, { scopes: ['upload'] });
    assert.deepEqual(up.scopes, ['upload']);
    const auths = await keyAuths(t, 'joe', up.key);
    assert.deepEqual(await uploads(t, auths), { basic: 200, bearer: 200, token: 200 });
    for (const auth of Object.values(auths)) {
      assert.equal((await get(t, auth!, '/download/list?page=1')).status, 403);
      assert.equal((await get(t, auth!, '/keys')).status, 403, 'a narrow key cannot manage keys');
      assert.equal((await get(t, auth!, '/webhooks')).status, 403);
    }
    const tus = await call(`${t.base}/uploads`, {
      method: 'POST',
      headers: {
        Authorization: auths.basic,
        'Tus-Resumable': '1.0.0',
        'Upload-Length': '3',
        'Upload-Metadata': 'filename YS50eHQ=',
      },
    });
    assert.equal(tus.status, 201);
    const root = basic('root', PASSWORDS.root);
    const read = await makeKey(t, root, { scopes: 'admin-read,download' });
    assert.equal((await get(t, `Bearer ${read.key}`, '/admin/users')).status, 200);
    assert.equal((await get(t, `Bearer ${read.key}`, '/download/list?page=1')).status, 200);
    const change = await call(`${t.base}/admin/users/joe`, {
      method: 'PATCH',
      headers: { Authorization: `Bearer ${read.key}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ lang: 'es' }),
    });
    assert.equal(change.status, 403);
    assert.equal(await uploadStatus(t, `Bearer ${read.key}`), 403);
    // A key never goes beyond its owner's role: joe's unscoped key still gets 403 from the admin API.
    const joeAll = await makeKey(t, JOE);
    assert.equal((await get(t, `Bearer ${joeAll.key}`, '/admin/users')).status, 403);
    for (const bad of [
      { scopes: ['everything'] },
      { scopes: [] },
      { expires: 'yesterday' },
      { expires: '2001-01-01' },
      { name: '' },
    ])
      assert.equal(
        (
          await call(`${t.base}/keys`, {
            method: 'POST',
            headers: { Authorization: JOE, 'Content-Type': 'application/json' },
            body: JSON.stringify({ name: 'x', ...bad }),
          })
        ).status,
        400,
        JSON.stringify(bad),
      );
  });

  test('the admin API: every key listed, made for an account, revoked; auditors only list', async (ctx) => {
    const { t, auths } = await adminSetup(ctx);
    const made = await call(`${t.base}/admin/users/joe/keys`, {
      method: 'POST',
      headers: { Authorization: auths.root, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'made by root', scopes: ['upload'] }),
    });
    assert.equal(made.status, 200);
    const key = made.body['apiKey'] as { id: string; key: string; user: string };
    assert.equal(key.user, 'joe');
    assert.equal(await uploadStatus(t, basic('joe', key.key)), 200);
    const created = await auditRows(t, 'key.created');
    assert.equal(created.at(-1)!.actor, 'root');
    assert.equal(created.at(-1)!.user_name, 'joe');
    await makeKey(t, basic('aud', PASSWORDS.aud));
    const all = await get(t, auths.aud, '/admin/keys');
    assert.equal(all.status, 200);
    assert.deepEqual((all.body['keys'] as { user: string }[]).map((k) => k.user).sort(), ['aud', 'joe']);
    const joes = await get(t, auths.aud, '/admin/keys?user=joe');
    assert.deepEqual(
      (joes.body['keys'] as { id: string }[]).map((k) => k.id),
      [key.id],
    );
    assert.equal((await get(t, auths.aud, '/admin/keys?user=nobody')).status, 404);
    const byAuditor = await call(`${t.base}/admin/keys/${key.id}`, {
      method: 'DELETE',
      headers: { Authorization: auths.aud },
    });
    assert.equal(byAuditor.status, 403);
    assert.equal((await get(t, auths.joe, '/admin/keys')).status, 403);
    const gone = await call(`${t.base}/admin/keys/${key.id}`, {
      method: 'DELETE',
      headers: { Authorization: auths.root },
    });
    assert.equal(gone.status, 200);
    assert.equal(await uploadStatus(t, basic('joe', key.key)), 401);
    assert.equal((await auditRows(t, 'key.revoked')).at(-1)!.actor, 'root');
  });

  test('REMESSA_PASSWORD_LOGIN=false: a password is refused everywhere, a key works', async (ctx) => {
    const t = await serverFor(ctx, { env: { REMESSA_PASSWORD_LOGIN: 'false' } });
    await t.createUser('joe', PASSWORDS.joe);
    const joe = await t.server.services.users.find('joe');
    const { secret } = await t.server.services.apiKeys.create(
      joe!,
      { name: 'ci', expiresAt: null, scopes: null },
      { via: 'cli' },
    );
    assert.equal((await passwordGrant(t, 'joe', PASSWORDS.joe)).status, 401);
    assert.equal(
      (await call(`${t.base}/auth/login`, { method: 'POST', headers: { Authorization: JOE } })).status,
      401,
    );
    assert.equal(await uploadStatus(t, JOE), 401);
    const auths = await keyAuths(t, 'joe', secret);
    assert.deepEqual(await uploads(t, auths), { basic: 200, bearer: 200, token: 200 });
    assert.equal((await auditRows(t, 'login.failed')).at(-1)!.detail, 'password sign-in is off');
  });

  test('keys never appear in the logs', async (ctx) => {
    const { t } = await adminSetup(ctx, { env: { REMESSA_LOG_LEVEL: 'debug' } });
    const made = await makeKey(t, JOE);
    const auths = await keyAuths(t, 'joe', made.key);
    await uploads(t, auths);
    await call(`${t.base}/download/list?page=1&k=${made.key}`, { headers: { Authorization: auths.bearer } });
    await revoke(t, JOE, made.id);
    await uploads(t, auths);
    const secretPart = made.key.slice(`rmk_${made.id}_`.length);
    assert.ok(t.logs.length > 5);
    assert.deepEqual(
      t.logs.filter((l) => l.includes(secretPart)),
      [],
    );
    const audit = await t.server.services.db.selectFrom('audit').selectAll().execute();
    assert.equal(JSON.stringify(audit).includes(secretPart), false);
  });
});
