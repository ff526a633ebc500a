// (ext) The admin API's accounts under {base}/admin/users (docs/admin.md, "Users"). Registered by
// the admin plugin (./routes.ts), whose hook has already checked the role: an auditor reads, an
// admin also changes. Thin: UserAdminService decides; every change names the acting account.
// Bodies are JSON objects of exactly the documented fields, each a string (or null where it may
// be cleared): anything else is a 400 before anything changes.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { currentUser } from '../../platform/http/auth-hooks.js';
import { badRequest } from '../../platform/http/http-error.js';
import { BASIC_OR_BEARER, errors, json, successExample } from '../../platform/http/schemas.js';
import type { UserRow } from '../../platform/sql/schema.js';
import { isoOrNull as iso } from '../../platform/time.js';
import { roleOf } from '../users/roles.js';
import type { ChangedBy } from '../users/user-service.js';
import { sendUncached } from './routes-shared.js';
import { ADMIN_USERS_HANDLER } from './schemas-users.js';
import { PAGE_LIMITS, type UserAdminService } from './user-admin-service.js';

/** UserSummary (schemas-users.ts). */
function summaryOf(row: UserRow, admin: UserAdminService) {
  const lockedUntil = admin.lockedUntil(row);
  return {
    name: row.name,
    email: row.email,
    mobile: row.mobile,
    lang: row.lang,
    role: roleOf(row),
    enabled: Boolean(row.enabled),
    locked: lockedUntil !== null,
    lockedUntil: iso(lockedUntil),
    firstAccess: Boolean(row.first_access),
    created: iso(row.created_at)!,
    lastSignIn: iso(row.last_sign_in_at),
  };
}

const summaryExample = {
  name: 'bob',
  email: 'bob@example.com',
  mobile: null,
  lang: 'en',
  role: 'user',
  enabled: true,
  locked: false,
  lockedUntil: null,
  firstAccess: false,
  created: '2025-01-01T12:00:00.000Z',
  lastSignIn: '2025-01-02T08:30:00.000Z',
};
const usageExample = {
  areaFiles: 3,
  areaBytes: 52341,
  backupFiles: 1,
  backupBytes: 1024,
  bytes: 53365,
  quota: 10737418240,
  maxFileSize: 1073741824,
};
const example = (extra: object) => successExample(ADMIN_USERS_HANDLER, 'alice', extra);

const doc = (summary: string, id: string, sample: object) => ({
  tags: ['admin'],
  summary: `(ext) ${summary}`,
  security: BASIC_OR_BEARER,
  response: {
    200: json(id, 'Done.', example(sample)),
    ...errors({
      400: 'Invalid parameters or body: nothing changed.',
      401: 'No or wrong credentials.',
      403: 'Not an admin (an auditor may only read).',
      404: 'No such account.',
      409: 'The change would leave no enabled admin, or the account cannot get the e-mail.',
    }),
  },
});

const Flag = Type.Union([Type.Literal('true'), Type.Literal('false')]);
const ListQuery = Type.Object({
  q: Type.Optional(Type.String({ maxLength: 254 })),
  role: Type.Optional(Type.Union([Type.Literal('user'), Type.Literal('auditor'), Type.Literal('admin')])),
  enabled: Type.Optional(Flag),
  locked: Type.Optional(Flag),
  firstAccess: Type.Optional(Flag),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: PAGE_LIMITS.max })),
  cursor: Type.Optional(Type.String({ maxLength: 200 })),
});
const NameParams = Type.Object({ name: Type.String({ minLength: 1, maxLength: 254 }) });
const Text = Type.String({ maxLength: 1024 });
const Clearable = Type.Union([Text, Type.Null()]);
const NewUserBody = Type.Object({
  name: Text,
  password: Type.Optional(Clearable),
  email: Type.Optional(Clearable),
  mobile: Type.Optional(Clearable),
  lang: Type.Optional(Text),
  role: Type.Optional(Text),
});
const ChangeBody = Type.Object({
  email: Type.Optional(Clearable),
  mobile: Type.Optional(Clearable),
  lang: Type.Optional(Text),
  role: Type.Optional(Text),
  quota: Type.Optional(Clearable),
  maxFileSize: Type.Optional(Clearable),
});

/**
 * A preValidation hook: the body is a JSON object of exactly these fields (the `required` ones
 * present), each a string or, where `nullable` lists it, null. Checked on the body as sent, before
 * the schema's coercions (which would turn 5 into "5") or removal of unknown fields (a typo would
 * change nothing and answer 200).
 */
function exactBody(fields: string[], required: string[], nullable: string[]) {
  return async (request: FastifyRequest) => {
    const body = request.body as unknown;
    if (body === null || typeof body !== 'object' || Array.isArray(body))
      throw badRequest('the body must be a JSON object');
    const entries = Object.entries(body as Record<string, unknown>);
    for (const [key, value] of entries) {
      if (!fields.includes(key)) throw badRequest(`unknown field "${key}" (known: ${fields.join(', ')})`);
      if (typeof value !== 'string' && !(value === null && nullable.includes(key)))
        throw badRequest(`${key} must be a string${nullable.includes(key) ? ' or null' : ''}`);
    }
    for (const key of required) if (!(key in body)) throw badRequest(`${key} is required`);
    if (entries.length === 0) throw badRequest(`nothing to change: give ${fields.join(', ')}`);
  };
}

