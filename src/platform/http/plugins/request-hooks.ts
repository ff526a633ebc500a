// The hooks every request runs: the interface's `Content_type` alias, one access-log line, the
// security headers. They take Fastify's callback form: an async hook costs a promise and a
// microtask per request, a measurable share of a small download.
import type { FastifyInstance } from 'fastify';
import type { Services } from '../../../app/services.js';
import { redactUrl } from '../../logger.js';
import { DEFAULT_CSP, HSTS } from '../security-headers.js';

/** Interface §4 writes the header as `Content_type`; treat it as Content-Type (docs/decisions.md). */
export function acceptContentTypeAlias(app: FastifyInstance): void {
  // It wins over a missing Content-Type or the text/plain that HTTP libraries add to string bodies,
  // but never replaces a real Content-Type (which may carry the multipart boundary).
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
}

/**
 * One access-log line per request, with secrets in the query string redacted (only when the
 * line is written: redacting every URL for a level that is off cost as much as the line).
 */
export function logEachRequest(
  app: FastifyInstance,
  { log, metrics }: Pick<Services, 'log' | 'metrics'>,
): void {
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
    // The route's template, never the raw URL: label values stay bounded (src/features/ops/metrics.ts).
    metrics.observeRequest(
      request.routeOptions.url ?? null,
      request.method,
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
    done();
  });
}

/** The headers every answer carries; HSTS when the public base URL or a trusted proxy says HTTPS. */
export function addSecurityHeaders(
  app: FastifyInstance,
  config: Services['config'],
  securityHeaders: Record<string, string>,
): void {
  const hsts = config.baseUrl.startsWith('https://');
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.headers(securityHeaders);
    // HTTPS is known from the public base URL, or from a trusted proxy's X-Forwarded-Proto.
    if (!hsts && config.trustProxy !== false && request.protocol === 'https')
      reply.header('Strict-Transport-Security', HSTS);
    if (!reply.hasHeader('Content-Security-Policy')) reply.header('Content-Security-Policy', DEFAULT_CSP);
    done(null, payload);
  });
}
