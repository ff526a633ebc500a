// The admin API's accounts, its rules (docs/admin.md, "Roles" and "Users"): the last enabled admin
// stays one, also when two admins demote each other at once; a demotion takes effect on the next
// request; accounts made without a password get their first-access e-mail at once and complete it;
// a password reset e-mails the recovery message; hostile bodies, parameters and names are 4xx and
// change nothing.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import type { ParsedMail } from 'mailparser';
import { isEmail, normalizeMobile, USER_NAME } from '../src/features/users/validation-rules.js';
import {
  admin,
  adminSetup,
  assertOneDemotionWins,
  auditRows,
  bearer,
  restoreDemoted,
  snapshot,
} from './helpers/admin.js';
import { call } from './helpers/server.js';

const SEED = Number(process.env['REMESSA_FUZZ_SEED'] ?? 20261127);

/** The PIN and the change token of a password e-mail. */
function pinAndToken(mail: ParsedMail): { p: string; k: string } {
  const pin = /PIN\): (\d{6})/.exec(mail.text ?? '');
  const link = /(http\S+\/auth\/change\?\S+)/.exec(mail.text ?? '');
  assert.ok(pin && link, `no PIN or link in: ${mail.text}`);
  return { p: pin[1]!, k: new URL(link[1]!).searchParams.get('k')! };
}

const LAST_ADMIN = /the last enabled admin cannot be removed, demoted or disabled/;

/**
 * Bodies that differ from a valid one by one fault: not an object, a field unknown, of the wrong
 * type or of an invalid value. `newAccount` for POST /users, `change` for PATCH /users/{name}.
 */
function hostileBodies() {
  const wrongType = fc.oneof(
    fc.integer(),
    fc.boolean(),
    fc.double(),
    fc.constant([]),
    fc.array(fc.string(), { minLength: 1, maxLength: 2 }),
    fc.dictionary(fc.string(), fc.string(), { maxKeys: 2 }),
  );
  const badValue: Record<string, fc.Arbitrary<string>> = {
    name: fc.oneof(fc.string(), fc.string({ unit: 'grapheme' })).filter((s) => !USER_NAME.test(s)),
    password: fc.string({ maxLength: 7 }),
    email: fc.string({ minLength: 1 }).filter((s) => !isEmail(s)),
    mobile: fc.string({ minLength: 1 }).filter((s) => normalizeMobile(s) === null),
    lang: fc.string().filter((s) => !['pt', 'en', 'es'].includes(s)),
    role: fc.string().filter((s) => !['user', 'auditor', 'admin'].includes(s)),
  };
  const malformed = (base: Record<string, string>, known: string[]) =>
    fc.oneof(
      fc.oneof(fc.integer(), fc.string(), fc.constant(null), fc.array(fc.jsonValue(), { maxLength: 3 })),
      fc
        .record({ key: fc.string().filter((k) => !known.includes(k)), value: fc.jsonValue() })
        .map(({ key, value }) => ({ ...base, [key]: value })),
      fc
        .record({ key: fc.constantFrom(...known), value: wrongType })
        .map(({ key, value }) => ({ ...base, [key]: value })),
      fc.constantFrom(...known).chain((key) => badValue[key]!.map((value) => ({ ...base, [key]: value }))),
    );
  const created = { name: 'fuzz-valid', password: 'fuzz-password-1', email: 'fuzz@example.com' };
  const newAccount = malformed(created, ['name', 'password', 'email', 'mobile', 'lang', 'role']);
  const change = malformed({ lang: 'en' }, ['email', 'mobile', 'lang', 'role']);
  return { newAccount, change };
}