const flag = (v: 'true' | 'false' | undefined) => (v === undefined ? undefined : v === 'true');

type AdminApp = Parameters<FastifyPluginAsyncTypebox>[0];

/** The acting admin, for the audit rows. */
const by = (request: FastifyRequest): ChangedBy => ({
  via: 'admin',
  actor: currentUser(request).name,
  remote: request.ip,
});

const send = (request: FastifyRequest, reply: FastifyReply, extra: object) =>
  sendUncached(ADMIN_USERS_HANDLER, request, reply, extra);

export const adminUserRoutes: FastifyPluginAsyncTypebox = async (app) => {
  readRoutes(app);
  changeRoutes(app);
  stateRoutes(app);
};

/** GET /users, GET /users/{name} */
function readRoutes(app: AdminApp): void {
  const admin = app.services.userAdmin;
  app.get(
    '/users',
    {
      schema: {
        ...doc('Accounts, in name order, a page at a time', 'AdminUserList', {
          users: [summaryExample],
          next: null,
        }),
        querystring: ListQuery,
      },
    },
    async (request, reply) => {
      const { q, role, enabled, locked, firstAccess, limit, cursor } = request.query;
      const page = await admin.list({
        q: q || undefined,
        role,
        enabled: flag(enabled),
        locked: flag(locked),
        firstAccess: flag(firstAccess),
        limit,
        cursor,
      });
      return send(request, reply, { users: page.accounts.map((a) => summaryOf(a, admin)), next: page.next });
    },
  );
  app.get(
    '/users/:name',
    {
      schema: {
        ...doc('One account with its usage', 'AdminUser', {
          account: { ...summaryExample, usage: usageExample },
        }),
        params: NameParams,
      },
    },
    async (request, reply) => {
      const { account, usage } = await admin.get(request.params.name);
      return send(request, reply, { account: { ...summaryOf(account, admin), usage } });
    },
  );
}

/** POST /users, PATCH /users/{name} */
function changeRoutes(app: AdminApp): void {
  const admin = app.services.userAdmin;
  const changed = (request: FastifyRequest, reply: FastifyReply, row: UserRow) =>
    send(request, reply, { account: summaryOf(row, admin) });
  app.post(
    '/users',
    {
      schema: {
        ...doc('Create an account (without a password: first access, e-mailed at once)', 'AdminUserChanged', {
          account: { ...summaryExample, lastSignIn: null, firstAccess: true },
        }),
        body: NewUserBody,
        consumes: ['application/json'],
      },
      preValidation: exactBody(
        ['name', 'password', 'email', 'mobile', 'lang', 'role'],
        ['name'],
        ['password', 'email', 'mobile'],
      ),
    },
    async (request, reply) => changed(request, reply, await admin.create(request.body, by(request))),
  );

  app.patch(
    '/users/:name',
    {
      schema: {
        ...doc(
          "Change an account's e-mail, mobile, language, role, quota or largest file",
          'AdminUserChanged',
          {
            account: summaryExample,
          },
        ),
        params: NameParams,
        body: ChangeBody,
        consumes: ['application/json'],
      },
      preValidation: exactBody(
        ['email', 'mobile', 'lang', 'role', 'quota', 'maxFileSize'],
        [],
        ['email', 'mobile', 'quota', 'maxFileSize'],
      ),
    },
    async (request, reply) =>
      changed(request, reply, await admin.update(request.params.name, request.body, by(request))),
  );
}

/** disable, enable, unlock, password-reset, DELETE */
function stateRoutes(app: AdminApp): void {
  const admin = app.services.userAdmin;
  for (const [action, summary] of [
    ['disable', 'Disable an account and end its sessions'],
    ['enable', 'Enable an account'],
    ['unlock', 'End a sign-in lockout and a password-recovery lockout'],
  ] as const) {
    app.post(
      `/users/:name/${action}`,
      { schema: { ...doc(summary, 'AdminUserChanged', { account: summaryExample }), params: NameParams } },
      async (request, reply) => {
        const name = request.params.name;
        const row =
          action === 'unlock'
            ? await admin.unlock(name, by(request))
            : await admin.setEnabled(name, action === 'enable', by(request));
        return send(request, reply, { account: summaryOf(row, admin) });
      },
    );
  }

  app.post(
    '/users/:name/password-reset',
    {
      schema: {
        ...doc('E-mail the password-reset message (a PIN and a link)', 'AdminPasswordResetSent', {
          sent: true,
        }),
        params: NameParams,
      },
    },
    async (request, reply) => {
      await admin.sendPasswordReset(request.params.name, by(request));
      return send(request, reply, { sent: true });
    },
  );

  app.delete(
    '/users/:name',
    {
      schema: {
        ...doc(
          'Remove an account, its files in area and backup with their links; audit rows stay',
          'AdminUserRemoved',
          { removed: 'bob' },
        ),
        params: NameParams,
      },
    },
    async (request, reply) => {
      const removed = await admin.remove(request.params.name, by(request));
      return send(request, reply, { removed });
    },
  );
}
