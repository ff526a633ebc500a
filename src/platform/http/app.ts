// Builds the Fastify application: the Fastify options, then each plugin in the order a request
// meets it (plugins/), then every feature's routes under the API path and the portal's pages.
import formbody from '@fastify/formbody';
import rateLimit, { normalizeIP } from '@fastify/rate-limit';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyRequest,
  LogController,
  type preHandlerHookHandler,
} from 'fastify';
import type { TSchema } from 'typebox';
import type { Services } from '../../app/services.js';
import { adminRoutes } from '../../features/admin/routes.js';
import { ADMIN_REPORT_SCHEMAS } from '../../features/admin/schemas-reports.js';
import { ADMIN_USER_SCHEMAS } from '../../features/admin/schemas-users.js';
import { authRoutes } from '../../features/auth/routes.js';
import { fileRoutes } from '../../features/files/routes.js';
import { keyRoutes } from '../../features/keys/routes.js';
import { KEY_SCHEMAS } from '../../features/keys/schemas-keys.js';
import { secureLinkRoutes } from '../../features/links/routes.js';
import { linkControlRoutes } from '../../features/links/routes-control.js';
import { deliveryRoutes } from '../../features/links/routes-delivery.js';
import { healthRoutes } from '../../features/ops/routes.js';
import { portalRoutes } from '../../features/portal/routes.js';
import { recoveryRoutes } from '../../features/recovery/routes.js';
import { requestRoutes } from '../../features/requests/routes.js';
import { REQUEST_SCHEMAS } from '../../features/requests/schemas-requests.js';
import { ssoRoutes } from '../../features/sso/routes.js';
import { SSO_SCHEMAS } from '../../features/sso/schemas-sso.js';
import { uploadRoutes } from '../../features/uploads/routes.js';
import { webhookRoutes } from '../../features/webhooks/routes.js';
import { clientErrorAnswerer, type RawAnswerSeen } from './connection-limits.js';
import { AppError } from './http-error.js';
import { guardConnections } from './plugins/connection-guards.js';
import { answerErrors, answerUnrouted, sendError } from './plugins/errors.js';
import { describeApi, serveApiDocs } from './plugins/openapi.js';
import { acceptContentTypeAlias, addSecurityHeaders, logEachRequest } from './plugins/request-hooks.js';
import { databaseRateLimitStore } from './rate-limit-store.js';
import { DEFAULT_CSP, HSTS, SECURITY_HEADERS } from './security-headers.js';

export { sendError } from './plugins/errors.js';
export { DOCS_CSP } from './plugins/openapi.js';

declare module 'fastify' {
  interface FastifyInstance {
    services: Services;
    /** preHandler of the upload routes, after authentication: admits the upload or refuses it. */
    uploadSlot: preHandlerHookHandler;
  }
  interface FastifyContextConfig {
    /** Errors on this route are OAuth error objects instead of envelopes (token endpoint). */
    oauth?: boolean;
    /** Probes (healthz, readyz): their access-log lines go at debug level, not info. */
    quietLog?: boolean;
  }
}

/** The named response schemas the slices keep (beside schemas.ts's COMPONENTS): in openapi.json too. */
export const FEATURE_SCHEMAS: TSchema[] = [
  ...ADMIN_USER_SCHEMAS,
  ...ADMIN_REPORT_SCHEMAS,
  ...KEY_SCHEMAS,
  ...REQUEST_SCHEMAS,
  ...SSO_SCHEMAS,
];

/** What a test sees of every response (test/helpers/server.ts checks it against its schema). */
export interface SentResponse {
  /** The route's template, or undefined when no route matched (404, 405). */
  route: string | undefined;
  schema: FastifyRequest['routeOptions']['schema'];
  method: string;
  status: number;
  contentType: string | undefined;
  payload: unknown;
}

export interface AppOptions {
  /** Tests: called with every response before it is sent. */
  onResponseSent?: (response: SentResponse) => void;
}

