// A TCP proxy in front of PostgreSQL or S3 that can make the backend go silent the way a network
// partition does: packets dropped, not refused. While `silent`, nothing is forwarded in either
// direction and no socket is closed; new connections are accepted and held without reaching the
// backend. Once it speaks again (`restore`), held bytes and connections go through, as TCP's
// retransmissions would deliver them once the network heals.
import { connect, createServer, type Server, type Socket } from 'node:net';

export class BlackholeProxy {
  port = 0;
  private silent = false;
  private readonly server: Server;
  private readonly open = new Set<Socket>();
  /** Connections accepted while silent, not yet forwarded. */
  private held: Socket[] = [];
  /** Restarts the forwarding of each paused connection. */
  private readonly resumers = new Set<() => void>();

  private constructor(private readonly target: { host: string; port: number }) {
    this.server = createServer((client) => this.accept(client));
  }

  static async start(target: { host: string; port: number }): Promise<BlackholeProxy> {
    const p = new BlackholeProxy(target);
    await new Promise<void>((resolve) => p.server.listen(0, '127.0.0.1', resolve));
    p.port = (p.server.address() as { port: number }).port;
    return p;
  }

  /** Proxies `url` (http://host:port or postgres://…@host:port/db): the same URL through the proxy. */
  static async for(url: string): Promise<{ proxy: BlackholeProxy; url: string }> {
    const u = new URL(url);
    const proxy = await BlackholeProxy.start({
      host: u.hostname,
      port: Number(u.port || (u.protocol === 'http:' ? 80 : 5432)),
    });
    u.hostname = '127.0.0.1';
    u.port = String(proxy.port);
    return { proxy, url: u.protocol === 'http:' ? u.origin : u.toString() };
  }

  get origin(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Stops forwarding everything, without closing anything. */
  silence(): void {
    this.silent = true;
    for (const s of this.open) s.pause();
  }

  /** Forwards again: what was held goes through. */
  restore(): void {
    this.silent = false;
    const held = this.held;
    this.held = [];
    for (const client of held) if (!client.destroyed) this.forward(client);
    for (const resume of this.resumers) resume();
  }

  private accept(client: Socket): void {
    this.track(client);
    if (this.silent) {
      client.pause();
      this.held.push(client);
      return;
    }
    this.forward(client);
  }

  private track(s: Socket): void {
    this.open.add(s);
    s.on('error', () => {});
    s.once('close', () => this.open.delete(s));
  }

  private forward(client: Socket): void {
    const upstream = connect(this.target.port, this.target.host);
    this.track(upstream);
    const closeBoth = () => {
      client.destroy();
      upstream.destroy();
    };
    client.once('close', closeBoth);
    upstream.once('close', closeBoth);
    this.relay(client, upstream);
    this.relay(upstream, client);
  }

  /** Copies `from` to `to` with backpressure; a silent proxy leaves both paused. */
  private relay(from: Socket, to: Socket): void {
    let waitingForDrain = false;
    from.on('data', (chunk: Buffer) => {
      if (!to.write(chunk)) {
        waitingForDrain = true;
        from.pause();
        to.once('drain', () => {
          waitingForDrain = false;
          if (!this.silent) from.resume();
        });
      }
    });
    from.on('end', () => to.end());
    const resume = () => {
      if (!waitingForDrain) from.resume();
    };
    this.resumers.add(resume);
    from.once('close', () => this.resumers.delete(resume));
    if (this.silent) from.pause();
  }

  async close(): Promise<void> {
    for (const s of [...this.open]) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