describe('admin API: the rules of accounts', () => {
  test('the last enabled admin cannot be demoted, disabled or removed: 409, nothing changed', async (ctx) => {
    const { t, auths } = await adminSetup(ctx);
    const refusals: [string, string, unknown][] = [
      ['PATCH', '/users/root', { role: 'auditor' }],
      ['PATCH', '/users/ROOT', { role: 'user', email: 'changed@example.com' }],
      ['POST', '/users/root/disable', undefined],
      ['DELETE', '/users/root', undefined],
    ];
    const refuseAll = async () => {
      for (const [method, path, body] of refusals) {
        const before = await snapshot(t);
        const r = await admin(t, auths.root, method, path, body);
        assert.equal(r.status, 409, `${method} ${path}: ${JSON.stringify(r.body)}`);
        assert.match(String(r.body['detail']), LAST_ADMIN);
        assert.deepEqual(await snapshot(t), before, `${method} ${path}`);
      }
    };
    await refuseAll();
    // A disabled admin is no admin to fall back on.
    await t.createUser('spare', 'spare-password-1', { role: 'admin' });
    await t.server.services.users.setEnabled('spare', false);
    await refuseAll();
    // What leaves an admin in place is allowed.
    assert.equal(
      (await admin(t, auths.root, 'PATCH', '/users/root', { role: 'admin', lang: 'en' })).status,
      200,
    );
    assert.equal((await admin(t, auths.root, 'POST', '/users/root/enable')).status, 200);

    // With a second enabled admin, root may step down; its token is an auditor's on the next request.
    assert.equal((await admin(t, auths.root, 'POST', '/users/spare/enable')).status, 200);
    const demoted = await admin(t, auths.root, 'PATCH', '/users/root', { role: 'auditor' });
    assert.equal(demoted.status, 200, JSON.stringify(demoted.body));
    assert.equal((await admin(t, auths.root, 'PATCH', '/users/joe', { lang: 'en' })).status, 403);
    assert.equal((await admin(t, auths.root, 'GET', '/users')).status, 200, 'an auditor now');
    const spare = await bearer(t, 'spare', 'spare-password-1');
    assert.equal((await admin(t, spare, 'PATCH', '/users/root', { role: 'user' })).status, 200);
    assert.equal((await admin(t, auths.root, 'GET', '/users')).status, 403, 'a user now');
    assert.equal((await admin(t, spare, 'DELETE', '/users/spare')).status, 409, 'spare is the last');
    const [row] = (await auditRows(t, 'user.updated')).filter((x) => x.detail === 'role=user');
    assert.deepEqual([row?.user_name, row?.actor], ['root', 'spare']);
  });

  // The loser is refused with 409 when its check of the last admin ran after the winner's change,
  // or with 403 when even its own role was read after it: either way one admin remains.
  test('two admins demoting each other at once: one wins, the other is refused', async (ctx) => {
    const { t, auths } = await adminSetup(ctx);
    await t.createUser('root2', 'root2-password-1', { role: 'admin' });
    const root2 = await bearer(t, 'root2', 'root2-password-1');
    for (let round = 0; round < 5; round++) {
      const answers = await Promise.all([
        admin(t, auths.root, 'PATCH', '/users/root2', { role: 'user' }),
        admin(t, root2, 'PATCH', '/users/root', { role: 'user' }),
      ]);
      assertOneDemotionWins(answers);
      await restoreDemoted(t, ['root', 'root2']);
    }
  });

  test('created without a password: the first-access e-mail arrives at once and completes it', async (ctx) => {
    const { t, mail, auths } = await adminSetup(ctx);
    const r = await admin(t, auths.root, 'POST', '/users', {
      name: 'newbie',
      email: 'newbie@example.com',
      lang: 'en',
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal((r.body['account'] as { firstAccess: boolean }).firstAccess, true);
    const m = await mail.take('newbie@example.com');
    assert.equal(m.subject, 'Remessa: create your password');
    const { p, k } = pinAndToken(m);
    const done = await call(`${t.base}/auth/changeParameters`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ k, p, z: 'newbie-password-1' }),
    });
    assert.equal(done.status, 200, JSON.stringify(done.body));
    await bearer(t, 'newbie', 'newbie-password-1');
    const account = (await admin(t, auths.aud, 'GET', '/users/newbie')).body['account'] as Record<
      string,
      unknown
    >;
    assert.equal(account['firstAccess'], false);
    assert.equal(typeof account['lastSignIn'], 'string');
    const [issued] = (await auditRows(t, 'password.link_issued')).filter((x) => x.user_name === 'newbie');
    assert.equal(issued?.actor, 'root');
    assert.match(String(issued?.detail), /"purpose":"firstaccess"/);
  });

  test('password reset: the recovery e-mail, once a minute; refusals the admin can resolve are 409', async (ctx) => {
    const { t, mail, auths } = await adminSetup(ctx);
    const reset = (name: string) => admin(t, auths.root, 'POST', `/users/${name}/password-reset`);
    const r = await reset('joe');
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body['sent'], true);
    const m = await mail.take('joe@example.com');
    assert.equal(m.subject, 'Remessa: código para alterar a sua senha');
    const { p, k } = pinAndToken(m);
    const done = await call(`${t.base}/auth/changeParameters`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ k, p, z: 'joe-password-2' }),
    });
    assert.equal(done.status, 200, JSON.stringify(done.body));
    await bearer(t, 'joe', 'joe-password-2');
    assert.equal((await reset('joe')).status, 429, 'one link a minute, as forgetParameters');
    const [issued] = await auditRows(t, 'password.link_issued');
    assert.deepEqual([issued?.user_name, issued?.actor], ['joe', 'root']);

    await t.createUser('nomail', 'nomail-password-1', { email: '' });
    await t.createUser('off', 'off-password-1');
    await t.server.services.users.setEnabled('off', false);
    await t.createUser('guarded', 'guarded-password-1');
    await t.server.services.db
      .updateTable('users')
      .set({ recovery_locked_until: t.clock.now() + 3_600_000 })
      .where('name_key', '=', 'guarded')
      .execute();
    for (const [name, why] of [
      ['nomail', /no e-mail address/],
      ['off', /disabled/],
      ['guarded', /recovery is locked/],
    ] as const) {
      const before = await snapshot(t);
      const refused = await reset(name);
      assert.equal(refused.status, 409, name);
      assert.match(String(refused.body['detail']), why);
      assert.deepEqual(await snapshot(t), before, name);
    }
    assert.equal((await reset('nobody')).status, 404);
  });

  test('hostile bodies, parameters and names: 4xx, and nothing changes', async (ctx) => {
    const { t, auths } = await adminSetup(ctx);
    const { newAccount, change } = hostileBodies();
    const raw = fc.constantFrom('{', '{"name":', '[1,', 'name=x', '{"name":"a"}{}', '\u0000');
    const before = await snapshot(t);
    /** `body`: sent as it is (a string) or as JSON. */
    const refused = async (method: string, path: string, body?: unknown) => {
      const r = await admin(
        t,
        auths.root,
        method,
        path,
        typeof body === 'string' ? body : JSON.stringify(body),
      );
      assert.ok(r.status >= 400 && r.status < 500, `${method} ${path} ${JSON.stringify(body)}: ${r.status}`);
      assert.equal(r.body['status'], r.status);
    };
    const runs = { seed: SEED, numRuns: 120 };
    await fc.assert(
      fc.asyncProperty(newAccount, (body) => refused('POST', '/users', JSON.stringify(body))),
      runs,
    );
    await fc.assert(
      fc.asyncProperty(change, (body) => refused('PATCH', '/users/joe', JSON.stringify(body))),
      runs,
    );
    await fc.assert(
      fc.asyncProperty(raw, (text) => refused('POST', '/users', text)),
      runs,
    );
    const stranger = fc
      .string({ minLength: 1, maxLength: 80 })
      .filter((s) => !['root', 'aud', 'joe'].includes(s.toLowerCase()));
    const action = fc.constantFrom('disable', 'enable', 'unlock', 'password-reset');
    await fc.assert(
      fc.asyncProperty(stranger, action, async (name, act) => {
        await refused('POST', `/users/${encodeURIComponent(name)}/${act}`);
        await refused('DELETE', `/users/${encodeURIComponent(name)}`);
      }),
      runs,
    );
    const param = fc.constantFrom('q', 'role', 'enabled', 'locked', 'firstAccess', 'limit', 'cursor', 'x');
    await fc.assert(
      fc.asyncProperty(fc.dictionary(param, fc.string({ maxLength: 300 }), { maxKeys: 4 }), async (query) => {
        const r = await admin(t, auths.root, 'GET', `/users?${new URLSearchParams(query)}`);
        assert.ok(r.status === 200 || r.status === 400, `${JSON.stringify(query)}: ${r.status}`);
      }),
      runs,
    );
    assert.deepEqual(await snapshot(t), before);
    assert.deepEqual(t.responseProblems, []);
  });
});
