// (ext) GET {base}/admin/outbox and POST {base}/admin/outbox/{id}/retry: the messages without their
// text, and a failed one sent again (docs/admin.md, "Outbox"). Behind the admin plugin's role
// check (the retry is a change: admins only).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { currentUser } from '../../platform/http/auth-hooks.js';
import { successEnvelope } from '../../platform/http/presenters.js';
import { BASIC_OR_BEARER, errors, jsonOf, success, successExample } from '../../platform/http/schemas.js';
import { OUTBOX_CHANNELS, OUTBOX_STATUSES } from './outbox-report.js';

const HANDLER = 'handlerAdminOutbox';
const literals = (values: readonly string[]) => Type.Union(values.map((v) => Type.Literal(v)));

const OutboxQuery = Type.Object({
  status: Type.Optional(literals(OUTBOX_STATUSES)),
  channel: Type.Optional(literals(OUTBOX_CHANNELS)),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, description: 'Default 50.' })),
  cursor: Type.Optional(Type.String({ maxLength: 40, description: 'The `next` of the previous page.' })),
});

const envelope = { ...success(HANDLER), user: Type.String({ description: 'The acting account.' }) };
const closed = { additionalProperties: false } as const;
const OutboxPage = Type.Object(
  {
    ...envelope,
    messages: Type.Array(Type.Ref('AdminOutboxMessage')),
    next: Type.Union([Type.String(), Type.Null()]),
  },
  closed,
);
const Retried = Type.Object({ ...envelope, message: Type.Ref('AdminOutboxMessage') }, closed);

const messageExample = {
  id: 9,
  channel: 'email',
  recipient: 'bob@example.com',
  kind: 'file-link',
  status: 'failed',
  attempts: 12,
  created: '2026-11-27T13:36:22.123Z',
  lastAttempt: '2026-11-28T13:30:00.000Z',
  nextAttempt: null,
  sent: null,
  lastError: 'ECONNREFUSED connect ECONNREFUSED 192.0.2.25:25',
  fileId: 42,
  user: 'alice',
};

export const outboxRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { outbox } = app.services.adminReports;

  app.get(
    '/outbox',
    {
      schema: {
        tags: ['admin'],
        summary: '(ext) Outbox messages, newest first, without their text',
        security: BASIC_OR_BEARER,
        querystring: OutboxQuery,
        response: {
          200: jsonOf(
            OutboxPage,
            'A page of messages.',
            successExample(HANDLER, 'admin', { messages: [messageExample], next: '9' }),
          ),
          ...errors({
            400: 'A parameter that is not one (status, channel, limit, cursor).',
            401: 'No or wrong credentials.',
            403: 'Not an auditor or admin.',
          }),
        },
      },
    },
    async (request, reply) => {
      const page = await outbox.list(request.query);
      return reply
        .header('Cache-Control', 'no-store')
        .send(successEnvelope(HANDLER, currentUser(request).name, { messages: page.items, next: page.next }));
    },
  );

  app.post(
    '/outbox/:id/retry',
    {
      schema: {
        tags: ['admin'],
        summary: '(ext) Send a failed message again (once, on whichever instance claims it)',
        security: BASIC_OR_BEARER,
        params: Type.Object({ id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }) }),
        response: {
          200: jsonOf(
            Retried,
            'The message, pending again.',
            successExample(HANDLER, 'admin', { message: { ...messageExample, status: 'pending' } }),
          ),
          ...errors({
            401: 'No or wrong credentials.',
            403: 'Not an admin.',
            404: 'No such message.',
            409: 'The message is not failed (pending, sent, logged, or retried already).',
          }),
        },
      },
    },
    async (request, reply) => {
      const message = await outbox.retry(request.params.id, currentUser(request).name, request.ip ?? null);
      return reply
        .header('Cache-Control', 'no-store')
        .send(successEnvelope(HANDLER, currentUser(request).name, { message }));
    },
  );
};
