// A TCP proxy in front of a test server that cuts connections the way a flaky network does: every
// `everyBytes` bytes passed in one direction (counted across connections), or when the test says
// so (cutAll). While `down`, new connections are refused at once; while `unavailable` is above 0,
// each new connection is answered 503 (as a load balancer with no backend) instead of forwarded.
// Resumption tests go through it.
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface CutProxyOptions {
  /** host:port to forward to; with several, each new connection goes to the next (round robin) */
  target: { host: string; port: number } | { host: string; port: number }[];
  /** cut after this many bytes have passed in `direction` since the last cut (0: never by itself) */
  everyBytes?: number;
  /** 'up': client → server bytes (uploads); 'down': server → client (downloads) */
  direction?: 'up' | 'down';
  /** called at each cut, before the sockets are reset (e.g. to take the network down with it) */
  onCut?: (proxy: CutProxy) => void;
  /**
   * At a cut, the side the bytes go to is reset (default: what sits in socket buffers is lost, as
   * on a real drop) or ended ('end': everything forwarded arrives, then the stream stops short).
   */
  cutReceiver?: 'reset' | 'end';
}

export class CutProxy {
  /** connections cut so far */
  cuts = 0;
  /** bytes forwarded in `direction` so far, across connections (what the far side could have seen) */
  bytes = 0;
  /** cut after this many bytes since the last cut (0: never by itself); a test may change it */
  everyBytes: number;
  /** refuse new connections while true (the network is gone) */
  down = false;
  /** connections refused so far because the proxy was down */
  refused = 0;
  /** answer this many next connections 503, with `retryAfter` (seconds) if set, and close them */
  unavailable = 0;
  retryAfter: number | undefined;
  /** connections answered 503 so far */
  answered503 = 0;
  private server: Server;
  private sinceCut = 0;
  private nextTarget = 0;
  /** connections accepted so far, per target index */
  readonly perTarget: number[] = [];
  private readonly open = new Set<Socket>();
  port = 0;

  private constructor(private readonly opts: CutProxyOptions) {
    this.everyBytes = opts.everyBytes ?? 0;
    this.server = createServer((client) => this.accept(client));
  }

  static async start(opts: CutProxyOptions): Promise<CutProxy> {
    const p = new CutProxy(opts);
    await new Promise<void>((resolve) => p.server.listen(0, '127.0.0.1', resolve));
    p.port = (p.server.address() as { port: number }).port;
    return p;
  }

  get origin(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  private accept(client: Socket): void {
    if (this.down) {
      this.refused++;
      client.destroy();
      return;
    }
    if (this.unavailable > 0) {
      this.unavailable--;
      this.answer503(client);
      return;
    }
    const targets = Array.isArray(this.opts.target) ? this.opts.target : [this.opts.target];
    const i = this.nextTarget++ % targets.length;
    this.perTarget[i] = (this.perTarget[i] ?? 0) + 1;
    const upstream = connect(targets[i]!.port, targets[i]!.host);
    const pair = [client, upstream];
    for (const s of pair) {
      this.open.add(s);
      s.on('error', () => {});
      s.on('close', () => {
        this.open.delete(s);
        for (const o of pair) o.destroy();
      });
    }
    const counted = (this.opts.direction ?? 'up') === 'up' ? client : upstream;
    const other = counted === client ? upstream : client;
    let gone = false;
    counted.on('data', (chunk: Buffer) => {
      if (gone) return;
      const every = this.everyBytes;
      if (every > 0 && this.sinceCut + chunk.length >= every) {
        // Forward exactly up to the cut point, then drop both sides mid-stream.
        const n = every - this.sinceCut;
        other.write(chunk.subarray(0, n));
        this.bytes += n;
        this.sinceCut = 0;
        gone = true;
        this.cut(this.opts.cutReceiver === 'end' ? [counted] : pair);
        if (this.opts.cutReceiver === 'end') other.end();
        return;
      }
      this.sinceCut += chunk.length;
      this.bytes += chunk.length;
      if (!other.write(chunk)) {
        counted.pause();
        other.once('drain', () => counted.resume());
      }
    });
    const back = counted === client ? upstream : client;
    const backTo = counted === client ? client : upstream;
    back.pipe(backTo);
    counted.on('end', () => other.end());
  }

  private answer503(client: Socket): void {
    client.on('error', () => {});
    // After the request's head, as a proxy answers: a reply before it may be taken for a reset.
    client.once('data', () => {
      this.answered503++;
      const retry = this.retryAfter === undefined ? '' : `Retry-After: ${this.retryAfter}\r\n`;
      client.end(
        `HTTP/1.1 503 Service Unavailable\r\n${retry}Content-Type: text/plain\r\nContent-Length: 12\r\n` +
          'Connection: close\r\n\r\nno upstream\n',
      );
    });
  }

  private cut(sockets: Socket[]): void {
    this.cuts++;
    this.opts.onCut?.(this);
    // Let what was written reach the other side before the reset, as a real mid-transfer drop would.
    setImmediate(() => {
      for (const s of sockets) s.resetAndDestroy();
    });
  }

  /** Cuts every open connection now. */
  cutAll(): void {
    this.cuts++;
    for (const s of [...this.open]) s.resetAndDestroy();
  }

  async close(): Promise<void> {
    for (const s of [...this.open]) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
