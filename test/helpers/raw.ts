// Raw TCP clients for hostile-input tests: requests no HTTP library would send (short bodies,
// half-closes, resets, slow bytes), and the server's footprint in this process (descriptors).
import { readdirSync, readlinkSync } from 'node:fs';
import { connect, type Socket } from 'node:net';

export interface RawAnswer {
  /** null: the connection ended (or the wait ran out) without a status line */
  status: number | null;
  head: string;
  body: string;
  /** the JSON body, or {} */
  json: Record<string, unknown>;
}

export type RawEnding = 'half-close' | 'reset' | 'keep-open';

export interface RawOptions {
  /** What the client does after writing: SHUT_WR (default), RST, or nothing. */
  ending?: RawEnding;
  /** Source address, e.g. 127.0.0.2 so a flood and a well-behaved client are different peers. */
  localAddress?: string;
  /** Give up waiting for the answer after this long (a hang guard, not a timing assertion). */
  waitMs?: number;
}

export function parseAnswer(text: string): RawAnswer {
  const split = text.indexOf('\r\n\r\n');
  const head = split < 0 ? text : text.slice(0, split);
  const body = split < 0 ? '' : text.slice(split + 4);
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(head);
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(body) as Record<string, unknown>;
  } catch {
    // not JSON (or chunked): the test looks at the status
  }
  return { status: m ? Number(m[1]) : null, head, body, json };
}

/** Opens a connection to `origin`'s host and port. */
export function rawConnect(origin: string, localAddress?: string): Promise<Socket> {
  const url = new URL(origin);
  return new Promise((resolve, reject) => {
    // An IPv6 origin's hostname keeps its brackets (`[::1]`), which connect() would look up as a name.
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    const socket = connect({ host, port: Number(url.port), localAddress }, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Collects what the server sends until it closes the connection or `waitMs` passes. */
export function readAnswer(socket: Socket, waitMs: number): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(parseAnswer(Buffer.concat(chunks).toString('latin1')));
    };
    const timer = setTimeout(finish, waitMs);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', () => {});
    socket.once('close', finish);
  });
}

/** Sends `head` + `body` as bytes, then ends the connection as `opts.ending` says; returns the answer. */
export async function rawRequest(
  origin: string,
  head: string,
  body: Buffer | string = '',
  opts: RawOptions = {},
): Promise<RawAnswer> {
  const socket = await rawConnect(origin, opts.localAddress);
  const answer = readAnswer(socket, opts.waitMs ?? 10_000);
  socket.write(head);
  if (body.length > 0) socket.write(body);
  const ending = opts.ending ?? 'half-close';
  if (ending === 'half-close') socket.end();
  else if (ending === 'reset') {
    // Let the bytes leave first, so the server sees a request and then the reset.
    await new Promise((r) => setTimeout(r, 20));
    socket.resetAndDestroy();
  }
  return answer;
}

/** Request head with CRLFs; `lines` are header lines. */
export function httpHead(method: string, target: string, host: string, lines: string[]): string {
  return `${method} ${target} HTTP/1.1\r\nHost: ${host}\r\n${lines.map((l) => `${l}\r\n`).join('')}\r\n`;
}

/** What this process's open descriptors point at, below `dir` (the test server runs in this process). */
export function descriptorsUnder(dir: string): string[] {
  const out: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(dir)) out.push(target);
    } catch {
      // closed meanwhile
    }
  }
  return out;
}

/** Writes `chunks` as the peer takes them, stopping once the connection closes; answers the bytes written. */
export async function writeWhileOpen(socket: Socket, chunks: Iterable<Buffer>): Promise<number> {
  let sent = 0;
  for (const chunk of chunks) {
    if (socket.destroyed || !socket.writable) break;
    sent += chunk.length;
    if (!socket.write(chunk))
      await new Promise((resolve) => {
        socket.once('drain', resolve);
        socket.once('close', resolve);
      });
  }
  return sent;
}

/** `total` bytes of `byte` in pieces of `size`, each made when it is needed. */
export function* filler(total: number, size = 256 * 1024, byte = 0x61): Generator<Buffer> {
  for (let left = total; left > 0; left -= size) yield Buffer.alloc(Math.min(size, left), byte);
}
