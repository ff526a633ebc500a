// A TCP proxy between Remessa and PostgreSQL that loses the answer to one COMMIT, the way a network
// drop after the client sent it does: the COMMIT is forwarded (or not), then the connection is cut
// both ways without relaying the server's answer. What the client then knows: nothing.
import { connect, createServer, type Server, type Socket } from 'node:net';

export type CutMode =
  /** the COMMIT reaches PostgreSQL, which commits; its answer is lost */
  | 'after-commit'
  /** the connection is cut instead of forwarding the COMMIT: PostgreSQL rolls back */
  | 'before-commit';

export class CommitCutProxy {
  /** COMMITs cut so far */
  cuts = 0;
  private armed: { mode: CutMode; match: RegExp } | null = null;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(target: { host: string; port: number }): Promise<CommitCutProxy> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const proxy = new CommitCutProxy(server, (server.address() as { port: number }).port);
    server.on('connection', (client) => proxy.relay(client, target));
    return proxy;
  }

  /** `url` (a PostgreSQL URL) with its host and port replaced by this proxy's. */
  urlFor(url: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  /** The next COMMIT of a transaction whose statements matched `match` is cut (once). */
  arm(mode: CutMode, match: RegExp = /./): void {
    this.armed = { mode, match };
  }

  private relay(client: Socket, target: { host: string; port: number }): void {
    const server = connect(target.port, target.host);
    let since = ''; // what the client sent since its last COMMIT
    let answering = true;
    const cut = () => {
      client.destroy();
      server.destroy();
    };
    for (const s of [client, server]) {
      this.sockets.add(s);
      s.on('error', cut);
      s.on('close', () => {
        this.sockets.delete(s);
        cut();
      });
    }
    client.on('data', (chunk: Buffer) => {
      const text = chunk.toString('latin1');
      const commit = /\bcommit\b/i.test(text);
      const armed = commit ? this.armed : null;
      if (armed?.match.test(since + text)) {
        this.armed = null;
        this.cuts++;
        if (armed.mode === 'before-commit') return cut();
        answering = false;
        server.write(chunk);
        // Long enough for PostgreSQL to commit; its answer is never relayed.
        setTimeout(cut, 200);
        return;
      }
      since = commit ? '' : (since + text).slice(-100_000);
      server.write(chunk);
    });
    server.on('data', (chunk: Buffer) => {
      if (answering) client.write(chunk);
    });
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
