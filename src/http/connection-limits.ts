// Limits that keep one client from holding the server (docs/security.md): a time limit on
// request bodies, and a cap on the connections one peer address may hold. Node bounds the header
// phase itself (headersTimeout) but has no body timeout that would not also cut long uploads, and
// no per-peer limit at all. Also where Node would answer bare or cut the connection: the request
// head's rules (Expect, Host, codings, CONNECT) and requests it cannot parse, each answered with
// an envelope after the answers before it on the connection.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  onSendHookHandler,
  preParsingHookHandler,
} from 'fastify';
import { AppError, type ErrorStatus } from './http-error.js';
import { errorEnvelope } from './presenters.js';
import { discardRestOfBody } from './request-body.js';
import { DEFAULT_CSP, SECURITY_HEADERS } from './security-headers.js';

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
function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** Whether the request's body is of a type the route streams. */
function streamed(streaming: StreamingBody, req: IncomingMessage): boolean {
  const type = (req.headers['content-type'] ?? '').toLowerCase();
  return streaming.types.some((t) => type.startsWith(t));
}

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
      early.add(socket);
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

export const asArray = <T>(value: T | T[] | undefined): T[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];

/** Connections whose request was answered before its body had arrived (guardBodies). */
const early = new WeakSet<Socket>();

/** Connections whose parse error is being answered (Node reports it again on every later byte). */
const failing = new WeakSet<Socket>();

/** How long a parse error's answer waits for the responses still going out before it. */
const IN_FLIGHT_WAIT_MS = 60_000;

/** Node's socket, with the response it is writing now (none while idle or reading a request head). */
export type SocketWithResponse = Socket & { _httpMessage?: ServerResponse | null };

/**
 * Told of each answer written on the socket before a route saw the request (a request Node could
 * not parse, CONNECT), for the access log and the metrics, which otherwise never hear of them.
 */
export type RawAnswerSeen = (answer: {
  status: number;
  method: string | null;
  remote: string | null;
  reason: string;
}) => void;

/**
 * Answers a request Node could not parse (Fastify's clientErrorHandler): a 400 envelope (408 for
 * Node's own time limits), then the connection is closed. A bad request pipelined behind good
 * ones waits for their answers first: writing at once would put the 400 where the client expects
 * an earlier request's answer (or in the middle of its body), and an upload already stored would
 * lose its 200.
 */
export function clientErrorAnswerer(seen: RawAnswerSeen): (err: Error, socket: Socket) => void {
  return (err, socket) => {
    if (failing.has(socket)) return;
    failing.add(socket);
    if (!socket.writable) return;
    // This request was answered already, before its body was read: a second answer would be taken
    // by the client as that of its next request. That answer closes the connection once it is out
    // (guardBodies); destroyed now, it was lost (a coding Node refuses, `Transfer-Encoding: gzip`,
    // fails the parse right after the request was answered).
    if (early.has(socket)) return;
    const code = (err as NodeJS.ErrnoException).code;
    // Node's own time limits on a request's headers and whole request (docs/security.md).
    const timedOut = code === 'ERR_HTTP_REQUEST_TIMEOUT' || code === 'ERR_HTTP_HEADERS_TIMEOUT';
    const status = timedOut ? 408 : 400;
    const reason = timedOut
      ? 'the request did not arrive in time'
      : // (cut in its head or in its body)
        code === 'HPE_INVALID_EOF_STATE'
        ? 'the request ended before it was complete'
        : 'malformed HTTP request';
    // A connection that never sent a byte (a browser's preconnect) asked for nothing: answered,
    // but not logged or counted as a refused request.
    if (socket.bytesRead > 0)
      seen({
        status,
        method: null,
        remote: socket.remoteAddress ?? null,
        reason: code ? `${reason} (${code})` : reason,
      });
    answerAfterInFlight(socket, rawErrorResponse(status, reason));
  };
}

/**
 * Writes a raw answer and ends the connection once the responses to the requests before it on the
 * connection have gone out (or at once, if the one in flight is still reading its own body).
 */
function answerAfterInFlight(socket: Socket, answer: string): void {
  const giveUp = setTimeout(() => socket.destroy(), IN_FLIGHT_WAIT_MS);
  giveUp.unref();
  socket.once('close', () => clearTimeout(giveUp));
  const answerNowOrLater = () => {
    // Node hands the socket to the next pipelined response when one finishes.
    const inFlight = (socket as SocketWithResponse)._httpMessage;
    // A body cut short (a half-close mid-body) is the in-flight request's own error: answer now.
    if (!inFlight || inFlight.writableFinished || !inFlight.req.complete) {
      clearTimeout(giveUp);
      if (socket.writable) socket.end(answer);
      return;
    }
    inFlight.once('finish', answerNowOrLater);
  };
  answerNowOrLater();
}

