// (ext) The admin API's API keys (docs/admin.md, "API keys"): every account's keys listed
// (GET /admin/keys[?user=]), a key made for an account (POST /admin/users/{name}/keys) and any
// key revoked (DELETE /admin/keys/{id}). The admin plugin has checked the role; every change
// names the acting admin in the audit trail.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { notFound } from '../../platform/errors.js';
import { currentUser } from '../../platform/http/auth-hooks.js';
import { BASIC_OR_BEARER, errors, json, successExample } from '../../platform/http/schemas.js';
import { keySpec } from '../keys/key-service.js';
import {
  ADMIN_KEYS_HANDLER,
  createdExample,
  KeyIdParams,
  keyExample,
  NewKeyBody,
} from '../keys/schemas-keys.js';
import type { ChangedBy } from '../users/user-service.js';
import { sendUncached } from './routes-shared.js';

const doc = (summary: string, id: string, sample: object) => ({
  tags: ['admin'],
  summary: `(ext) ${summary}`,
  security: BASIC_OR_BEARER,
  response: {
    200: json(id, 'Done.', successExample(ADMIN_KEYS_HANDLER, 'alice', sample)),
    ...errors({
      400: 'Invalid parameters or body: nothing changed.',
      401: 'No or wrong credentials.',
      403: 'Not an admin (an auditor may only list).',
      404: 'No such account or key.',
    }),
  },
});

export const adminKeyRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { apiKeys, users, clock } = app.services;
  const by = (request: { ip: string }, actor: string): ChangedBy => ({
    via: 'admin',
    actor,
    remote: request.ip,
  });
  const accountNamed = async (name: string) => {
    const account = await users.find(name);
    if (!account) throw notFound(`no user "${name}"`);
    return account;
  };

  app.get(
    '/keys',
    {
      schema: {
        ...doc("Every account's API keys, or one account's", 'AdminKeyList', { keys: [keyExample] }),
        querystring: Type.Object({ user: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })) }),
      },
    },
    async (request, reply) => {
      const owner = request.query.user === undefined ? undefined : await accountNamed(request.query.user);
      const keys = await apiKeys.list(owner);
      return sendUncached(ADMIN_KEYS_HANDLER, request, reply, { keys });
    },
  );

  app.post(
    '/users/:name/keys',
    {
      schema: {
        ...doc('Make an API key for an account; it is shown this once', 'AdminKeyCreated', {
          apiKey: createdExample,
        }),
        params: Type.Object({ name: Type.String({ minLength: 1, maxLength: 256 }) }),
        body: NewKeyBody,
      },
    },
    async (request, reply) => {
      const owner = await accountNamed(request.params.name);
      const spec = keySpec(request.body, clock.now());
      const made = await apiKeys.create(owner, spec, by(request, currentUser(request).name));
      return sendUncached(ADMIN_KEYS_HANDLER, request, reply, { apiKey: { ...made.key, key: made.secret } });
    },
  );

  app.delete(
    '/keys/:id',
    {
      schema: {
        ...doc('Revoke any API key', 'AdminKeyRevoked', { apiKey: keyExample }),
        params: KeyIdParams,
      },
    },
    async (request, reply) => {
      const apiKey = await apiKeys.revoke(request.params.id, by(request, currentUser(request).name));
      return sendUncached(ADMIN_KEYS_HANDLER, request, reply, { apiKey });
    },
  );
};
