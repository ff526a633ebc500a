// Pipelined requests, one at a time per connection, in order.
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

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
