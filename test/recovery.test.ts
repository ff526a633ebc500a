// Password recovery and first access end to end: real HTTP, real SMTP (smtp-server + mailparser).
// The tests read the PIN and link from the delivered mail, like a user would.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ParsedMail } from 'mailparser';
import { rowCount } from './helpers/files.js';
import { MailSink } from './helpers/peers.js';
import {
  call,
  closeAll,
  ERROR_KEYS,
  errorKeys,
  GO_TIME,
  startTestServer,
  type TestServer,
} from './helpers/server.js';

const JSON_TYPE = { Content_type: 'application/json' };
const form = (o: Record<string, string>) => new URLSearchParams(o).toString();

function pinOf(mail: ParsedMail): string {
  const m = /PIN\): (\d{6})/.exec(mail.text ?? '');
  assert.ok(m, `no PIN in mail: ${mail.text}`);
  return m[1]!;
}

function linkOf(mail: ParsedMail): string {
  const m = /(http\S+\/auth\/change\?\S+)/.exec(mail.text ?? '');
  assert.ok(m, `no link in mail: ${mail.text}`);
  return m[1]!;
}

const kOf = (linkURL: string) => new URL(linkURL).searchParams.get('k')!;

describe('password recovery', () => {
  let t: TestServer;
  let mail: MailSink;
  const secrets: string[] = [];

  before(async () => {
    mail = await MailSink.start();
    t = await startTestServer({
      env: { REMESSA_SMTP_URL: mail.url, REMESSA_MAIL_FROM: 'Remessa <no-reply@remessa.test>' },
    });
  });
  after(async () => {
    await closeAll(t, mail);
    // Passwords, PINs and tokens never reach the log, whatever happened above.
    const logs = (t?.logs ?? []).join('\n');
    for (const s of secrets) assert.ok(!logs.includes(s), `secret leaked into the log: ${s}`);
  });

  const forget = (u: string, path = 'forgetParameters') =>
    call(`${t.base}/auth/${path}?u=${encodeURIComponent(u)}`, { headers: JSON_TYPE });
  const change = (fields: Record<string, string>, query = '') =>
    call(`${t.base}/auth/changeParameters${query}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(fields),
    });
  const token = (username: string, password: string) =>
    call(`${t.base}/oauth2/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: form({ grant_type: 'password', username, password }),
    });

  test('forget → mail with PIN and link → change → old bearer revoked, link cannot be reused', async () => {
    await t.createUser('alice', 'old-password-1', { email: 'alice@example.com', lang: 'en' });
    const before = await token('alice', 'old-password-1');
    assert.equal(before.status, 200);
    const oldBearer = String(before.body['access_token']);

    const started = Date.now();
    const r = await forget('alice');
    assert.ok(Date.now() - started < 3000, 'the response does not wait for SMTP');
    assert.equal(r.status, 200);
    assert.deepEqual(Object.keys(r.body), ['status', 'description', 'apiver', 'time', 'user', 'linkURL']);
    assert.equal(r.body['status'], 0);
    assert.equal(r.body['description'], 'handlerAuthForget:succsessfully');
    assert.equal(r.body['user'], 'alice');
    assert.match(String(r.body['time']), GO_TIME);
    const linkURL = String(r.body['linkURL']);
    assert.match(linkURL, new RegExp(`^${t.base}/auth/change\\?lang=en&k=[A-Za-z0-9_-]{43}$`));
    assert.equal(r.headers.get('cache-control'), 'no-store');

    const m = await mail.take('alice@example.com');
    assert.equal(m.subject, 'Remessa: code to change your password');
    assert.equal(m.from?.value[0]?.address, 'no-reply@remessa.test');
    assert.equal(linkOf(m), linkURL);
    const pin = pinOf(m);
    const k = kOf(linkURL);
    secrets.push(pin, k, 'new-password-1', 'old-password-1');

    const ok = await change({ k, p: pin, z: 'new-password-1' });
    assert.equal(ok.status, 200);
    assert.equal(ok.body['description'], 'handlerAuthForget:succsessfully');
    assert.equal(ok.body['user'], 'alice');
    assert.equal(ok.body['linkURL'], linkURL);

    assert.equal((await token('alice', 'old-password-1')).status, 401);
    assert.equal((await token('alice', 'new-password-1')).status, 200);
    const logout = await call(`${t.base}/auth/logout`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${oldBearer}` },
    });
    assert.equal(logout.status, 401, 'bearer tokens issued before the change are revoked');

    const again = await change({ k, p: pin, z: 'another-password' });
    assert.equal(again.status, 401);
    assert.deepEqual(errorKeys(again.body), ERROR_KEYS);
    assert.equal(again.body['description'], 'Unauthorized');
    assert.equal((await token('alice', 'new-password-1')).status, 200);
  });

  test('HEAD sends nothing and issues no link (link scanners and proxies send HEAD freely)', async () => {
    await t.createUser('headless', 'headless-password', { email: 'headless@example.com' });
    const count = (table: 'outbox' | 'change_tokens') => rowCount(t, table);
    const before = [await count('outbox'), await count('change_tokens')];
    for (const path of ['forgetParameters', 'forget', 'firstaccess']) {
      const r = await fetch(`${t.base}/auth/${path}?u=headless`, { method: 'HEAD' });
      assert.equal(r.status, 405, path);
      assert.equal(r.headers.get('allow'), 'GET');
    }
    assert.deepEqual([await count('outbox'), await count('change_tokens')], before);
  });

  test('alias /auth/forget; missing u 400, unknown user 401, disabled or no e-mail 403', async () => {
    await t.createUser('bob', 'bob-password', { email: 'bob@example.com' });
    await t.createUser('noemail', 'noemail-password', { email: '' });
    await t.createUser('off', 'off-password');
    await t.server.services.users.setEnabled('off', false);

    const alias = await forget('BOB', 'forget');
    assert.equal(alias.status, 200);
    assert.equal(alias.body['user'], 'bob');
    assert.match(String(alias.body['linkURL']), /\/auth\/change\?lang=pt&k=/);
    const m = await mail.take('bob@example.com');
    assert.equal(m.subject, 'Remessa: código para alterar a sua senha');
    secrets.push(pinOf(m), kOf(String(alias.body['linkURL'])));

    for (const [url, status] of [
      [`${t.base}/auth/forgetParameters`, 400],
      [`${t.base}/auth/forgetParameters?u=`, 400],
      [`${t.base}/auth/forgetParameters?u=nobody`, 401],
      [`${t.base}/auth/forgetParameters?u=noemail`, 403],
      [`${t.base}/auth/forgetParameters?u=off`, 403],
    ] as const) {
      const r = await call(url, { headers: JSON_TYPE });
      assert.equal(r.status, status, url);
      assert.equal(r.body['status'], status);
      assert.deepEqual(errorKeys(r.body), ERROR_KEYS);
      assert.equal(r.body['user'], undefined);
    }
    // A second link for the same user within a minute: 429, no mail.
    const soon = await forget('bob');
    assert.equal(soon.status, 429);
    assert.equal(soon.body['description'], 'Too Many Requests');
    assert.ok(Number(soon.headers.get('retry-after')) > 0);
  });

  test('forgetParameters by e-mail address: the link goes to that mailbox, the answer reveals nothing', async () => {
    await t.createUser('helena', 'old-password-h', { email: 'Helena@Example.com', lang: 'en' });
    await t.createUser('ivo', 'ivo-password', { email: 'ivo@example.com' });
    await t.server.services.users.setEnabled('ivo', false);
    const count = () => rowCount(t, 'outbox');
    const strip = (body: Record<string, unknown>) => ({ ...body, time: undefined });

    const before = await count();
    const unknown = await forget('nobody@example.com');
    const disabled = await forget('ivo@example.com');
    assert.equal(await count(), before, 'no message for an unknown address or a disabled account');
    const known = await forget('helena@example.com');
    for (const r of [unknown, disabled, known]) {
      assert.equal(r.status, 401);
      assert.deepEqual(strip(r.body), strip(unknown.body));
    }
    assert.equal(await count(), before + 1);

    const m = await mail.take('Helena@Example.com');
    assert.equal(m.subject, 'Remessa: code to change your password');
    assert.match(m.text ?? '', /Hello helena,/);
    const k = kOf(linkOf(m));
    const pin = pinOf(m);
    secrets.push(k, pin, 'new-password-h');
    assert.equal((await change({ k, p: pin, z: 'new-password-h' })).status, 200);
    assert.equal((await token('helena', 'new-password-h')).status, 200);

    // Asked again within a minute: still the same 401, and no second message.
    const soon = await forget('HELENA@example.com');
    assert.deepEqual(strip(soon.body), strip(unknown.body));
    assert.equal(await count(), before + 1);
    // A user name keeps its documented answers.
    assert.equal((await forget('helena')).status, 429);
  });

  test('k alone sends a fresh PIN (once a minute); the old PIN stops working', async () => {
    await t.createUser('carol', 'carol-password', { email: 'carol@example.com', lang: 'es' });
    const r = await forget('carol');
    const k = kOf(String(r.body['linkURL']));
    const first = pinOf(await mail.take('carol@example.com'));
    secrets.push(k, first);

    const tooSoon = await change({ k });
    assert.equal(tooSoon.status, 429);
    await t.advanceClock(61_000);
    const fresh = await change({ k });
    assert.equal(fresh.status, 200);
    assert.equal(fresh.body['linkURL'], r.body['linkURL']);
    const m = await mail.take('carol@example.com');
    assert.equal(m.subject, 'Remessa: código para cambiar su contraseña');
    const second = pinOf(m);
    secrets.push(second);
    if (second !== first) {
      assert.equal((await change({ k, p: first, z: 'carol-new-pass' })).status, 403);
    }
    assert.equal((await change({ k, p: second, z: 'carol-new-pass' })).status, 200);
    secrets.push('carol-new-pass');
  });

  test('two PINs asked for one link at once: exactly one is sent, the other gets 429', async () => {
    await t.createUser('racer', 'racer-password', { email: 'racer@example.com', lang: 'en' });
    const r = await forget('racer');
    const k = kOf(String(r.body['linkURL']));
    secrets.push(k, pinOf(await mail.take('racer@example.com')));
    await t.advanceClock(61_000);
    const asks = await Promise.all([change({ k }), change({ k })]);
    assert.deepEqual(asks.map((a) => a.status).sort(), [200, 429]);
    const pin = pinOf(await mail.take('racer@example.com'));
    secrets.push(pin);
    assert.equal(await mail.take('racer@example.com', 500).catch(() => null), null, 'only one PIN mail');
    assert.equal((await change({ k, p: pin, z: 'racer-new-password' })).status, 200);
    secrets.push('racer-new-password');
  });

  test('five wrong PINs kill the link; the password is unchanged', async () => {
    await t.createUser('dave', 'dave-password');
    const r = await forget('dave');
    const k = kOf(String(r.body['linkURL']));
    const pin = pinOf(await mail.take('dave@example.com'));
    secrets.push(k, pin);
    const wrong = pin === '000000' ? '111111' : '000000';
    for (let i = 0; i < 5; i++) {
      const w = await change({ k, p: wrong, z: 'dave-new-password' });
      assert.equal(w.status, 403);
      assert.equal(w.body['description'], 'Forbidden');
    }
    const dead = await change({ k, p: pin, z: 'dave-new-password' });
    assert.equal(dead.status, 401);
    assert.equal((await token('dave', 'dave-password')).status, 200);
    const audit = await t.server.services.audit.query({ user: 'dave' });
    assert.equal(audit.filter((a) => a.event === 'pin.failed').length, 5);
    assert.ok(audit.some((a) => a.event === 'password.change_failed' && /disabled/.test(a.detail ?? '')));
  });

  test('expired PIN 403, expired link 401, nothing changed', async () => {
    await t.createUser('erin', 'erin-password');
    const r = await forget('erin');
    const k = kOf(String(r.body['linkURL']));
    const pin = pinOf(await mail.take('erin@example.com'));
    secrets.push(k, pin);
    await t.advanceClock(181_000); // REMESSA_PIN_SECONDS default 180
    const expired = await change({ k, p: pin, z: 'erin-new-password' });
    assert.equal(expired.status, 403);
    assert.match(String(expired.body['detail']), /expired/);
    await t.advanceClock(30 * 60_000);
    assert.equal((await change({ k, p: pin, z: 'erin-new-password' })).status, 401);
    assert.equal((await change({ k })).status, 401, 'no fresh PIN for an expired link');
    assert.equal((await token('erin', 'erin-password')).status, 200);
  });

  test('bad input: no k 400, unknown k 401, p without z 400, weak z 400, z without p 400', async () => {
    await t.createUser('frank', 'frank-password');
    const r = await forget('frank');
    const k = kOf(String(r.body['linkURL']));
    const pin = pinOf(await mail.take('frank@example.com'));
    secrets.push(k, pin);

    assert.equal((await change({})).status, 400);
    assert.equal((await change({ p: pin, z: 'frank-new-password' })).status, 400);
    assert.equal((await change({ k: 'x'.repeat(43), p: pin, z: 'frank-new-password' })).status, 401);
    const noZ = await change({ k, p: pin });
    assert.equal(noZ.status, 400);
    assert.deepEqual(errorKeys(noZ.body), ERROR_KEYS);
    const weak = await change({ k, p: pin, z: 'short' });
    assert.equal(weak.status, 400);
    assert.match(String(weak.body['detail']), /at least 8/);
    assert.equal((await change({ k, z: 'frank-new-password' })).status, 400);
    const badJson = await call(`${t.base}/auth/changeParameters`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: '{"k":',
    });
    assert.equal(badJson.status, 400);
    // None of these counted as a wrong PIN or changed anything: the right request still works.
    assert.equal((await token('frank', 'frank-password')).status, 200);
    const ok = await change({ k, p: pin, z: 'frank-new-password' });
    assert.equal(ok.status, 200);
    secrets.push('frank-new-password');
  });

  test('k, p, z in the query string (Content_type: application/json, no body) and in a form body', async () => {
    await t.createUser('gina', 'gina-password');
    const r = await forget('gina');
    const k = kOf(String(r.body['linkURL']));
    const pin = pinOf(await mail.take('gina@example.com'));
    secrets.push(k, pin, 'gina-new-password');
    const q = `?${form({ k, p: pin, z: 'gina-new-password' })}`;
    const ok = await call(`${t.base}/auth/changeParameters${q}`, { method: 'POST', headers: JSON_TYPE });
    assert.equal(ok.status, 200);
    assert.equal((await token('gina', 'gina-new-password')).status, 200);
    const access = t.logs.filter((l) => l.includes('/auth/changeParameters?'));
    assert.ok(access.length > 0);
    assert.ok(access.every((l) => l.includes('k=[REDACTED]') && l.includes('p=[REDACTED]')));

    // Form body; a body field wins over the query string's.
    await t.advanceClock(61_000);
    const r2 = await forget('gina');
    const k2 = kOf(String(r2.body['linkURL']));
    const pin2 = pinOf(await mail.take('gina@example.com'));
    secrets.push(k2, pin2, 'gina-third-password');
    const viaForm = await call(`${t.base}/auth/changeParameters?k=bogus`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: form({ k: k2, p: pin2, z: 'gina-third-password' }),
    });
    assert.equal(viaForm.status, 200);
    assert.equal((await token('gina', 'gina-third-password')).status, 200);
  });

  test('first access: only for users without a password yet; link then sets it', async () => {
    await t.createUser('newbie', null, { email: 'newbie@example.com', lang: 'pt' });
    await t.createUser('veteran', 'veteran-password');
    const no = await call(`${t.base}/auth/firstaccess?u=veteran`);
    assert.equal(no.status, 403);
    const r = await call(`${t.base}/auth/firstaccess?u=newbie`);
    assert.equal(r.status, 200);
    assert.equal(r.body['description'], 'handlerAuthForget:succsessfully');
    const m = await mail.take('newbie@example.com');
    assert.equal(m.subject, 'Remessa: crie a sua senha');
    assert.match(m.text ?? '', /primeiro acesso/);
    const k = kOf(String(r.body['linkURL']));
    const pin = pinOf(m);
    secrets.push(k, pin, 'newbie-password');
    assert.equal((await change({ k, p: pin, z: 'newbie-password' })).status, 200);
    assert.equal((await token('newbie', 'newbie-password')).status, 200);
    const user = await t.server.services.users.get('newbie');
    assert.equal(user.first_access, 0);
    await t.advanceClock(61_000);
    assert.equal((await call(`${t.base}/auth/firstaccess?u=newbie`)).status, 403, 'no longer first access');
  });

  /** A new link for `user` (after the one-a-minute wait) and the PIN e-mailed with it. */
  async function freshLink(user: string): Promise<{ k: string; pin: string }> {
    await t.advanceClock(61_000);
    const r = await forget(user);
    assert.equal(r.status, 200);
    const k = kOf(String(r.body['linkURL']));
    const pin = pinOf(await mail.take(`${user}@example.com`));
    secrets.push(k, pin);
    return { k, pin };
  }
  const wrongFor = (pin: string) => (pin === '000000' ? '111111' : '000000');
  const outboxOf = (user: string, kind: string) =>
    t.server.services.db
      .selectFrom('outbox')
      .select('id')
      .where('kind', '=', kind)
      .where('user_name', '=', user)
      .execute();

  test('ten wrong PINs over several links lock recovery for the account; the owner is told once', async () => {
    await t.createUser('target', 'target-password', { email: 'target@example.com', lang: 'en' });
    // Five on one link (it dies), four on the next: nine, no lock yet.
    const a = await freshLink('target');
    for (let i = 0; i < 5; i++)
      assert.equal((await change({ k: a.k, p: wrongFor(a.pin), z: 'target-new-pass' })).status, 403);
    const b = await freshLink('target');
    for (let i = 0; i < 4; i++)
      assert.equal((await change({ k: b.k, p: wrongFor(b.pin), z: 'target-new-pass' })).status, 403);
    // The tenth (three at once: only one of them locks and warns).
    const c = await freshLink('target');
    const tenth = await Promise.all(
      [0, 1, 2].map(() => change({ k: c.k, p: wrongFor(c.pin), z: 'target-new-pass' })),
    );
    assert.deepEqual(
      tenth.map((w) => w.status),
      [403, 403, 403],
    );

    // Locked: the right PIN on the live link is refused as a dead link is, and no new link.
    const right = await change({ k: c.k, p: c.pin, z: 'target-new-pass' });
    assert.equal(right.status, 401);
    assert.deepEqual(errorKeys(right.body), ERROR_KEYS);
    assert.equal(right.body['description'], 'Unauthorized');
    assert.equal((await change({ k: c.k })).status, 401, 'no fresh PIN either');
    await t.advanceClock(61_000);
    const refused = await forget('target');
    assert.equal(refused.status, 429);
    assert.equal(refused.body['description'], 'Too Many Requests');
    assert.ok(Number(refused.headers.get('retry-after')) > 3000);
    assert.equal((await call(`${t.base}/auth/forget?u=TARGET`)).status, 429);
    assert.equal((await token('target', 'target-password')).status, 200, 'the password is unchanged');

    const warning = await mail.take('target@example.com');
    assert.equal(warning.subject, 'Remessa: password recovery locked on your account');
    assert.match(warning.text ?? '', /entered 10 wrong security codes/);
    assert.match(warning.text ?? '', /locked for 1 hour/);
    assert.equal((await outboxOf('target', 'recovery-locked')).length, 1, 'exactly one warning');
    const audit = await t.server.services.audit.query({ user: 'target' });
    assert.equal(audit.filter((e) => e.event === 'password.recovery_locked').length, 1);

    // The lock ends after an hour; then recovery works again, with the right PIN.
    await t.advanceClock(3600_000);
    const d = await freshLink('target');
    assert.equal((await change({ k: d.k, p: d.pin, z: 'target-new-pass' })).status, 200);
    secrets.push('target-new-pass');
    assert.equal((await token('target', 'target-new-pass')).status, 200);
    assert.equal((await outboxOf('target', 'recovery-locked')).length, 1);
  });

  test('a second lock lasts twice as long; enabling the account lifts it', async () => {
    await t.createUser('twice', 'twice-password', { email: 'twice@example.com', lang: 'pt' });
    const lockOut = async () => {
      for (let round = 0; round < 2; round++) {
        const l = await freshLink('twice');
        for (let i = 0; i < 5; i++) await change({ k: l.k, p: wrongFor(l.pin), z: 'twice-new-pass' });
      }
      assert.match((await mail.take('twice@example.com')).subject ?? '', /recuperação de senha bloqueada/);
    };
    await lockOut();
    await t.advanceClock(3600_000);
    await lockOut();
    await t.advanceClock(3600_000);
    const still = await forget('twice');
    assert.equal(still.status, 429, 'the second lock lasts two hours');
    await t.server.services.users.setEnabled('twice', true);
    assert.equal((await forget('twice')).status, 200);
    secrets.push(pinOf(await mail.take('twice@example.com')));
  });

  test('at most five PIN e-mails an hour to one account, new links and fresh PINs alike', async () => {
    await t.createUser('inbox', 'inbox-password', { email: 'inbox@example.com', lang: 'en' });
    const { k } = await freshLink('inbox');
    for (let i = 0; i < 4; i++) {
      await t.advanceClock(61_000);
      assert.equal((await change({ k })).status, 200);
      secrets.push(pinOf(await mail.take('inbox@example.com')));
    }
    await t.advanceClock(61_000);
    const sixth = await change({ k });
    assert.equal(sixth.status, 429);
    assert.equal(sixth.body['description'], 'Too Many Requests');
    assert.ok(Number(sixth.headers.get('retry-after')) > 0);
    assert.equal((await forget('inbox')).status, 429);
    assert.equal((await outboxOf('inbox', 'password-pin')).length, 5);
    await t.advanceClock(3600_000);
    await freshLink('inbox');
    assert.equal((await outboxOf('inbox', 'password-pin')).length, 6);
  });

  test('every step is audited without secrets', async () => {
    const rows = await t.server.services.audit.query({ limit: 10_000 });
    const events = new Set(rows.map((r) => r.event));
    for (const e of [
      'password.link_issued',
      'pin.sent',
      'pin.failed',
      'password.changed',
      'password.change_failed',
      'notify.queued',
      'notify.sent',
    ]) {
      assert.ok(events.has(e), `audit has ${e}`);
    }
    const all = JSON.stringify(rows);
    for (const s of secrets) assert.ok(!all.includes(s), 'no secret in the audit trail');
  });
});
