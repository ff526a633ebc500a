// (ext) The signed-in account's API keys (docs/api-keys.md): GET {base}/keys lists them, POST
// {base}/keys makes one and shows it once, DELETE {base}/keys/{id} revokes one. Managing keys
// needs a password, a token or a key without scopes: a narrow key cannot make a wider one.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { currentUser, requireUser } from '../../platform/http/auth-hooks.js';
import { successEnvelope } from '../../platform/http/presenters.js';
import { BASIC_OR_BEARER, errors, json, successExample } from '../../platform/http/schemas.js';
import { keySpec } from './key-service.js';
import { createdExample, KEYS_HANDLER, KeyIdParams, keyExample, NewKeyBody } from './schemas-keys.js';

const doc = (summary: string, id: string, sample: object) => ({
  tags: ['keys'],
  summary: `(ext) ${summary}`,
  security: BASIC_OR_BEARER,
  response: {
    200: json(id, 'Done.', successExample(KEYS_HANDLER, 'alice', sample)),
    ...errors({
      400: 'Invalid parameters or body: nothing changed.',
      401: 'No or wrong credentials.',
      403: 'An API key with scopes cannot manage keys.',
      404: 'No such key of yours.',
    }),
  },
});

const noStore = { 'Cache-Control': 'no-store' };

export const keyRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { apiKeys, clock } = app.services;

  app.get(
    '/keys',
    { schema: doc('Your API keys', 'KeyList', { keys: [keyExample] }), preHandler: requireUser },
    async (request, reply) => {
      const user = currentUser(request);
      const keys = await apiKeys.list(user);
      return reply.headers(noStore).send(successEnvelope(KEYS_HANDLER, user.name, { keys }));
    },
  );

  app.post(
    '/keys',
    {
      schema: {
        ...doc('Make an API key; the key is shown this once', 'KeyCreated', { apiKey: createdExample }),
        consumes: ['application/json', 'application/x-www-form-urlencoded'],
        body: NewKeyBody,
      },
      preHandler: requireUser,
    },
    async (request, reply) => {
      const user = currentUser(request);
      const spec = keySpec(request.body, clock.now());
      const { key, secret } = await apiKeys.create(user, spec, { via: 'self', remote: request.ip });
      return reply
        .headers(noStore)
        .send(successEnvelope(KEYS_HANDLER, user.name, { apiKey: { ...key, key: secret } }));
    },
  );

  app.delete(
    '/keys/:id',
    {
      schema: {
        ...doc('Revoke one of your API keys', 'KeyRevoked', { apiKey: keyExample }),
        params: KeyIdParams,
      },
      preHandler: requireUser,
    },
    async (request, reply) => {
      const user = currentUser(request);
      const apiKey = await apiKeys.revoke(request.params.id, { via: 'self', remote: request.ip }, user);
      return reply.headers(noStore).send(successEnvelope(KEYS_HANDLER, user.name, { apiKey }));
    },
  );
};
