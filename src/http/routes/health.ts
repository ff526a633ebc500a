// (ext) Probes for load balancers and orchestrators: GET {base}/healthz (the process answers) and
// GET {base}/readyz (its database and blob store answer within a second; 503 naming the part that
// does not). No authentication, no audit row, no rate limit, and logged at debug level only: they
// are called every few seconds and must stay cheap.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errorEnvelope, successEnvelope } from '../presenters.js';

const probe = { quietLog: true };

export const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { readiness, log } = app.services;

  app.get('/healthz', { config: probe }, async (_request, reply) =>
    reply.header('Cache-Control', 'no-store').send(successEnvelope('handlerHealth', null, {})),
  );

  app.get('/readyz', { config: probe }, async (_request, reply) => {
    const { ready, checks, errors } = await readiness.check();
    reply.header('Cache-Control', 'no-store');
    if (ready) return reply.send(successEnvelope('handlerHealth', null, { checks }));
    const failing = Object.entries(checks).filter(([, status]) => status !== 'ok');
    log.warn({ checks, errors }, 'not ready');
    return reply
      .code(503)
      .send(errorEnvelope(503, `not ready: ${failing.map(([part, why]) => `${part} ${why}`).join(', ')}`));
  });
};
