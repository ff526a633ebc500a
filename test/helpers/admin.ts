// The admin API for tests: calls with an account's credentials, snapshots of what a refused call
// must leave alone, and the role walk: every operation openapi.json lists under /admin, called as a
// `user` (403 everywhere), as an auditor (403 on every change, a read answered), without
// credentials (401), so routes added later are covered without naming them here.
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { MailSink } from './peers.js';
import { basic, call, closeWith, type StartOptions, serverFor, type TestServer } from './server.js';

export type Auth = string;

/** An account's Bearer authorization, from the token endpoint. */
export async function bearer(t: TestServer, name: string, password: string): Promise<Auth> {
  const r = await call(`${t.base}/oauth2/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'password', username: name, password }).toString(),
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return `Bearer ${String(r.body['access_token'])}`;
}

export { basic };

export const PASSWORDS = { root: 'root-password-1', aud: 'aud-password-1', joe: 'joe-password-1' };

/** A server with an SMTP sink and three accounts: root (admin), aud (auditor), joe (user). */
export async function adminSetup(ctx: TestContext, opts: StartOptions = {}) {
  const mail = closeWith(ctx, await MailSink.start());
  const t = await serverFor(ctx, {
    ...opts,
    env: { REMESSA_SMTP_URL: mail.url, REMESSA_MAIL_FROM: 'Remessa <no-reply@remessa.test>', ...opts.env },
  });
  await t.createUser('root', PASSWORDS.root, { role: 'admin' });
  await t.createUser('aud', PASSWORDS.aud, { role: 'auditor' });
  await t.createUser('joe', PASSWORDS.joe);
  const auths = {
    root: await bearer(t, 'root', PASSWORDS.root),
    aud: await bearer(t, 'aud', PASSWORDS.aud),
    joe: await bearer(t, 'joe', PASSWORDS.joe),
  };
  return { t, mail, auths };
}

/** The audit rows of `event`, oldest first. */
export const auditRows = (t: TestServer, event: string) =>
  t.server.services.db.selectFrom('audit').selectAll().where('event', '=', event).orderBy('id').execute();

/** The fields every listing of an account starts with: the admin API's and `user list --json`. */
export const ACCOUNT_FIELDS = ['name', 'email', 'mobile', 'lang', 'role', 'enabled'];

/**
 * After two admins demoted each other at once: exactly one of `pair` is still an enabled admin;
 * the other is made admin again, for the next round.
 */
export async function restoreDemoted(t: TestServer, pair: [string, string]): Promise<void> {
  const admins = await t.server.services.db
    .selectFrom('users')
    .select('name')
    .where('role', '=', 'admin')
    .where('enabled', '=', 1)
    .execute();
  assert.equal(admins.length, 1);
  const [x, y] = pair;
  await t.server.services.users.update(admins[0]!.name === x ? y : x, { role: 'admin' });
}

/**
 * Two admins' answers after demoting each other at once: exactly one wins (200); the other is
 * refused, with 409 when it passed the role check and lost under the admins' lock, or with 403
 * when its own demotion had already committed before its role was read (the requests serialized).
 */
export function assertOneDemotionWins(answers: { status: number; body: unknown }[]): void {
  const [first, second] = answers.map((r) => r.status).sort();
  assert.ok(first === 200 && (second === 403 || second === 409), JSON.stringify(answers.map((r) => r.body)));
}

/** {base}/admin + `path` with `auth`; a body other than a string is sent as JSON. */
export function admin(
  t: TestServer,
  auth: Auth | null,
  method: string,
  path: string,
  body?: unknown,
): ReturnType<typeof call> {
  const headers: Record<string, string> = auth ? { Authorization: auth } : {};
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  return call(`${t.base}/admin${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** Every account row and how many audit rows there are: what a refused change leaves as it was. */
export async function snapshot(t: TestServer): Promise<unknown> {
  const { db } = t.server.services;
  const users = await db.selectFrom('users').selectAll().orderBy('id').execute();
  const audit = await db
    .selectFrom('audit')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('event', 'like', 'user.%')
    .executeTakeFirstOrThrow();
  const links = await db
    .selectFrom('change_tokens')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return { users, userEvents: Number(audit.n), changeLinks: Number(links.n) };
}

export interface Operation {
  method: string;
  /** As openapi.json writes it, relative to {base}: /admin/users/{name} */
  path: string;
}

/** Every operation openapi.json documents under /admin (HEAD and OPTIONS aside). */
export async function adminOperations(t: TestServer): Promise<Operation[]> {
  const doc = (await call(`${t.base}/openapi.json`)).body as {
    paths: Record<string, Record<string, unknown>>;
  };
  return Object.entries(doc.paths)
    .filter(([path]) => path === '/admin' || path.startsWith('/admin/'))
    .flatMap(([path, methods]) => Object.keys(methods).map((m) => ({ method: m.toUpperCase(), path })))
    .filter((op) => op.method !== 'HEAD' && op.method !== 'OPTIONS');
}

/** A path of `op` with its parameters filled in: `{name}` the given account, any other 1. */
const concrete = (op: Operation, name: string) =>
  op.path
    .replace(/^\/admin/, '')
    .replace(/\{name\}/g, encodeURIComponent(name))
    .replace(/\{[^}]+\}/g, '1');

const isRead = (method: string) => method === 'GET';

/**
 * The role walk: `user` gets 403 on every operation under /admin, `auditor` 403 on every change
 * and an answer below 500 other than 403 on every read, no credentials 401; the accounts and the
 * audit trail's account events stay as they were. `target`: the account path parameters name.
 * Returns the operations walked.
 */
export async function roleWalk(
  t: TestServer,
  auths: { user: Auth; auditor: Auth },
  target: string,
): Promise<Operation[]> {
  const operations = await adminOperations(t);
  assert.ok(operations.length >= 9, `only ${operations.length} admin operations documented`);
  const before = await snapshot(t);
  for (const op of operations) {
    const path = concrete(op, target);
    const body = isRead(op.method) ? undefined : { name: 'walk-created', role: 'admin', email: null };
    const where = `${op.method} ${op.path}`;
    const asUser = await admin(t, auths.user, op.method, path, body);
    assert.equal(asUser.status, 403, `${where} as a user: ${JSON.stringify(asUser.body)}`);
    assert.equal(asUser.body['status'], 403, where);
    const asAuditor = await admin(t, auths.auditor, op.method, path, body);
    if (isRead(op.method)) {
      assert.ok(
        asAuditor.status < 500 && asAuditor.status !== 403,
        `${where} as an auditor: ${asAuditor.status}`,
      );
    } else {
      assert.equal(asAuditor.status, 403, `${where} as an auditor: ${JSON.stringify(asAuditor.body)}`);
      assert.match(String(asAuditor.body['detail']), /admin role is required/, where);
    }
    const anonymous = await admin(t, null, op.method, path, body);
    assert.equal(anonymous.status, 401, `${where} without credentials`);
  }
  assert.deepEqual(await snapshot(t), before, 'a refused call changed something');
  return operations;
}
