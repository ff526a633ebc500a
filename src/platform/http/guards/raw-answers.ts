// Answers written straight on the socket, for when Fastify cannot answer: a request Node could not
// parse, CONNECT, a body too slow. Each waits for the answers before it on the connection.
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { ErrorStatus } from '../http-error.js';
import { errorEnvelope } from '../presenters.js';
import { DEFAULT_CSP, SECURITY_HEADERS } from '../security-headers.js';
import { answeredBeforeBody } from './bodies.js';

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
    if (answeredBeforeBody.has(socket)) return;
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
export function answerAfterInFlight(socket: Socket, answer: string): void {
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
