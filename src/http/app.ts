// Builds the Fastify application: parsers, hooks, the error mapping and every domain's routes.
import formbody from '@fastify/formbody';
import rateLimit, { normalizeIP } from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
  type preHandlerHookHandler,
} from 'fastify';
import {
  DomainError,
  isOutOfDescriptors,
  isOutOfSpace,
  isUnavailable,
  outOfDescriptors,
  outOfSpace,
  unavailable,
} from '../errors.js';
import { redactUrl } from '../logger.js';
import { openFileLimit } from '../native.js';
import type { Services } from '../services.js';
import { acceptWaitingConnections } from './accept-backlog.js';
import {
  asArray,
  checkRequestHead,
  clientErrorAnswerer,
  guardBodies,
  limitBodyTime,
  limitConnectionsPerAddress,
  type RawAnswerSeen,
  serializePipelining,
} from './connection-limits.js';
import { toHttpError } from './error-mapping.js';
import { AppError, type ErrorStatus, STATUS_TEXT } from './http-error.js';
import { APIVER, errorEnvelope, oauthError } from './presenters.js';
import { databaseRateLimitStore } from './rate-limit-store.js';
import { authRoutes } from './routes/auth.js';
import { deliveryRoutes } from './routes/delivery.js';
import { fileRoutes } from './routes/files.js';
import { healthRoutes } from './routes/health.js';
import { portalRoutes } from './routes/portal.js';
import { recoveryRoutes } from './routes/recovery.js';
import { secureLinkRoutes } from './routes/secure-links.js';
import { uploadRoutes } from './routes/uploads.js';
import { webhookRoutes } from './routes/webhooks.js';
import { COMPONENTS } from './schemas.js';
import { csp, DEFAULT_CSP, HSTS, SECURITY_HEADERS } from './security-headers.js';
import { RESERVE, uploadSlots } from './upload-slots.js';

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

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH'] as const;

const FASTIFY_STATUS: Record<string, ErrorStatus> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 413,
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 400,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 400,
  FST_ERR_CTP_EMPTY_JSON_BODY: 400,
  FST_ERR_CTP_INVALID_JSON_BODY: 400,
};

function statusOf(err: FastifyError | AppError): ErrorStatus {
  if (err instanceof AppError) return err.status;
  if (isOutOfSpace(err)) return 503;
  if (err.validation) return 400;
  if (err.code && FASTIFY_STATUS[err.code]) return FASTIFY_STATUS[err.code]!;
  const s = err.statusCode ?? 500;
  return s in STATUS_TEXT ? (s as ErrorStatus) : s >= 400 && s < 500 ? 400 : 500;
}

export function sendError(
  request: FastifyRequest,
  reply: FastifyReply,
  status: ErrorStatus,
  detail?: string,
) {
  const { baseUrl } = request.server.services.config;
  // A download that failed after its headers were prepared (a damaged file found by the hash
  // check) must not answer the envelope under the file's type, length and name: the client got
  // `{}` cut to the file's Content-Length. (Found by the tests' check of every response.)
  for (const name of ['content-length', 'content-type', 'content-disposition']) reply.removeHeader(name);
  if (request.routeOptions.config?.oauth) {
    return reply
      .code(status)
      .header('Cache-Control', 'no-store')
      .header('Pragma', 'no-cache')
      .send(oauthError(status, baseUrl));
  }
  return reply.code(status).send(errorEnvelope(status, detail));
}

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

// The API's own Content-Security-Policy for Swagger UI: scripts, styles and images from the
// package (served by us, no CDN), the document fetched from the same origin, nothing inline but
// the one <style> element Swagger UI's bundle adds, allowed by its hash (a new Swagger UI with
// another one shows up as a CSP violation in test/openapi.test.ts).
export const DOCS_CSP = csp({
  scripts: ["'self'"],
  styles: ["'self'", "'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='"],
  images: ["'self'", 'data:'],
  connect: ["'self'"],
  forms: ["'self'"],
  base: ["'none'"],
});

