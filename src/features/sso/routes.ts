// Single sign-on with OpenID Connect (docs/sso.md): the browser's way to the provider and back
// (start, callback: pages, not API answers, so left out of openapi.json) and the portal's trade of
// its one-time code for a bearer token (session).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { LANGS, type Lang } from '../../app/config.js';
import { notFound } from '../../platform/errors.js';
import { successEnvelope } from '../../platform/http/presenters.js';
import { contentTypeHeader, errors, json, successExample } from '../../platform/http/schemas.js';
import { PORTAL_CSP } from '../portal/routes.js';
import { SsoFailure } from './failure.js';
import { failurePage } from './failure-page.js';
import { SSO_HANDLER } from './schemas-sso.js';
import { PENDING_MS } from './sign-in-service.js';

const COOKIE = 'remessa_sso';

/** The provider is the server that failed: a gateway's answer (502), not Remessa's own 503. */
const statusOf = (err: SsoFailure) =>
  err.kind === 'unavailable' ? 502 : err.kind === 'forbidden' ? 403 : 400;

const isLang = (v: unknown): v is Lang => typeof v === 'string' && (LANGS as readonly string[]).includes(v);

/** The browser's first language Remessa speaks (Accept-Language, in the order given). */
function browserLang(request: FastifyRequest): Lang | null {
  const header = request.headers['accept-language'];
  if (typeof header !== 'string') return null;
  for (const part of header.slice(0, 512).split(',')) {
    const primary = part.split(';')[0]!.trim().split('-')[0]!.toLowerCase();
    if (isLang(primary)) return primary;
  }
  return null;
}

function cookieState(request: FastifyRequest): string | null {
  const header = request.headers.cookie;
  if (typeof header !== 'string') return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (part.slice(0, eq).trim() === COOKIE) return part.slice(eq + 1).trim();
  }
  return null;
}

const StartQuery = Type.Object({
  to: Type.Optional(Type.Union([Type.Literal('portal'), Type.Literal('admin')])),
  lang: Type.Optional(Type.String({ maxLength: 16 })),
});

const SessionBody = Type.Object(
  { code: Type.String({ minLength: 1, maxLength: 256 }) },
  { additionalProperties: false },
);

export const ssoRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { config, sso } = app.services;
  const secure = config.baseUrl.startsWith('https://') ? '; Secure' : '';
  const cookiePath = `${config.apiPath}/auth/oidc/callback`;
  const setCookie = (reply: FastifyReply, value: string, seconds: number) =>
    reply.header(
      'Set-Cookie',
      `${COOKIE}=${value}; Path=${cookiePath}; Max-Age=${seconds}; HttpOnly; SameSite=Lax${secure}`,
    );
  const page = (reply: FastifyReply, status: number, html: string) =>
    reply
      .code(status)
      .header('Content-Security-Policy', PORTAL_CSP)
      .header('Cache-Control', 'no-store')
      .header('X-Frame-Options', 'DENY')
      .type('text/html; charset=utf-8')
      .send(html);
  const failed = (reply: FastifyReply, err: unknown) => {
    if (!(err instanceof SsoFailure)) throw err;
    const back = `${new URL(config.baseUrl).origin}${config.portalPath}${err.returnTo === 'admin' ? 'admin' : ''}`;
    return page(reply, statusOf(err), failurePage(err.reason, err.lang, back));
  };
  const enabled = () => {
    if (!sso) throw notFound('single sign-on is not configured');
    return sso;
  };

  // Each start stores a pending sign-in: limited per address like the other anonymous routes.
  const perAddress = { rateLimit: { max: 60, timeWindow: '1 minute' } };

  app.get(
    '/auth/oidc/start',
    { schema: { hide: true, querystring: StartQuery }, config: perAddress },
    async (request, reply) => {
      const service = enabled();
      const lang = isLang(request.query.lang) ? request.query.lang : null;
      try {
        const { url, state } = await service.start(request.query.to ?? 'portal', lang, request.ip);
        setCookie(reply, state, PENDING_MS / 1000);
        return reply.header('Cache-Control', 'no-store').redirect(url, 302);
      } catch (err) {
        return failed(reply, err);
      }
    },
  );

  app.get('/auth/oidc/callback', { schema: { hide: true }, config: perAddress }, async (request, reply) => {
    const service = enabled();
    const q = request.url.indexOf('?');
    try {
      const location = await service.finish({
        query: q >= 0 ? request.url.slice(q + 1, q + 1 + 8192) : '',
        cookieState: cookieState(request),
        remote: request.ip,
        browserLang: browserLang(request),
      });
      setCookie(reply, '', 0);
      return reply.header('Cache-Control', 'no-store').redirect(location, 302);
    } catch (err) {
      setCookie(reply, '', 0);
      return failed(reply, err);
    }
  });

  app.post(
    '/auth/oidc/session',
    {
      schema: {
        tags: ['auth'],
        summary: '(ext) Single sign-on: trade the one-time code of the portal for a bearer token',
        headers: contentTypeHeader('application/json'),
        body: SessionBody,
        response: {
          200: json(
            'SsoSession',
            'The account signed in, its bearer token and the provider’s logout URL.',
            successExample(SSO_HANDLER, 'USER1', {
              bearer: 'eyJhbGciOiJIUzI1NiJ9…',
              logoutUrl: 'https://idp.example.com/logout?id_token_hint=…',
            }),
          ),
          ...errors({
            400: 'No code, or a body that is not {code}.',
            401: 'Unknown, used or expired code.',
            404: 'Single sign-on is not configured.',
          }),
        },
      },
      config: { rateLimit: { max: 30, timeWindow: '1 minute' } },
    },
    async (request, reply) => {
      const session = await enabled().session(request.body.code);
      return reply.header('Cache-Control', 'no-store').send(
        successEnvelope(SSO_HANDLER, session.user, {
          bearer: session.bearer,
          ...(session.logoutUrl ? { logoutUrl: session.logoutUrl } : {}),
        }),
      );
    },
  );
};
