// A time limit on request bodies: Node bounds the header phase itself (headersTimeout) but has no
// body timeout that would not also cut long uploads.

import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../http-error.js';
import { hasBody } from './bodies.js';
import { rawErrorResponse } from './raw-answers.js';

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
