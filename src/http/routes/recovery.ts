// Password recovery and first access over HTTP (interface §4.6, §4.7; DESIGN §6). Thin: the
// RecoveryService does the work. changeParameters takes k, p, z from the query string or from a
// JSON or form body; a field present in the body wins over the same field in the query (the
// browser page posts a body so the password stays out of URLs and access logs).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { badRequest } from '../../errors.js';
import { successEnvelope } from '../presenters.js';

const Field = Type.String({ maxLength: 2048 });
const ChangeFields = Type.Object({
  k: Type.Optional(Field),
  p: Type.Optional(Field),
  z: Type.Optional(Field),
});
const UserQuery = Type.Object({ u: Type.Optional(Type.String({ maxLength: 256 })) });

// Anonymous endpoints that send mail or check PINs: limited per client address as well.
const limit = { rateLimit: { max: 60, timeWindow: '1 minute' } };

export const recoveryRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { recovery } = app.services;

  for (const [url, purpose] of [
    ['/auth/forgetParameters', 'forget'],
    ['/auth/forget', 'forget'],
    ['/auth/firstaccess', 'firstaccess'],
  ] as const) {
    app.get(url, { schema: { querystring: UserQuery }, config: limit }, async (request, reply) => {
      const name = request.query.u?.trim();
      if (!name) throw badRequest('u (user name) is required');
      const { user, linkURL } = await recovery.issueLink(name, purpose, request.ip);
      return reply
        .header('Cache-Control', 'no-store')
        .send(successEnvelope('handlerAuthForget', user.name, { linkURL }));
    });
  }

  app.post(
    '/auth/changeParameters',
    { schema: { querystring: ChangeFields }, config: limit },
    async (request, reply) => {
      const body = bodyFields(request.body);
      const q = request.query;
      const { user, linkURL } = await recovery.change(
        { k: body.k ?? q.k, p: body.p ?? q.p, z: body.z ?? q.z },
        request.ip,
      );
      return reply
        .header('Cache-Control', 'no-store')
        .send(successEnvelope('handlerAuthForget', user.name, { linkURL }));
    },
  );
};

/** k, p, z from a JSON or form body (strings; a JSON number PIN is taken as written). */
function bodyFields(body: unknown): { k?: string; p?: string; z?: string } {
  if (body === undefined || body === null || body === '') return {};
  if (typeof body !== 'object' || Array.isArray(body))
    throw badRequest('body must be a JSON object or a form');
  const out: { k?: string; p?: string; z?: string } = {};
  for (const key of ['k', 'p', 'z'] as const) {
    const v = (body as Record<string, unknown>)[key];
    if (v === undefined || v === null) continue;
    if (typeof v === 'number' && key === 'p') out.p = String(v).padStart(6, '0');
    else if (typeof v === 'string' && v.length <= 2048) out[key] = v;
    else throw badRequest(`${key} must be a string`);
  }
  return out;
}