export async function buildApp(services: Services, opts: AppOptions = {}): Promise<FastifyInstance> {
  const { config, log } = services;
  // Answers written before any route saw the request get their access-log line and count too.
  const seenRaw: RawAnswerSeen = ({ status, method, remote, reason }) => {
    log.info({ method, status, remote, reason }, 'request refused before routing');
    services.metrics.observeRequest(null, method ?? 'other', status, 0);
  };
  const securityHeaders: Record<string, string> = {
    ...(config.baseUrl.startsWith('https://') ? { 'Strict-Transport-Security': HSTS } : {}),
    ...SECURITY_HEADERS,
  };
  const app = Fastify({
    loggerInstance: log as FastifyBaseLogger,
    // A hop count trusts that many hops nearest to Remessa (proxy-addr's rule, which Fastify's
    // types do not spell as a number).
    trustProxy:
      typeof config.trustProxy === 'number'
        ? (_address: string, hop: number) => hop < (config.trustProxy as number)
        : config.trustProxy,
    bodyLimit: 1024 * 1024,
    // Fastify's own per-request lines would log raw URLs; ours (onResponse below) redacts them.
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
    // Answered with our envelope instead (checkRequestHead).
    http: { requireHostHeader: false },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
    // Requests Node cannot even parse (bad header, raw non-ASCII in the URL) still get an envelope,
    // after the answers to the requests before them on the connection.
    clientErrorHandler: clientErrorAnswerer(seenRaw),
    // A path Fastify cannot decode (a bad percent escape): our envelope, not Fastify's own answer
    // (which echoed the URL back, without the security headers).
    frameworkErrors: (err, request, reply) => {
      // A path parameter past the router's limit (500 characters) names nothing that exists.
      const status =
        err.code === 'FST_ERR_BAD_URL' ? 400 : err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 404 : 500;
      if (status === 500) request.log.error({ err }, 'request failed');
      // Answered before routing: the onSend hook that adds these does not run.
      reply.headers(securityHeaders);
      reply.header('Content-Security-Policy', DEFAULT_CSP);
      return sendError(request, reply, status, status === 400 ? 'malformed URL' : undefined);
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // A client that half-closes after a complete request (SHUT_WR) still gets its answer; Node's
  // default would end the connection before the upload is even stored.
  (app.server as typeof app.server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  const setNotFoundHandler = answerUnrouted(app);
  guardConnections(app, config, seenRaw);
  app.decorate('services', services);
  app.decorateRequest('user', null);
  app.decorateRequest('session', null);
  app.decorateRequest('apiKey', null);
  acceptContentTypeAlias(app);
  logEachRequest(app, services);
  addSecurityHeaders(app, config, securityHeaders);
  await registerBodyParsersAndLimits(app, services);
  await describeApi(app, config, FEATURE_SCHEMAS);
  answerErrors(app);
  await serveApiDocs(app, config);
  if (opts.onResponseSent) reportResponses(app, opts.onResponseSent);
  setNotFoundHandler();

  await app.register(
    async (api) => {
      await api.register(authRoutes);
      await api.register(ssoRoutes);
      await api.register(recoveryRoutes);
      await api.register(fileRoutes);
      await api.register(secureLinkRoutes);
      await api.register(deliveryRoutes);
      await api.register(linkControlRoutes);
      await api.register(webhookRoutes);
      await api.register(keyRoutes);
      await api.register(uploadRoutes);
      await api.register(requestRoutes);
      await api.register(healthRoutes);
      await api.register(adminRoutes, { prefix: '/admin' });
    },
    { prefix: config.apiPath },
  );
  // Browser pages live at the parent of the API path, outside the API prefix.
  await app.register(portalRoutes);
  return app;
}

async function registerBodyParsersAndLimits(app: FastifyInstance, services: Services): Promise<void> {
  // Clients send `Content_type: application/json` with no body (login, forget): accept that.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = String(body);
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch {
      done(new AppError(400, 'body is not valid JSON'), undefined);
    }
  });
  await app.register(formbody);
  await app.register(rateLimit, {
    global: false,
    // A client that reset the connection early has no address any more (the default generator
    // then threw a TypeError at error level): it is counted with the other address-less ones.
    keyGenerator: (request) => (request.ip ? normalizeIP(request.ip) : 'unknown'),
    // Counted in the shared database: the limits hold for the cluster (docs/deploy.md).
    store: databaseRateLimitStore(services.rateCounter),
    errorResponseBuilder: (_req, ctx) =>
      new AppError(429, `rate limit: retry in ${Math.ceil(ctx.ttl / 1000)}s`),
  });
}

function reportResponses(app: FastifyInstance, seen: (response: SentResponse) => void): void {
  app.addHook('onSend', async (request, reply, payload) => {
    const type = reply.getHeader('content-type');
    seen({
      route: request.routeOptions.url,
      schema: request.routeOptions.schema,
      method: request.method,
      status: reply.statusCode,
      contentType: typeof type === 'string' ? type : undefined,
      payload,
    });
    return payload;
  });
}
