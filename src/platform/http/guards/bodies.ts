// Request bodies nobody wants read: on streaming routes (uploads) a body of another type is
// refused unread, and an answer given before the body was read closes the connection once the
// rest is discarded (docs/security.md).
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, onSendHookHandler, preParsingHookHandler } from 'fastify';
import { AppError } from '../http-error.js';
import { discardRestOfBody } from '../request-body.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route streams its body itself after authenticating (uploads): no whole-body deadline.
     * Only bodies of its types reach it (guardBodies).
     */
    streamingBody?: StreamingBody;
  }
}

export interface StreamingBody {
  /** Media types (prefixes, lower case) of the bodies the route streams. */
  types: readonly string[];
  /** The answer to a body of any other type. */
  refuse(): AppError;
}

/** The most a streaming route reads into memory of a body it does not stream (Fastify's default). */
const MAX_BUFFERED_BODY = 1024 * 1024;

/** Whether a request carries a body (a length other than 0, or chunked). */
export function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** Whether the request's body is of a type the route streams. */
export function streamed(streaming: StreamingBody, req: IncomingMessage): boolean {
  const type = (req.headers['content-type'] ?? '').toLowerCase();
  return streaming.types.some((t) => type.startsWith(t));
}

/** Connections whose request was answered before its body had arrived (guardBodies). */
export const answeredBeforeBody = new WeakSet<Socket>();

/**
 * On streaming routes (uploads), whose body limit is the file-size limit: a body of another type
 * is refused before a byte is read. Fastify's parsers for it (JSON, text, forms) would read it
 * whole into memory before authentication: 600 MB of text from anyone ended the process, as a
 * string too long for V8. And on any route, an answer given before the body was read (a refusal,
 * a failed sign-in, a route that takes no body) closes the connection once the rest of the body
 * is discarded (discardRestOfBody, bounded), so a client cannot keep sending a body nobody wants.
 */
export function guardBodies(app: FastifyInstance): void {
  const preParsing =
    (streaming: StreamingBody): preParsingHookHandler =>
    (request, _reply, payload, done) => {
      if (!hasBody(request.raw)) return done(null, payload);
      // A compressed body would be stored compressed, as a file the sender never had (any upload
      // route: POST /upload and tus PATCH alike).
      const coding = request.headers['content-encoding'];
      if (coding !== undefined && coding.trim().toLowerCase() !== 'identity')
        return done(new AppError(415, 'Content-Encoding is not supported: send the file as it is'));
      if (streamed(streaming, request.raw)) return done(null, payload);
      // A small one is parsed as on any route (then authentication answers first, as it always
      // did); a large or chunked one is refused unread.
      const length = Number(request.headers['content-length'] ?? Number.NaN);
      if (length <= MAX_BUFFERED_BODY) return done(null, payload);
      done(streaming.refuse());
    };
  const onSend: onSendHookHandler = (request, reply, payload, done) => {
    if (hasBody(request.raw) && !request.raw.readableEnded) {
      reply.header('Connection', 'close');
      const raw = request.raw;
      const socket = raw.socket;
      answeredBeforeBody.add(socket);
      // After a `Connection: close` answer Node ends the socket and destroys it at once. With the
      // client's bytes still unread, that is a reset, and a reset can take the answer with it
      // before the client reads it. So only the sending side ends (the client sees the answer,
      // then the end); discardRestOfBody keeps reading, and ends the connection when the client
      // stops or at its limits; once the body is all read, the connection closes (nothing unread).
      (socket as Socket & { destroySoon: () => void }).destroySoon = () => {
        socket.end();
        if (raw.readableEnded || raw.destroyed) socket.destroy();
        else raw.once('close', () => socket.destroy());
      };
      discardRestOfBody(raw);
    }
    done(null, payload);
  };
  // On every route: one that takes no body answers before reading it just the same.
  app.addHook('onSend', onSend);
  // On the streaming routes only: every other request (a small download) skips it.
  app.addHook('onRoute', (route) => {
    const streaming = route.config?.streamingBody;
    if (!streaming) return;
    route.preParsing = [...asArray(route.preParsing), preParsing(streaming)];
  });
}

export const asArray = <T>(value: T | T[] | undefined): T[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];
