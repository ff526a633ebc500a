// Token endpoint, login and logout (interface §4.1, §4.5; DESIGN §6 logout).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { badRequest } from '../../errors.js';
import { currentUser, requireBasic, requireBearer } from '../auth-hooks.js';
import { oauthToken, successEnvelope } from '../presenters.js';

const TokenBody = Type.Object({
  grant_type: Type.String({ minLength: 1 }),
  username: Type.String({ minLength: 1, maxLength: 256 }),
  password: Type.String({ minLength: 1, maxLength: 1024 }),
});

// Credential endpoints are rate limited per client address on top of the per-user lockout.
const credentialLimit = { rateLimit: { max: 30, timeWindow: '1 minute' } };

export const authRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { auth, config } = app.services;

  app.post(
    '/oauth2/token',
    {
      schema: { body: TokenBody },
      config: { oauth: true, ...credentialLimit },
      preValidation: async (request) => {
        const type = request.headers['content-type'] ?? '';
        if (!type.toLowerCase().startsWith('application/x-www-form-urlencoded')) {
          throw badRequest('body must be application/x-www-form-urlencoded');
        }
      },
    },
    async (request, reply) => {
      const { grant_type, username, password } = request.body;
      if (grant_type !== 'password') throw badRequest('unsupported grant_type');
      const user = await auth.checkPassword(username, password, request.ip);
      const issued = await auth.issueToken(user, 'token', request.ip);
      return reply
        .header('Cache-Control', 'no-store')
        .header('Pragma', 'no-cache')
        .send(oauthToken(issued.token, issued.expiresIn, config.baseUrl));
    },
  );

  app.post('/auth/login', { preHandler: requireBasic, config: credentialLimit }, async (request, reply) => {
    const user = currentUser(request);
    const issued = await auth.issueToken(user, 'login', request.ip);
    return reply
      .header('Cache-Control', 'no-store')
      .send(successEnvelope('handlerAuthLogin', user.name, { bearer: issued.token }));
  });

  app.post('/auth/logout', { preHandler: requireBearer }, async (request) => {
    const user = currentUser(request);
    await auth.logout(request.session!, request.ip);
    return successEnvelope('handlerAuthLogout', user.name, {});
  });
};
