// Real peers for notification tests: an SMTP server (smtp-server) whose messages are parsed with
// mailparser, and a plain HTTP server standing in for the SMS provider. And a TCP proxy a test can
// stop and start, to take a shared service (PostgreSQL, the S3 gateway) away from one server only.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { type AddressInfo, connect, createServer as createTcpServer, type Socket } from 'node:net';
import { type ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export class MailSink {
  readonly messages: ParsedMail[] = [];
  private waiters: (() => void)[] = [];

  private constructor(private readonly server: SMTPServer) {}

  /**
   * Listens on 127.0.0.1: on `port` when given (a test can start it after the fact), otherwise on
   * a port the kernel picks as it binds, so no other process can take it in between.
   */
  static async start(port = 0): Promise<MailSink> {
    let sink: MailSink | undefined;
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onData(stream, _session, callback) {
        simpleParser(stream).then(
          (mail) => {
            sink!.messages.push(mail);
            for (const w of sink!.waiters.splice(0)) w();
            callback();
          },
          (err: Error) => callback(err),
        );
      },
    });
    sink = new MailSink(server);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    return sink;
  }

  get port(): number {
    return (this.server.server.address() as AddressInfo).port;
  }

  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  /** The first message (in arrival order, not yet taken) to `to` that matches; waits for it. */
  async take(to: string, timeoutMs = 10_000): Promise<ParsedMail> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = this.messages.findIndex((m) => recipientsOf(m).includes(to.toLowerCase()));
      if (i >= 0) return this.messages.splice(i, 1)[0]!;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no mail to ${to} within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

function recipientsOf(mail: ParsedMail): string[] {
  const to = Array.isArray(mail.to) ? mail.to : mail.to ? [mail.to] : [];
  return to.flatMap((a) => a.value.map((v) => (v.address ?? '').toLowerCase()));
}

export interface CapturedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** An HTTP server that records every request and answers with `respond` (default 201 JSON). */
export class HttpPeer {
  readonly requests: CapturedRequest[] = [];
  status = 201;
  /** While set, answers wait for it (a receiver that takes its time). */
  holdAnswers: Promise<void> | null = null;
  private waiters: (() => void)[] = [];

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<HttpPeer> {
    let peer: HttpPeer | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        peer!.requests.push({
          method: req.method ?? '',
          url: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        });
        for (const w of peer!.waiters.splice(0)) w();
        void (peer!.holdAnswers ?? Promise.resolve()).then(() => {
          res.writeHead(peer!.status, { 'Content-Type': 'application/json' });
          res.end(
            JSON.stringify(
              peer!.status < 300 ? { sid: 'SM1', status: 'queued' } : { code: 21211, message: 'nope' },
            ),
          );
        });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const { port } = server.address() as { port: number };
    peer = new HttpPeer(server, `http://127.0.0.1:${port}`);
    return peer;
  }

  /** Stops answering (connections are refused) until resume(): a receiver outage. */
  pause(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  /** Listens again on the same port. */
  resume(): Promise<void> {
    const port = Number(new URL(this.url).port);
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
  }

  async waitFor(count: number, timeoutMs = 10_000): Promise<CapturedRequest[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.requests.length < count) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`expected ${count} requests, got ${this.requests.length}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.requests;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** Polls `check` until it returns a value (not undefined/false) or the time is up. */
export async function eventually<T>(
  check: () => Promise<T | undefined | false>,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A TCP proxy in front of host:port on a fixed local port. stop() refuses new connections and cuts
 * the open ones, as a stopped service would; start() listens on the same port again.
 */
export class TcpProxy {
  private readonly sockets = new Set<Socket>();
  private readonly server = createTcpServer((client) => {
    const upstream = connect(this.port, this.host);
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  listenPort = 0;

  constructor(
    private readonly host: string,
    private readonly port: number,
  ) {}

  get address(): string {
    return `127.0.0.1:${this.listenPort}`;
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.listenPort, '127.0.0.1', () => {
        this.server.off('error', reject);
        this.listenPort = (this.server.address() as AddressInfo).port;
        resolve();
      });
    });
  }

  stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    return new Promise((resolve) => (this.server.listening ? this.server.close(() => resolve()) : resolve()));
  }

  close(): Promise<void> {
    return this.stop();
  }
}