/** A complete HTTP/1.1 error answer that closes the connection, for when Fastify cannot answer. */
export function rawErrorResponse(status: ErrorStatus, detail: string): string {
  const body = JSON.stringify(errorEnvelope(status, detail));
  const text = errorEnvelope(status).description;
  const headers = { ...SECURITY_HEADERS, 'Content-Security-Policy': DEFAULT_CSP };
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return `HTTP/1.1 ${status} ${text}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${lines.join('')}Connection: close\r\n\r\n${body}`;
}

/**
 * Refuses (closes at once) a connection from an address that already holds `max` open ones, so a
 * flood from one peer cannot use up the process's descriptors. 0 turns the limit off.
 */
export function limitConnectionsPerAddress(server: Server, max: number): void {
  if (max <= 0) return;
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const n = open.get(address) ?? 0;
    if (n >= max) {
      socket.destroy();
      return;
    }
    open.set(address, n + 1);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left <= 0) open.delete(address);
      else open.set(address, left);
    });
  });
}

interface WatchedBody {
  req: IncomingMessage;
  socket: Socket;
  bytesRead: number;
  lastProgress: number;
  /** null: no whole-body deadline (streaming routes) */
  deadline: number | null;
}

/**
 * A request body that brings no byte for `idleMs`, or (on routes that read a small body before
 * authenticating) is not complete within `smallBodyMs`, is answered 408 and the connection closed.
 * Time the server spends not reading (buffered bytes, backpressure) does not count against the client.
 */
export function limitBodyTime(app: FastifyInstance, opts: { idleMs: number; smallBodyMs: number }): void {
  const watched = new Set<WatchedBody>();
  let timer: NodeJS.Timeout | null = null;
  const tickMs = Math.max(50, Math.min(1000, Math.floor(Math.min(opts.idleMs, opts.smallBodyMs) / 4)));

  const cut = (w: WatchedBody, reason: string) => {
    const err = new AppError(408, reason);
    const res = (w.socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    // The answer first, then the request is destroyed so whoever reads the body fails (and cleans up).
    if (res?.headersSent || !w.socket.writable) {
      w.req.destroy(err);
      return;
    }
    w.socket.end(rawErrorResponse(408, reason), () => w.req.destroy(err));
  };

  const tick = () => {
    const now = Date.now();
    for (const w of watched) {
      if (w.req.complete || w.socket.destroyed) {
        watched.delete(w);
        continue;
      }
      const waitingOnUs = w.req.readableLength > 0 || w.req.readableFlowing === false;
      if (w.socket.bytesRead !== w.bytesRead || waitingOnUs) {
        w.bytesRead = w.socket.bytesRead;
        w.lastProgress = now;
      }
      if (w.deadline !== null && now >= w.deadline) {
        watched.delete(w);
        cut(w, `the request body did not arrive within ${opts.smallBodyMs / 1000}s`);
      } else if (now - w.lastProgress >= opts.idleMs) {
        watched.delete(w);
        cut(w, `no part of the request body arrived for ${opts.idleMs / 1000}s`);
      }
    }
    if (watched.size === 0 && timer) {
      clearInterval(timer);
      timer = null;
    }
  };

  app.addHook('onRequest', (request, _reply, done) => {
    const req = request.raw;
    if (hasBody(req) && !req.complete) {
      const now = Date.now();
      watched.add({
        req,
        socket: req.socket,
        bytesRead: req.socket.bytesRead,
        lastProgress: now,
        deadline: request.routeOptions.config?.streamingBody ? null : now + opts.smallBodyMs,
      });
      if (!timer) {
        timer = setInterval(tick, tickMs);
        timer.unref();
      }
    }
    done();
  });
  app.addHook('onClose', (_app, done) => {
    if (timer) clearInterval(timer);
    timer = null;
    watched.clear();
    done();
  });
}

/** Most requests one connection may have waiting behind the one being answered (pipelining). */
const MAX_PIPELINED = 16;

/**
 * Pipelined requests (several sent before the first answer) run one at a time per connection, in
 * order: each waits for its turn (Node gives its response the socket) before its route runs. Run
 * as Node handed them over, each queued download opened its file and buffered its first megabytes
 * for a response that had no socket yet (Node stops parsing only when written bytes pile up, and
 * sendfile writes behind its back), and such a response never closed when the client went away:
 * 300 GETs on one connection held 301 open files and ~1 GB until a garbage collection (found by a
 * probe with raw sockets). A request whose connection closes before its turn never runs. Past
 * MAX_PIPELINED waiting, the connection is closed.
 */
export function serializePipelining(app: FastifyInstance): void {
  /** Requests of each connection waiting for their turn. */
  const waiting = new WeakMap<Socket, number>();
  app.addHook('onRequest', (request, reply, done) => {
    // Its turn already: the response has the socket (the usual case, one request at a time).
    if (reply.raw.socket) return done();
    const socket = request.raw.socket;
    const queued = waiting.get(socket) ?? 0;
    if (queued >= MAX_PIPELINED) {
      socket.destroy();
      return;
    }
    waiting.set(socket, queued + 1);
    reply.raw.once('socket', () => {
      waiting.set(socket, (waiting.get(socket) ?? 1) - 1);
      done();
    });
  });
}
