// What the admin report routes share: the frame of their OpenAPI schema (tag, summary,
// credentials), the errors of a read, and the answer itself, never cached.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { currentUser } from '../../platform/http/auth-hooks.js';
import { type Handler, successEnvelope } from '../../platform/http/presenters.js';
import { BASIC_OR_BEARER, errors } from '../../platform/http/schemas.js';

/** An admin route's schema: the `admin` tag, `summary` and the credentials, then `rest`. */
export function adminSchema<T extends object>(summary: string, rest: T) {
  return { tags: ['admin'], summary, security: BASIC_OR_BEARER, ...rest };
}

/** The errors of a report an auditor or admin may read; `badRequest` says what a 400 means. */
export function readErrors(badRequest: string) {
  return errors({
    400: badRequest,
    401: 'No or wrong credentials.',
    403: 'Not an auditor or admin.',
  });
}

/** The success envelope of `handler` for the acting account, with `extra`, and no caching. */
export function sendUncached(handler: Handler, request: FastifyRequest, reply: FastifyReply, extra: object) {
  return reply
    .header('Cache-Control', 'no-store')
    .send(successEnvelope(handler, currentUser(request).name, extra));
}
