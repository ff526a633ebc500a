// Password recovery and first access over HTTP (interface §4.6, §4.7). Thin: the
// RecoveryService does the work. changeParameters takes k, p, z from the query string or from a
// JSON or form body; a field present in the body wins over the same field in the query (the
// browser page posts a body so the password stays out of URLs and access logs).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { badRequest } from '../../platform/http/http-error.js';
import { successEnvelope } from '../../platform/http/presenters.js';
import {
  contentTypeHeader,
  EXAMPLE_BASE,
  errors,
  json,
  successExample,
} from '../../platform/http/schemas.js';

const linkResult = json(
  'LinkResult',
  'Password-change link result.',
  successExample('handlerAuthForget', 'USER1', { linkURL: `${EXAMPLE_BASE}/auth/change?lang=pt&k=…` }),
);

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
    const schema = {
      tags: ['auth'],
      summary:
        purpose === 'forget'
          ? `${url === '/auth/forget' ? '(ext) Alias of forgetParameters' : 'E-mail a PIN and a password-change link'}`
          : '(ext) First access: e-mail a PIN and a link to set the first password',
      headers: contentTypeHeader('application/json'),
      querystring: UserQuery,
      response: {
        200: linkResult,
        ...errors({
          400: 'Missing u.',
          401: 'Unknown user.',
          403: purpose === 'forget' ? 'Disabled user, or no e-mail on record.' : 'Not in first-access state.',
          500: 'Internal failure.',
        }),
      },
    };
    // No HEAD: it would send the PIN too (link scanners and proxies send HEAD freely).
    app.get(url, { schema, config: limit, exposeHeadRoute: false }, async (request, reply) => {
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
    {
      schema: {
        tags: ['auth'],
        summary: 'Change the password (k alone: e-mail a fresh PIN)',
        description: 'k, p and z may also come in a JSON or form body, which wins over the query string.',
        headers: contentTypeHeader('application/json'),
        querystring: ChangeFields,
        response: {
          200: linkResult,
          ...errors({
            400: 'Missing k, p without z, or a password the policy refuses.',
            401: 'Unknown, expired or used k.',
            403: 'Wrong or expired PIN.',
            500: 'Internal failure.',
          }),
        },
      },
      config: limit,
    },
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
