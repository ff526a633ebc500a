// The Prometheus listener (REMESSA_METRICS_PORT, off by default): GET /metrics on its own port and
// address (loopback by default), apart from the public API, so the figures never reach the
// internet through the load balancer and a scrape never counts against the API's limits.
import { createServer, type Server } from 'node:http';
import type { Metrics } from '../../features/ops/metrics.js';
import type { Logger } from '../logger.js';

export async function startMetricsServer(
  metrics: Metrics,
  opts: { port: number; host: string },
  log: Logger,
): Promise<{ address: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '').split('?', 1)[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('not found: try /metrics\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain; charset=utf-8' }).end();
      return;
    }
    metrics.scrape().then(
      (text) => {
        res.writeHead(200, { 'Content-Type': metrics.contentType, 'Cache-Control': 'no-store' });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (err: unknown) => {
        // A collector that cannot read the database (it is down): say so, keep serving.
        log.warn({ err }, 'metrics scrape failed');
        res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end('scrape failed\n');
      },
    );
  });
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address();
  const address =
    typeof addr === 'object' && addr
      ? `http://${addr.address.includes(':') ? `[${addr.address}]` : addr.address}:${addr.port}/metrics`
      : String(addr);
  return {
    address,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
