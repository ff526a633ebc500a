// HTTP(S) agents for the S3 client that bound how long a silent store can hold a request. Without
// them a gateway that accepts connections and never answers (a network partition, a full Ceph
// cluster that never acknowledges a write) held every request, and start-up, for the whole outage.
//
// Two bounds, both kept per socket, so a request costs nothing more:
// - a new connection must be open within `connectMs`;
// - a socket in use fails once it has received no byte for `idleMs` while Remessa was waiting for
//   bytes. Not a limit on the whole request: a large upload or download takes as long as it takes
//   while bytes keep moving. Time a download's socket spends paused because its own reader is slow
//   (backpressure) is not the store's silence and does not count.
// The failure is an ETIMEDOUT error, which the SDK retries like any network error and the HTTP
// layer answers as 503 with Retry-After once the retries are spent (errors.ts, isUnavailable).
import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

export interface AgentTimeouts {
  connectMs: number;
  idleMs: number;
  maxSockets: number;
}

function timeoutError(message: string): Error {
  return Object.assign(new Error(message), { code: 'ETIMEDOUT' });
}

/** Installs both bounds on a socket the agent just created. */
function bound(agent: http.Agent, socket: Socket, t: AgentTimeouts, connected: string): void {
  const connect = setTimeout(
    () => socket.destroy(timeoutError(`no connection to the S3 store within ${t.connectMs / 1000} s`)),
    t.connectMs,
  );
  socket.once(connected, () => clearTimeout(connect));
  socket.once('close', () => clearTimeout(connect));
  // The agent's `timeout` option arms the socket's inactivity timer, at creation and each time the
  // socket goes back to the pool (the agent then closes an idle one itself).
  let pausedSinceTimer = false;
  let disarmed = false;
  socket.on('pause', () => {
    pausedSinceTimer = true;
  });
  socket.on('resume', () => {
    if (!disarmed) return;
    disarmed = false;
    socket.setTimeout(t.idleMs);
  });
  socket.on('timeout', () => {
    if (socket.isPaused()) {
      // Its reader is behind; the timer starts again once it reads.
      disarmed = true;
      return;
    }
    if (pausedSinceTimer) {
      // Paused for part of that time: the store gets a whole period of its own.
      pausedSinceTimer = false;
      socket.setTimeout(t.idleMs);
      return;
    }
    const free = Object.values(agent.freeSockets).some((list) => list?.includes(socket));
    if (!free) socket.destroy(timeoutError(`the S3 store sent nothing for ${t.idleMs / 1000} s`));
  });
}

export class BoundedHttpAgent extends http.Agent {
  constructor(private readonly t: AgentTimeouts) {
    super({ keepAlive: true, maxSockets: t.maxSockets, timeout: t.idleMs });
  }

  override createConnection(
    options: http.ClientRequestArgs,
    callback?: (err: Error | null, stream: Duplex) => void,
  ): Duplex | null | undefined {
    const socket = super.createConnection(options, callback) as Socket;
    bound(this, socket, this.t, 'connect');
    return socket;
  }
}

export class BoundedHttpsAgent extends https.Agent {
  constructor(private readonly t: AgentTimeouts) {
    super({ keepAlive: true, maxSockets: t.maxSockets, timeout: t.idleMs });
  }

  override createConnection(
    options: https.RequestOptions,
    callback?: (err: Error | null, stream: Duplex) => void,
  ): Duplex | null | undefined {
    const socket = super.createConnection(options, callback) as Socket;
    bound(this, socket, this.t, 'secureConnect');
    return socket;
  }
}
