// Errors as the interface answers them: envelopes (OAuth error objects on the token endpoint),
// the one place where domain errors, Fastify's own errors and unknown failures become a status.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  DomainError,
  isOutOfDescriptors,
  isOutOfSpace,
  isUnavailable,
  outOfDescriptors,
  outOfSpace,
  unavailable,
} from '../../errors.js';
import { redactUrl } from '../../logger.js';
import { asArray } from '../connection-limits.js';
import { toHttpError } from '../error-mapping.js';
import { AppError, type ErrorStatus, STATUS_TEXT } from '../http-error.js';
import { errorEnvelope, oauthError } from '../presenters.js';

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

/**
 * The error handler. Set before the docs' plugin registers, so its routes' errors are envelopes
 * too (a plugin's routes keep the error handler in force when it was registered).
 */
export function answerErrors(app: FastifyInstance): void {
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
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH'] as const;

/**
 * 404 for a path that names nothing, 405 with Allow for a wrong method. Call before any route
 * is added: it collects every route's path as a pattern (app.hasRoute compares templates:
 * /uploads/abc is not /uploads/:id).
 */
export function answerUnrouted(app: FastifyInstance): () => void {
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
  return () =>
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
}
