// Accepting a burst of new connections at once instead of one per event-loop turn.
//
// libuv (1.45 on, so Node 20, 22 and 24) accepts a single connection each time the event loop
// polls a listening socket. Under load a turn serves every busy connection and lasts tens to
// hundreds of milliseconds, so a thousand clients arriving together are accepted over many
// seconds: in 1 MiB downloads at 1,000 connections, 300 of them were still in the kernel's queue
// 4 s into the run, and those clients made the p99 (docs/benchmarks.md). After libuv
// accepts one, the native module takes the rest that are waiting (up to a bound per turn), and each
// becomes a socket as Node's own accept makes it for an HTTP server. Without the native module (or
// with one built before it had this), libuv's pace.
import { type Server, Socket } from 'node:net';
import { nativeModule } from '../native/native.js';

/** Connections taken per turn besides libuv's one: bounds the work one turn adds. */
const MAX_PER_TURN = 128;

/** What Node's net.Server keeps for its sockets (lib/net.js, onconnection); not in its types. */
interface ServerInternals {
  _handle?: { fd?: number } | null;
  _connections: number;
  noDelay?: boolean;
  keepAlive?: boolean;
  keepAliveInitialDelay?: number;
  highWaterMark?: number;
  allowHalfOpen?: boolean;
  maxConnections?: number;
}

export function acceptWaitingConnections(server: Server, native = nativeModule()): void {
  // A module built by an older version (only the JavaScript rebuilt since) lacks the function.
  if (typeof native?.acceptPending !== 'function') return;
  const internals = server as unknown as ServerInternals;
  let accepting = false;
  server.prependListener('connection', () => {
    // The sockets emitted below come back through this listener.
    if (accepting) return;
    const fd = internals._handle?.fd;
    if (typeof fd !== 'number' || fd < 0) return;
    accepting = true;
    try {
      for (const conn of native.acceptPending(fd, MAX_PER_TURN)) adopt(server, internals, conn);
    } catch {
      // Thrown in libuv's accept callback it would end the process; the connections left waiting
      // are libuv's to accept, one per turn, as without this module.
    } finally {
      accepting = false;
    }
  });
}

/**
 * What Node's onconnection does with a descriptor libuv accepted, for the options an HTTP server
 * uses (not pauseOnConnect, the 'drop' event, blockList or the diagnostics channel).
 */
function adopt(server: Server, internals: ServerInternals, fd: number): void {
  const socket = new Socket({
    fd,
    allowHalfOpen: internals.allowHalfOpen ?? false,
    readable: true,
    writable: true,
    ...(internals.highWaterMark
      ? { readableHighWaterMark: internals.highWaterMark, writableHighWaterMark: internals.highWaterMark }
      : {}),
  });
  if (internals.maxConnections && internals._connections >= internals.maxConnections) {
    socket.destroy();
    return;
  }
  if (internals.noDelay !== false) socket.setNoDelay(true);
  // net.Server keeps the delay in seconds; setKeepAlive takes milliseconds.
  if (internals.keepAlive) socket.setKeepAlive(true, (internals.keepAliveInitialDelay ?? 0) * 1000);
  // Counted as the server's own, so server.close() waits for it and getConnections() sees it.
  internals._connections++;
  Object.assign(socket, { server, _server: server });
  server.emit('connection', socket);
}
