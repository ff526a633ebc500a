// Token endpoint, login and logout (interface §4.1, §4.5; logout is ours).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { currentUser, requireBasic, requireBearer } from '../../platform/http/auth-hooks.js';
import { badRequest } from '../../platform/http/http-error.js';
import { oauthToken, successEnvelope } from '../../platform/http/presenters.js';
import {
  BASIC,
  BEARER,
  contentTypeHeader,
  EXAMPLE_BASE,
  errors,
  json,
  successExample,
} from '../../platform/http/schemas.js';

const oauthErrorExample = (error: number, text: string) => ({
  error,
  error_description: text,
  error_uri: EXAMPLE_BASE,
});

const TokenDoc = {
  tags: ['auth'],
  summary: 'OAuth 2.0 password grant: a bearer token',
  consumes: ['application/x-www-form-urlencoded'],
  headers: contentTypeHeader('application/x-www-form-urlencoded'),
  response: {
    200: json('TokenResponse', 'The token, sent with Cache-Control: no-store.', {
      access_token: 'eyJhbGciOiJIUzI1NiJ9…',
      token_type: 'Bearer',
      expires_in: 3600,
      scope: EXAMPLE_BASE,
    }),
    400: json('OAuthError', 'Invalid request parameters.', oauthErrorExample(400, 'Bad Request')),
    401: json(
      'OAuthError',
      'Unknown user, wrong password, disabled or locked account.',
      oauthErrorExample(401, 'Unauthorized'),
    ),
    500: json('OAuthError', 'Internal failure.', oauthErrorExample(500, 'Internal server error')),
    default: json(
      'OAuthError',
      'Any other error (408, 413, 429…): an OAuth error object.',
      oauthErrorExample(429, 'Too Many Requests'),
    ),
  },
};

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
      schema: { ...TokenDoc, body: TokenBody },
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
      const principal = await auth.checkCredentials(username, password, request.ip);
      const issued = await auth.issueToken(principal, 'token', request.ip);
      return reply
        .header('Cache-Control', 'no-store')
        .header('Pragma', 'no-cache')
        .send(oauthToken(issued.token, issued.expiresIn, config.baseUrl));
    },
  );

  app.post(
    '/auth/login',
    {
      schema: {
        tags: ['auth'],
        summary: 'Login with HTTP Basic: a bearer token in the envelope',
        security: BASIC,
        headers: contentTypeHeader('application/json'),
        response: {
          200: json(
            'LoginResult',
            'Login result.',
            successExample('handlerAuthLogin', 'USER1', { bearer: 'eyJhbGciOiJIUzI1NiJ9…' }),
          ),
          ...errors({
            400: 'Malformed Authorization.',
            401: 'No or wrong credentials (WWW-Authenticate: Basic).',
            500: 'Internal failure.',
          }),
        },
      },
      preHandler: requireBasic,
      config: { ...credentialLimit, keyScope: 'any' },
    },
    async (request, reply) => {
      const user = currentUser(request);
      const issued = await auth.issueToken(
        { user, keyId: request.apiKey?.id ?? null, scopes: request.apiKey?.scopes ?? null },
        'login',
        request.ip,
      );
      return reply
        .header('Cache-Control', 'no-store')
        .send(successEnvelope('handlerAuthLogin', user.name, { bearer: issued.token }));
    },
  );

  app.post(
    '/auth/logout',
    {
      schema: {
        tags: ['auth'],
        summary: '(ext) Revoke this bearer token',
        security: BEARER,
        response: {
          200: json('LogoutResult', 'The token is revoked.', successExample('handlerAuthLogout', 'USER1')),
          ...errors({ 401: 'No, unknown, expired or revoked token.' }),
        },
      },
      preHandler: requireBearer,
      config: { keyScope: 'any' },
    },
    async (request) => {
      const user = currentUser(request);
      await auth.logout(request.session!, request.ip);
      return successEnvelope('handlerAuthLogout', user.name, {});
    },
  );
};
