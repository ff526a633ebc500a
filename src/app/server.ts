// Starts `remessa serve`: services, HTTP app and background workers, with a clean shutdown.
import dns from 'node:dns';
import { isIP } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { type AppOptions, buildApp } from '../platform/http/app.js';
import type { SocketWithResponse } from '../platform/http/connection-limits.js';
import { startMetricsServer } from '../platform/http/metrics-server.js';
import type { Logger } from '../platform/logger.js';
import { tuneMemory } from '../platform/memory.js';
import { downloadPath, uploadPath } from '../platform/native/native.js';
import { PeriodicWorker } from '../platform/worker.js';
import type { Config } from './config.js';
import { createServices, type ServiceOptions, type Services } from './services.js';

export interface RunningServer {
  app: FastifyInstance;
  services: Services;
  /** Background workers by job name (tests call runOnce() instead of waiting). */
  workers: Map<string, PeriodicWorker>;
  /** The address actually bound, e.g. http://127.0.0.1:40123 */
  address: string;
  close(): Promise<void>;
}

/**
 * Connections the kernel may hold for us before accept(). Node's default, 511, overflowed when a
 * thousand clients connected at once while the event loop was busy (`nstat TcpExtListenOverflows`:
 * ~5,000 per benchmark run): the kernel dropped their handshakes and the clients waited out SYN-ACK
 * retransmissions (1 s, 3 s…). Linux caps the value at net.core.somaxconn (4096 by default since
 * 5.4); SYN cookies still guard against floods.
 */
const LISTEN_BACKLOG = 4096;

/**
 * The one address a host name given as REMESSA_HOST is served on: the first it resolves to, as
 * Node's own listen() takes it. Given a name, Fastify binds every address of `localhost`
 * (127.0.0.1 and ::1) and serves the others from servers it makes itself, without this app's
 * connection guards (per-address limit, accept drain, the envelope for unparseable requests,
 * half-closed clients). Clients that resolve the name try its other addresses.
 */
async function listenAddress(host: string): Promise<string> {
  if (isIP(host)) return host;
  // Through the module object, as Fastify looks names up: test/listen-host.test.ts stubs both.
  return (await dns.promises.lookup(host)).address;
}

export async function startServer(
  config: Config,
  log: Logger,
  opts: ServiceOptions & AppOptions = {},
): Promise<RunningServer> {
  tuneMemory();
  const services = await createServices(config, log, opts);
  let app: FastifyInstance | undefined;
  let metricsServer: Awaited<ReturnType<typeof startMetricsServer>> | null = null;
  const connections = new Set<SocketWithResponse>();
  try {
    app = await buildApp(services, opts);
    // Every connection, from the first, for the shutdown (close() below).
    app.server.on('connection', (socket: SocketWithResponse) => {
      connections.add(socket);
      socket.once('close', () => connections.delete(socket));
    });
    await app.listen({ port: config.port, host: await listenAddress(config.host), backlog: LISTEN_BACKLOG });
    if (config.metricsPort !== null)
      metricsServer = await startMetricsServer(
        services.metrics,
        { port: config.metricsPort, host: config.metricsHost },
        log,
      );
  } catch (err) {
    await app?.close();
    await services.close();
    throw err;
  }
  const addr = app.server.address();
  const address =
    typeof addr === 'object' && addr
      ? `http://${addr.address.includes(':') ? `[${addr.address}]` : addr.address}:${addr.port}`
      : String(addr);
  log.info(
    {
      address,
      baseUrl: config.baseUrl,
      portal: new URL(config.portalPath, config.baseUrl).href,
      dataDir: config.dataDir,
      database: services.dialect,
      storage: services.blobs.description,
      downloads: downloadPath(config.sendfile),
      uploads: uploadPath(config.directIo),
      metrics: metricsServer?.address ?? 'off',
    },
    // The portal's address first: it is what a new user opens next.
    `Remessa is serving the portal at ${new URL(config.portalPath, config.baseUrl).href} and the API at ${config.baseUrl}; storage: ${services.blobs.description}`,
  );
  const workers = new Map(services.jobs.map((job) => [job.name, new PeriodicWorker(job, log)]));
  if (opts.startWorkers !== false) for (const w of workers.values()) w.start();
  let closed = false;
  return {
    app,
    services,
    workers,
    address,
    async close() {
      if (closed) return;
      closed = true;
      await Promise.all([...workers.values()].map((w) => w.stop()));
      await metricsServer?.close();
      // Node closes the connections that are idle when closing starts; one whose response was
      // still going out would keep the close waiting for its keep-alive timeout (72 s) once done.
      // One still sending its request head is not idle to Node, and closing stops Node's check of
      // its time limit: a client that never finishes one held the close for ever. Neither has a
      // request under way, so both are closed, every 250 ms until the close is done.
      const idle = setInterval(() => {
        app.server.closeIdleConnections();
        for (const socket of connections) if (!socket._httpMessage) socket.destroy();
      }, 250);
      try {
        await app.close();
      } finally {
        clearInterval(idle);
      }
      await services.close();
    },
  };
}
