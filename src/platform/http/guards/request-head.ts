// The request head's own rules (Expect and 100-continue, Host, transfer codings, the target,
// CONNECT), answered with our envelope where Node answers bare or cuts the connection.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  preParsingHookHandler,
} from 'fastify';
import { AppError } from '../http-error.js';
import { asArray, streamed } from './bodies.js';
import { answerAfterInFlight, type RawAnswerSeen, rawErrorResponse } from './raw-answers.js';

/** Answers whose request expects a `100 Continue` that has not been written yet. */
const awaitingContinue = new WeakSet<ServerResponse>();

/** Writes the `100 Continue` a request expects, if it does and it was not written yet. */
function sendContinue(res: ServerResponse): void {
  if (!awaitingContinue.delete(res) || res.headersSent) return;
  res.writeContinue();
}

/**
 * uri-host [ ":" port ] (RFC 3986): a name or IPv4 address, or an IP literal in brackets (with a
 * zone id, as Python's urllib sends it, or IPvFuture); may be empty.
 */
const HOST_VALUE = /^(?:\[[^[\]\s/?#@]+\]|[A-Za-z0-9\-._~!$&'()*+,;=%]*)(?::[0-9]*)?$/;

function hostLines(rawHeaders: string[]): number {
  let n = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length === 4 && name.toLowerCase() === 'host') n++;
  }
  return n;
}

/**
 * The request head's own rules (RFC 9110 §10.1.1, RFC 9112 §3.2), answered with our envelope
 * where Node answers bare:
 * - `Expect: 100-continue`: Node writes the 100 as soon as the head is parsed, so a client with a
 *   wrong password sent its whole upload to be refused. The 100 is written when the body is about
 *   to be read: on a streaming route after its preHandlers (authentication), elsewhere before
 *   Fastify's parser. An answer without it closes the connection (Node), so the body never comes.
 * - any other expectation: 417;
 * - an HTTP/1.1 request without Host, two Host lines, or one that names no host: 400;
 * - a transfer coding other than chunked: 400;
 * - a target that is not a path (`GET *`): 400;
 * - CONNECT: 405, after the answers to the requests before it.
 */
export function checkRequestHead(app: FastifyInstance, seen: RawAnswerSeen): void {
  const server = app.server;
  const unmet = new WeakSet<IncomingMessage>();
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    awaitingContinue.add(res);
    server.emit('request', req, res);
  });
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    unmet.add(req);
    server.emit('request', req, res);
  });
  // Node ends the connection of a CONNECT nobody listens for, cutting off the answers before it.
  server.on('connect', (_req: IncomingMessage, socket: Socket) => {
    socket.on('error', () => {});
    const reason = 'CONNECT is not served here';
    seen({ status: 405, method: 'CONNECT', remote: socket.remoteAddress ?? null, reason });
    answerAfterInFlight(socket, rawErrorResponse(405, reason));
  });
  app.addHook('onRequest', (request, _reply, done) => {
    const raw = request.raw;
    const host = raw.headers.host;
    if (host === undefined) {
      if (raw.httpVersion === '1.1') return done(new AppError(400, 'the Host header is missing'));
    } else if (!HOST_VALUE.test(host) || hostLines(raw.rawHeaders) > 1) {
      // RFC 9112 §3.2: a 400 for more than one Host line or an invalid one. Node keeps the first
      // of several, while a proxy in front may have routed by another.
      return done(new AppError(400, 'the Host header must appear once and name a host'));
    }
    if (unmet.has(raw)) return done(new AppError(417, 'the only expectation understood is 100-continue'));
    // `GET *` was routed to the portal's catch-all page. (Absolute form, http://host/…, is a path.)
    const url = raw.url ?? '';
    if (
      url.charCodeAt(0) !== 0x2f &&
      !(url === '*' && raw.method === 'OPTIONS') &&
      !/^https?:\/\//i.test(url)
    )
      return done(new AppError(400, 'the request target must be a path'));
    // Node takes `gzip, chunked` and hands on the body still gzipped: it would be stored so. (HTTP
    // suggests 501; every refusal of a request's shape here is a 4xx.)
    const coding = raw.headers['transfer-encoding'];
    if (coding !== undefined && coding.trim().toLowerCase() !== 'chunked')
      return done(new AppError(400, 'the only transfer coding understood is chunked'));
    done();
  });
  const beforeParsing: preParsingHookHandler = (_request, reply, payload, done) => {
    sendContinue(reply.raw);
    done(null, payload);
  };
  app.addHook('onRoute', (route) => {
    const methods = asArray(route.method);
    if (methods.every((m) => m === 'GET' || m === 'HEAD')) return;
    const streaming = route.config?.streamingBody;
    if (!streaming) {
      route.preParsing = [beforeParsing, ...asArray(route.preParsing)];
      return;
    }
    // A body of a type the route does not stream is parsed before authentication, as elsewhere.
    route.preParsing = [
      (request, reply, payload, done) => {
        if (!streamed(streaming, request.raw)) sendContinue(reply.raw);
        done(null, payload);
      },
      ...asArray(route.preParsing),
    ];
    route.preHandler = [
      ...asArray(route.preHandler),
      (_request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
        sendContinue(reply.raw);
        done();
      },
    ];
  });
}
