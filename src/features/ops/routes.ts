// (ext) Probes for load balancers and orchestrators: GET {base}/healthz (the process answers) and
// GET {base}/readyz (its database and blob store answer within a second; 503 naming the part that
// does not; while ready, how many messages wait in the outbox and for how long). No authentication, no audit row, no rate limit, and logged at debug level only: they
// are called every few seconds and must stay cheap.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errorEnvelope, successEnvelope } from '../../platform/http/presenters.js';
import { errorExample, json, successExample } from '../../platform/http/schemas.js';

const probe = { quietLog: true };

const healthSchema = {
  tags: ['health'],
  summary: '(ext) Liveness: the process answers',
  response: { 200: json('Health', 'Up.', successExample('handlerHealth', null)) },
};
const readySchema = {
  tags: ['health'],
  summary: '(ext) Readiness: the database and the blob store answer within a second',
  response: {
    200: json(
      'Ready',
      'Ready.',
      successExample('handlerHealth', null, {
        checks: { database: 'ok', storage: 'ok' },
        outbox: { pending: 0, oldestPendingSeconds: 0 },
      }),
    ),
    503: json(
      'ErrorEnvelope',
      'Not ready; detail names the failing part.',
      errorExample(503, 'not ready: database failed'),
    ),
  },
};

export const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { readiness, log } = app.services;

  app.get('/healthz', { schema: healthSchema, config: probe }, async (_request, reply) =>
    reply.header('Cache-Control', 'no-store').send(successEnvelope('handlerHealth', null, {})),
  );

  app.get('/readyz', { schema: readySchema, config: probe }, async (_request, reply) => {
    const { ready, checks, errors, outbox } = await readiness.check();
    reply.header('Cache-Control', 'no-store');
    if (ready)
      return reply.send(successEnvelope('handlerHealth', null, { checks, ...(outbox && { outbox }) }));
    const failing = Object.entries(checks).filter(([, status]) => status !== 'ok');
    log.warn({ checks, errors }, 'not ready');
    return reply
      .code(503)
      .send(errorEnvelope(503, `not ready: ${failing.map(([part, why]) => `${part} ${why}`).join(', ')}`));
  });
};