export async function buildApp(services: Services, opts: AppOptions = {}): Promise<FastifyInstance> {
  const { config, log } = services;
  // Answers written before any route saw the request get their access-log line and count too.
  const seenRaw: RawAnswerSeen = ({ status, method, remote, reason }) => {
    log.info({ method, status, remote, reason }, 'request refused before routing');
    services.metrics.observeRequest(null, method ?? 'other', status, 0);
  };
  const hsts = config.baseUrl.startsWith('https://');
  const securityHeaders: Record<string, string> = {
    ...(hsts ? { 'Strict-Transport-Security': HSTS } : {}),
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
  // Every route's path as a pattern, to tell a wrong method (405 with Allow) from a path that
  // names nothing (404). (app.hasRoute compares templates: /uploads/abc is not /uploads/:id.)
  const routePatterns: { method: string; pattern: RegExp }[] = [];
  app.addHook('onRoute', (route) => {
    const pattern = new RegExp(
      `^${route.url
        .split('/')
        .map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
        .join('/')}/?$`,
    );
    for (const method of asArray(route.method)) routePatterns.push({ method, pattern });
  });

  acceptWaitingConnections(app.server);
  const fileLimit = openFileLimit();
  // However many are allowed, one address holds at most half of the descriptors with connections.
  const halfOfFiles = fileLimit === null ? Number.POSITIVE_INFINITY : Math.floor((fileLimit - RESERVE) / 2);
  limitConnectionsPerAddress(
    app.server,
    config.maxConnectionsPerAddress > 0 ? Math.min(config.maxConnectionsPerAddress, halfOfFiles) : 0,
  );
  checkRequestHead(app, seenRaw);
  guardBodies(app);
  serializePipelining(app);
  limitBodyTime(app, {
    idleMs: config.bodyTimeoutSeconds * 1000,
    smallBodyMs: config.smallBodySeconds * 1000,
  });

  app.decorate('services', services);
  app.decorate(
    'uploadSlot',
    uploadSlots(app.server, {
      perUser: config.maxUploadsPerUser,
      perAddress: config.maxUploadsPerAddress,
      fileLimit,
    }),
  );
  app.decorateRequest('user', null);
  app.decorateRequest('session', null);

  // Interface §4 writes the header as `Content_type`; treat it as Content-Type (docs/decisions.md).
  // It wins over a missing Content-Type or the text/plain that HTTP libraries add to string bodies,
  // but never replaces a real Content-Type (which may carry the multipart boundary).
  // (The hooks every request runs take Fastify's callback form: an async hook costs a promise and a
  // microtask per request, a measurable share of a small download.)
  app.addHook('onRequest', (request, _reply, done) => {
    const raw = request.headers['content_type'];
    if (raw !== undefined) {
      const alias = Array.isArray(raw) ? raw[0] : raw;
      const actual = request.headers['content-type'];
      if (alias && (!actual || (/^text\/plain\b/i.test(actual) && !/^text\/plain\b/i.test(alias)))) {
        request.headers['content-type'] = alias;
      }
    }
    done();
  });

  // One access-log line per request, with secrets in the query string redacted (only when the
  // line is written: redacting every URL for a level that is off cost as much as the line).
  app.addHook('onResponse', (request, reply, done) => {
    const level = request.routeOptions.config?.quietLog ? 'debug' : 'info';
    if (log.isLevelEnabled(level))
      request.log[level](
        {
          method: request.method,
          url: redactUrl(request.url),
          status: reply.statusCode,
          ms: Math.round(reply.elapsedTime),
          remote: request.ip,
        },
        'request',
      );
    // The route's template, never the raw URL: label values stay bounded (src/ops/metrics.ts).
    services.metrics.observeRequest(
      request.routeOptions.url ?? null,
      request.method,
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
    done();
  });

  app.addHook('onSend', (request, reply, payload, done) => {
    reply.headers(securityHeaders);
    // HTTPS is known from the public base URL, or from a trusted proxy's X-Forwarded-Proto.
    if (!hsts && config.trustProxy !== false && request.protocol === 'https')
      reply.header('Strict-Transport-Security', HSTS);
    if (!reply.hasHeader('Content-Security-Policy')) reply.header('Content-Security-Policy', DEFAULT_CSP);
    done(null, payload);
  });

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

  // Response schemas document the API (openapi.json) and let the tests check every response; they
  // never serialize. Fastify's schema serializer orders and drops keys, and the interface's bytes
  // are the presenters' (src/http/schemas.ts).
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  for (const schema of COMPONENTS) app.addSchema(schema);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Remessa',
        version: APIVER.replace(/^v1 \((.*)\)$/, '$1'),
        description:
          'Managed file transfer: upload over REST, announce secure links by e-mail or SMS, download with a PIN. ' +
          "Paths are relative to {base_url}. Every response except the token endpoint's is a JSON envelope; " +
          'the token endpoint answers the token object or an OAuth error object. Endpoints marked (ext) extend the interface.',
      },
      servers: [{ url: config.baseUrl }],
      components: {
        securitySchemes: {
          basic: {
            type: 'http',
            scheme: 'basic',
            description: 'HTTP Basic with the platform user name and password.',
          },
          bearer: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'JWT',
            description: 'A token from POST /oauth2/token or POST /auth/login.',
          },
        },
      },
    },
    // Only the API's routes (they carry tags): not the portal's pages, assets or these docs.
    hideUntagged: true,
    // Paths relative to {base_url}, as the interface writes them.
    transform: ({ schema, url }) => ({
      schema: schema as never,
      url: url.startsWith(`${config.apiPath}/`) ? url.slice(config.apiPath.length) : url,
    }),
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json['$id'] ?? `def-${i}`) },
  });
  // Set before the docs' plugin registers, so its routes' errors are envelopes too (a plugin's
  // routes keep the error handler in force when it was registered).
  app.setErrorHandler((raw: FastifyError | AppError | DomainError, request, reply) => {
    // A body type a streaming route does not take gets that route's own answer (tus: 415).
    const streaming = request.routeOptions.config?.streamingBody;
    // A full disk and a service out of reach are the 5xx a client can act on: retry later.
    // A service's error answers as error-mapping.ts says.
    const err = isOutOfSpace(raw)
      ? toHttpError(outOfSpace())
      : isOutOfDescriptors(raw)
        ? toHttpError(outOfDescriptors())
        : isUnavailable(raw)
          ? toHttpError(unavailable())
          : raw instanceof DomainError
            ? toHttpError(raw)
            : streaming && (raw as FastifyError).code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
              ? streaming.refuse()
              : raw;
    const status = statusOf(err);
    if (status >= 500 && (err === raw || raw instanceof DomainError))
      request.log.error({ err: raw, url: redactUrl(request.url) }, 'request failed');
    else if (status >= 500) request.log.warn({ err: raw, url: redactUrl(request.url) }, err.message);
    if (err instanceof AppError) reply.headers(err.headers);
    const detail = err instanceof AppError ? err.detail : status < 500 ? err.message : undefined;
    return sendError(request, reply, status, detail);
  });

  const docsIndex = `${config.apiPath}/docs/static/index.html`;
  await app.register(swaggerUi, {
    routePrefix: `${config.apiPath}/docs`,
    staticCSP: DOCS_CSP,
    uiConfig: { url: `${config.apiPath}/openapi.json`, deepLinking: false },
    uiHooks: {
      // The package redirects static/index.html to the page by rewriting the URL's end, so with a
      // query string it sent the client to the same URL again, for ever.
      onRequest: async (request, reply) => {
        if (request.url.split('?', 1)[0] === docsIndex) return reply.redirect(`${config.apiPath}/docs/`);
      },
    },
  });
  app.get(`${config.apiPath}/openapi.json`, { schema: { hide: true } }, async (_request, reply) =>
    reply.header('Cache-Control', 'no-cache').send(app.swagger()),
  );

  if (opts.onResponseSent) {
    const seen = opts.onResponseSent;
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

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?', 1)[0]!;
    const allowed = METHODS.filter((method) =>
      routePatterns.some((r) => r.method === method && r.pattern.test(path)),
    );
    if (allowed.length > 0) {
      reply.header('Allow', allowed.join(', '));
      return sendError(request, reply, 405);
    }
    return sendError(request, reply, 404);
  });

  await app.register(
    async (api) => {
      await api.register(authRoutes);
      await api.register(recoveryRoutes);
      await api.register(fileRoutes);
      await api.register(secureLinkRoutes);
      await api.register(deliveryRoutes);
      await api.register(webhookRoutes);
      await api.register(uploadRoutes);
      await api.register(healthRoutes);
    },
    { prefix: config.apiPath },
  );
  // Browser pages live at the parent of the API path, outside the API prefix.
  await app.register(portalRoutes);

  return app;
}
