// Upload bodies and what happens to them when an upload fails part-way.
import type { IncomingMessage } from 'node:http';
import { finished, PassThrough, type Readable } from 'node:stream';
import { AppError } from './http-error.js';

/** After a failed upload, at most this much more of the body is read and discarded. */
const DRAIN_LIMIT = 64 * 1024 * 1024;

/**
 * The raw request body as a stream the blob store may destroy on failure without tearing down the
 * socket (the error response still has to get out). A body that ends early (client abort, reset,
 * a half-close before Content-Length bytes, the body timeout) fails the stream with a 4xx AppError.
 */
export function detachedBody(req: IncomingMessage): Readable {
  // A small buffer on purpose: with 1 MiB, chunks lived long enough to be promoted out of V8's
  // young generation, and raw uploads then cost a full collection every ~16 MiB
  // (docs/benchmarks.md, "Large transfers").
  const body = new PassThrough({ highWaterMark: 64 * 1024 });
  // The store reports the failure through its own pipeline; once that has settled nobody listens,
  // and a late error must not become an uncaught exception that ends the process.
  body.on('error', () => {});
  req.pipe(body);
  // finished() also answers for a request that ended before this was called: by the time the
  // route runs (after authentication), a half-closed connection may be gone already.
  finished(req, (err) => {
    if (!err || body.destroyed) return;
    body.destroy(req.errored instanceof AppError ? req.errored : bodyEndedEarly());
  });
  return body;
}

/** The client stopped sending before the body was complete. */
export const bodyEndedEarly = () => new AppError(400, 'the request body ended before it was complete');

/** How long the discarding may take before the connection is closed anyway (a trickling client). */
const DRAIN_MS = 15_000;

/** Requests whose rest of body is being discarded. */
const draining = new WeakSet<IncomingMessage>();

/**
 * A failed upload answers early, while the client is still sending. Until it has sent everything
 * it will not read the answer, so read and drop the rest; past DRAIN_LIMIT, or DRAIN_MS, give up
 * and close the connection instead.
 */
export function discardRestOfBody(req: IncomingMessage): void {
  if (req.readableEnded || req.destroyed || draining.has(req)) return;
  draining.add(req);
  req.unpipe();
  let left = DRAIN_LIMIT;
  const deadline = setTimeout(() => req.destroy(), DRAIN_MS).unref();
  req.on('close', () => clearTimeout(deadline));
  req.on('data', (chunk: Buffer) => {
    left -= chunk.length;
    if (left < 0) req.destroy();
  });
  req.resume();
}
