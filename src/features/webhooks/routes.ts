// (ext) The signed-in user's webhook subscriptions (docs/webhooks.md):
// GET {base}/webhooks lists them; POST {base}/webhooks with `url` and optional `events` (JSON or
// form body) adds one and shows its signing secret once; DELETE {base}/webhooks?id=
// removes one. Basic or Bearer, like the other per-user endpoints.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { currentUser, requireUser } from '../../platform/http/auth-hooks.js';
import { successEnvelope } from '../../platform/http/presenters.js';
import { BASIC_OR_BEARER, errors, json, successExample } from '../../platform/http/schemas.js';

const webhookExample = {
  id: 1,
  url: 'https://erp.example.com/remessa',
  events: ['file.uploaded'],
  enabled: true,
  disabledReason: null,
  created: '2025-01-01T12:00:00.000Z',
};
const doc = (summary: string, response: ReturnType<typeof json>) => ({
  tags: ['webhooks'],
  summary,
  security: BASIC_OR_BEARER,
  response: {
    200: response,
    ...errors({ 400: 'Invalid parameters.', 401: 'User does not exist or password invalid.' }),
  },
});

const NewWebhook = Type.Object({
  url: Type.String({ maxLength: 2000 }),
  events: Type.Optional(
    Type.Union([
      Type.String({ maxLength: 1000 }),
      Type.Array(Type.String({ maxLength: 64 }), { maxItems: 20 }),
    ]),
  ),
});

const DeleteQuery = Type.Object({
  id: Type.String({ pattern: '^[1-9][0-9]{0,9}$' }),
});

export const webhookRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { webhooks } = app.services;
  const noStore = { 'Cache-Control': 'no-store' };

  app.get(
    '/webhooks',
    {
      schema: doc(
        '(ext) Your webhook subscriptions',
        json(
          'WebhookList',
          'Subscriptions.',
          successExample('handlerWebhooks', 'USER1', { webhooks: [webhookExample] }),
        ),
      ),
      preHandler: requireUser,
      config: { keyScope: 'webhooks' },
    },
    async (request, reply) => {
      const user = currentUser(request);
      const list = (await webhooks.list(user)).map(({ userId: _, ...w }) => w);
      return reply.headers(noStore).send(successEnvelope('handlerWebhooks', user.name, { webhooks: list }));
    },
  );

  app.post(
    '/webhooks',
    {
      schema: {
        ...doc(
          '(ext) Subscribe a URL; the signing secret is shown this once',
          json(
            'WebhookCreated',
            'The subscription with its secret.',
            successExample('handlerWebhooks', 'USER1', { webhook: { ...webhookExample, secret: 'whsec_…' } }),
          ),
        ),
        consumes: ['application/json', 'application/x-www-form-urlencoded'],
        body: NewWebhook,
      },
      preHandler: requireUser,
      config: { keyScope: 'webhooks' },
    },
    async (request, reply) => {
      const user = currentUser(request);
      const { webhook, secret } = await webhooks.add(user, request.body.url, request.body.events);
      const { userId: _, ...shown } = webhook;
      return reply
        .headers(noStore)
        .send(successEnvelope('handlerWebhooks', user.name, { webhook: { ...shown, secret } }));
    },
  );

  app.delete(
    '/webhooks',
    {
      schema: {
        ...doc(
          '(ext) Remove a subscription',
          json('WebhookRemoved', 'Removed.', successExample('handlerWebhooks', 'USER1')),
        ),
        querystring: DeleteQuery,
      },
      preHandler: requireUser,
      config: { keyScope: 'webhooks' },
    },
    async (request, reply) => {
      const user = currentUser(request);
      await webhooks.remove(Number(request.query.id), user);
      return reply.headers(noStore).send(successEnvelope('handlerWebhooks', user.name, {}));
    },
  );
};
