// Upload bodies and what happens to them when an upload fails part-way.
import type { IncomingMessage } from 'node:http';
import { PassThrough, type Readable } from 'node:stream';

/** After a failed upload, at most this much more of the body is read and discarded. */
const DRAIN_LIMIT = 64 * 1024 * 1024;

/**
 * The raw request body as a stream the blob store may destroy on failure without tearing down the
 * socket (the error response still has to get out). A client abort still reaches the store.
 */
export function detachedBody(req: IncomingMessage): Readable {
  // A small buffer on purpose: with 1 MiB, chunks lived long enough to be promoted out of V8's
  // young generation, and raw uploads then cost a full collection every ~16 MiB
  // (docs/benchmarks.md, finding 4).
  const body = new PassThrough({ highWaterMark: 64 * 1024 });
  req.pipe(body);
  req.once('close', () => {
    if (!req.readableEnded) body.destroy(new Error('client aborted the upload'));
  });
  return body;
}

/**
 * A failed upload answers early, while the client is still sending. Until it has sent everything
 * it will not read the answer, so read and drop the rest; past DRAIN_LIMIT give up and close the
 * connection instead.
 */
export function discardRestOfBody(req: IncomingMessage): void {
  if (req.readableEnded || req.destroyed) return;
  req.unpipe();
  let left = DRAIN_LIMIT;
  req.on('data', (chunk: Buffer) => {
    left -= chunk.length;
    if (left < 0) req.destroy();
  });
  req.resume();
}
