// Download bodies sent by Linux sendfile(2): the kernel moves the file's pages into the socket and
// no byte passes through JavaScript (native/sendfile.c). Measured in docs/benchmarks.md; why a
// native module at all: docs/decisions.md. Without the module, downloads stream as before. A
// private optimisation of the local store (LocalBlobStore.directBody): nothing above storage uses it.
import { closeSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import { nativeError, nativeModule } from '../../native/native.js';
import type { DirectBody } from '../blob-store.js';

const EMPTY = Buffer.alloc(0);

/** The socket's descriptor when the bytes may go to it raw: plain TCP, not TLS. */
function rawSocketFd(socket: Socket | null): number | null {
  if (!socket || (socket as Socket & { encrypted?: boolean }).encrypted) return null;
  const fd = (socket as Socket & { _handle?: { fd?: number } })._handle?.fd;
  return typeof fd === 'number' && fd >= 0 ? fd : null;
}

export function canSendfile(res: ServerResponse): boolean {
  return rawSocketFd(res.socket) !== null && nativeModule() !== null;
}

/**
 * A Readable that never yields data: piped into the response (as Fastify does with a stream
 * body), it flushes the headers, waits until they have left user space, then has the native
 * thread write `length` bytes of `file` from `offset` straight into the socket, and ends, so the
 * response finishes as usual. Destroying it (the client went away) stops the transfer and closes
 * the file.
 */
export class SendfileBody extends Readable implements DirectBody {
  /** Bytes handed to the socket once `settled` resolves; see progress() before that. */
  sent = 0;
  /** Resolves when the native side is done with the file (at once if it never started). */
  readonly settled: Promise<number>;
  private settle!: (sent: number) => void;
  private transfer: object | null = null;
  private started = false;

  constructor(
    private readonly res: ServerResponse,
    /** The open file, closed by this body (synchronously: see LocalBlobStore.stat). */
    private readonly fd: number,
    private readonly offset: number,
    private readonly length: number,
  ) {
    super();
    this.settled = new Promise((resolve) => {
      this.settle = resolve;
    });
  }

  override _read(): void {
    if (this.started) return;
    this.started = true;
    if (this.length === 0) {
      this.push(null);
      return;
    }
    this.res.flushHeaders();
    this.whenFlushed(() => this.begin());
  }

  /** Runs `next` once everything written to the socket so far (the headers) has left user space. */
  private whenFlushed(next: () => void): void {
    const socket = this.res.socket;
    if (!socket || socket.destroyed) {
      this.destroy(new Error('connection closed before the body'));
      return;
    }
    // Writes complete in order: this callback means the headers are in the kernel.
    socket.write(EMPTY, (err) => {
      if (err || this.destroyed) this.destroy(err ?? undefined);
      else if (socket.writableLength > 0) socket.once('drain', () => this.whenFlushed(next));
      else next();
    });
  }

  private begin(): void {
    const fd = rawSocketFd(this.res.socket);
    const native = nativeModule();
    if (fd === null || !native) {
      this.destroy(new Error('socket is not available for sendfile'));
      return;
    }
    try {
      this.transfer = native.start(fd, this.fd, this.offset, this.length, (errno, sent) => {
        this.transfer = null;
        this.sent = sent;
        this.settle(sent);
        if (errno === 0) this.push(null);
        else if (!this.destroyed) this.destroy(nativeError(errno, 'sendfile'));
      });
    } catch (err) {
      // Out of descriptors, say: this download fails (the headers are out, so the connection is
      // cut), the server carries on.
      this.destroy(err as Error);
    }
  }

  /** Bytes handed to the socket so far, while the transfer runs too. */
  progress(): number {
    return this.transfer ? (nativeModule()?.sent(this.transfer) ?? this.sent) : this.sent;
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    if (this.transfer) nativeModule()?.cancel(this.transfer);
    else this.settle(this.sent);
    // The native side holds its own duplicate of the descriptor, so closing ours now is safe.
    try {
      closeSync(this.fd);
    } catch {
      // (EBADF cannot happen: only this body closes it; EIO on close of a read-only file means nothing.)
    }
    cb(err);
  }
}
