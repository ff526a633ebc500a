// The one test helper: starts the real server on a free port with a temp data dir, captures its
// log lines (so tests can prove secrets never reach them) and cleans everything up.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { TestContext } from 'node:test';
import { loadConfig } from '../../src/app/config.js';
import { type RunningServer, startServer } from '../../src/app/server.js';
import type { BlobStore } from '../../src/platform/blobs/blob-store.js';
import { OffsetClock } from '../../src/platform/clock.js';
import { ErrorEnvelope } from '../../src/platform/http/schemas.js';
import { createLogger } from '../../src/platform/logger.js';
import type { UserRow } from '../../src/platform/sql/schema.js';
import { eventually } from './peers.js';
import { CHECK_RESPONSES, responseProblem } from './responses.js';

export interface TestServer {
  /** {base_url}, e.g. http://127.0.0.1:40123/v1 */
  base: string;
  /** scheme://host:port with no path */
  origin: string;
  dataDir: string;
  clock: OffsetClock;
  /**
   * Moves the server's clock forward, once no notification is in the middle of being sent. A
   * message the SMTP peer already received may not be marked sent yet; a jump past its lease (2
   * minutes) would let the next outbox pass send it again, and a test would read the copy.
   */
  advanceClock(ms: number): Promise<void>;
  server: RunningServer;
  logs: string[];
  env: Record<string, string>;
  /** Responses that did not match their documented schema (close() fails with them). */
  responseProblems: string[];
  /** How many responses were checked. */
  responsesChecked(): number;
  /** Creates a user directly through the service layer. */
  createUser(
    name: string,
    password: string | null,
    fields?: { email?: string; mobile?: string; lang?: string; role?: string },
  ): Promise<UserRow>;
  close(): Promise<void>;
}

/**
 * A port for a child process to listen on later. Not one the kernel hands out for `listen(0)`:
 * every test file runs in parallel and binds ephemeral ports, and one of them once took a port in
 * the seconds between this check and the child's own listen (the README test's second server
 * failed with EADDRINUSE, and its readiness poll was answered by another test's server). Below the
 * ephemeral range only callers of this function pick ports, at random, and each is checked free.
 */
export async function freePort(): Promise<number> {
  const [ephemeralLow] = ephemeralRange();
  const high = Math.min(ephemeralLow, 65536) - 1;
  const low = Math.max(1024, high - 12_000);
  for (let attempt = 0; attempt < 50 && high > low; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low + 1));
    if (handedOut.has(port)) continue;
    if (await canListen(port)) {
      handedOut.add(port);
      return port;
    }
  }
  return listenOnce(0);
}

const handedOut = new Set<number>();

function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    if (low && high) return [low, high];
  } catch {
    // not Linux: the IANA dynamic range
  }
  return [49152, 65535];
}

async function canListen(port: number): Promise<boolean> {
  return listenOnce(port).then(
    () => true,
    () => false,
  );
}

function listenOnce(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(port, '127.0.0.1', () => {
      const bound = (srv.address() as { port: number }).port;
      srv.close(() => resolve(bound));
    });
  });
}

/** Anything a test starts and must stop: a server, a peer, a temporary database. */
type Closable = { close(): Promise<unknown> } | (() => Promise<unknown>) | null | undefined;

/**
 * For `after` hooks: closes each of `things` in order, also when an earlier one fails or was never
 * started (a failed `before` leaves some undefined), then rethrows the first failure. A peer left
 * listening would keep the test file's process alive for ever and hide the failure.
 */
export async function closeAll(...things: Closable[]): Promise<void> {
  const failures: unknown[] = [];
  for (const thing of things) {
    try {
      await (typeof thing === 'function' ? thing() : thing?.close());
    } catch (err) {
      failures.push(err);
    }
  }
  if (failures.length > 0) throw failures[0];
}

/** For a start that fails: `start().catch(closing(peer))` closes what was started before it. */
export const closing =
  (...things: Closable[]) =>
  async (err: unknown): Promise<never> => {
    await closeAll(...things).catch(() => {});
    throw err;
  };

/**
 * Closes `things` (as closeAll does, in order) when the test `ctx` ends, passed or failed: the
 * test body needs no try/finally. What a later call registers closes first (a server before the
 * database or peer it was started on). Returns the first of `things`.
 */
export function closeWith<T extends Closable>(ctx: TestContext, thing: T, ...more: Closable[]): T {
  let groups = closeGroups.get(ctx);
  if (!groups) {
    const registered: Closable[][] = [];
    closeGroups.set(ctx, registered);
    ctx.after(() => closeAll(...registered.reverse().map((group) => () => closeAll(...group))));
    groups = registered;
  }
  groups.push([thing, ...more]);
  return thing;
}

const closeGroups = new WeakMap<TestContext, Closable[][]>();

/** A test server closed when the test `ctx` ends. */
export async function serverFor(ctx: TestContext, opts: StartOptions = {}): Promise<TestServer> {
  return closeWith(ctx, await startTestServer(opts));
}

export interface StartOptions {
  env?: Record<string, string>;
  /** Path of the API under the origin; default /v1. */
  apiPath?: string;
  /** Reuse a data dir (restart tests); otherwise a fresh temp dir is made and removed on close. */
  dataDir?: string;
  /** false: background jobs run only when the test calls server.workers.get(name).runOnce() */
  startWorkers?: boolean;
  /** A blob store to use instead of the configured one (a failing memory store, say). */
  blobStore?: BlobStore;
}

/**
 * Instances on one PostgreSQL database with local storage share one data dir (one store), as a
 * fleet must (storage/store-identity.ts refuses an instance whose store is another): the dir is
 * made for the first and removed with the last.
 */
const fleetDirs = new Map<string, { dir: string; instances: number }>();

async function dataDirFor(opts: StartOptions): Promise<{ dir: string; release(): Promise<void> }> {
  if (opts.dataDir) return { dir: opts.dataDir, release: async () => {} };
  const fleet = opts.env?.['REMESSA_STORAGE'] !== 's3' ? opts.env?.['REMESSA_DATABASE_URL'] : undefined;
  const shared = fleet ? fleetDirs.get(fleet) : undefined;
  const entry = shared ?? { dir: await mkdtemp(path.join(tmpdir(), 'remessa-test-')), instances: 0 };
  entry.instances++;
  if (fleet) fleetDirs.set(fleet, entry);
  return {
    dir: entry.dir,
    async release() {
      if (--entry.instances > 0) return;
      if (fleet) fleetDirs.delete(fleet);
      // A request cut at close may still be removing its temp file: rm retries ENOTEMPTY.
      await rm(entry.dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    },
  };
}

export async function startTestServer(opts: StartOptions = {}): Promise<TestServer> {
  const { dir: dataDir, release } = await dataDirFor(opts);
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      logs.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      cb();
    },
  });
  const clock = new OffsetClock();
  const responseProblems: string[] = [];
  let checked = 0;
  // The base URL names the port, so it is picked before the server binds it, and another process
  // can take it in between (every client connection of the tests draws from the same range):
  // then the server is started again on another one.
  const bind = async () => {
    const port = await freePort();
    const origin = `http://127.0.0.1:${port}`;
    const env: Record<string, string> = {
      REMESSA_PORT: String(port),
      REMESSA_HOST: '127.0.0.1',
      REMESSA_BASE_URL: `${origin}${opts.apiPath ?? '/v1'}`,
      REMESSA_DATA_DIR: dataDir,
      REMESSA_LOG_LEVEL: 'info',
      REMESSA_SECRET: 'test-secret-test-secret-test-secret',
      ...opts.env,
    };
    const config = loadConfig(env);
    const server = await startServer(config, createLogger(config.logLevel, sink), {
      clock,
      startWorkers: opts.startWorkers,
      blobStore: opts.blobStore,
      // Every response is checked against openapi.json's schemas (test/helpers/responses.ts).
      ...(CHECK_RESPONSES && {
        onResponseSent: (r) => {
          checked++;
          const problem = responseProblem(r, config.apiPath);
          if (problem) responseProblems.push(problem);
        },
      }),
    });
    return { origin, env, config, server };
  };
  let bound: Awaited<ReturnType<typeof bind>> | undefined;
  for (let attempt = 1; !bound; attempt++) {
    try {
      bound = await bind();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE' && attempt < 5) continue;
      await release();
      throw err;
    }
  }
  const { origin, env, config, server } = bound;
  return {
    base: config.baseUrl,
    origin,
    dataDir,
    clock,
    async advanceClock(ms) {
      const { db } = server.services;
      await eventually(async () => {
        const row = await db
          .selectFrom('outbox')
          .select('id')
          .where('status', '=', 'pending')
          .where('claimed_until', '>', clock.now())
          .executeTakeFirst();
        return row === undefined;
      });
      clock.advance(ms);
    },
    server,
    logs,
    env,
    responseProblems,
    responsesChecked: () => checked,
    createUser: (name, password, fields = {}) =>
      server.services.users.create(
        name,
        { email: fields.email ?? `${name.toLowerCase()}@example.com`, ...fields },
        password,
      ),
    async close() {
      await server.close();
      await release();
      if (responseProblems.length > 0) {
        throw new Error(
          `responses that do not match openapi.json (src/platform/http/schemas.ts):\n${[...new Set(responseProblems)].join('\n')}`,
        );
      }
    },
  };
}

export function basic(name: string, password: string): string {
  return `Basic ${Buffer.from(`${name}:${password}`).toString('base64')}`;
}

/** fetch + parsed JSON body. */
export async function call(
  url: string,
  init: RequestInit = {},
): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const res = await fetch(url, init);
  const text = await res.text();
  let body: Record<string, unknown> = {};
  try {
    body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    body = { _raw: text };
  }
  return { status: res.status, headers: res.headers, body };
}

/** Envelope `time`: Go's time.Time.String() with 6 fraction digits. */
export const GO_TIME =
  /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6} [+-]\d{4} (?:[A-Z]{2,5}|[+-]\d{2}(?:\d{2})?) m=\+\d+\.\d{9}$/;
export const APIVER = /^v1 \(\d+\.\d+\.\d+\)$/;

/** The keys every error envelope has: those openapi.json's ErrorEnvelope requires. */
export const ERROR_KEYS = [...ErrorEnvelope.required].sort();
/** Keys of an error envelope, ignoring the optional `detail`. */
export function errorKeys(body: Record<string, unknown>): string[] {
  return Object.keys(body)
    .filter((k) => k !== 'detail')
    .sort();
}

/** `remessa serve` as a child process (for kill -9 and descriptor-limit tests), with one user. */
export interface ChildServer {
  base: string;
  origin: string;
  dataDir: string;
  /** the settings it runs with (a later startTestServer on the same data dir needs the secret) */
  env: Record<string, string>;
  /** Starts `remessa serve` and waits until it answers (a minute at most: loaded machines are slow). */
  start(): Promise<void>;
  /** kill -9, and waits until it is gone. */
  kill(): Promise<void>;
  /** Kills it if running and removes the data dir. */
  close(): Promise<void>;
}

export async function startChildServer(opts: {
  user: { name: string; password: string };
  /** Other accounts to create before it starts. */
  moreUsers?: { name: string; password: string }[];
  /** The soft limit on open descriptors of the server process (e.g. 1024, the usual default). */
  maxFiles?: number;
  /** More settings (REMESSA_DATABASE_URL, say). */
  env?: Record<string, string>;
}): Promise<ChildServer> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'remessa-child-'));
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const env: Record<string, string> = {
    REMESSA_DATA_DIR: dataDir,
    REMESSA_PORT: String(port),
    REMESSA_HOST: '127.0.0.1',
    REMESSA_BASE_URL: `${origin}/v1`,
    REMESSA_SECRET: 'child-test-secret-child-test-secret',
    REMESSA_LOG_LEVEL: 'warn',
    ...opts.env,
  };
  const bin = path.resolve('bin/remessa.js');
  const childEnv = { ...process.env, ...env };
  for (const user of [opts.user, ...(opts.moreUsers ?? [])])
    execFileSync(process.execPath, [bin, 'user', 'add', user.name, '--password-stdin'], {
      env: childEnv,
      input: `${user.password}\n`,
    });
  let child: ChildProcess | null = null;
  const kill = async () => {
    const running = child;
    child = null;
    if (!running || running.exitCode !== null) return;
    const exited = new Promise((r) => running.once('exit', r));
    running.kill('SIGKILL');
    await exited;
  };
  return {
    base: env.REMESSA_BASE_URL!,
    origin,
    dataDir,
    env,
    async start() {
      child =
        opts.maxFiles === undefined
          ? spawn(process.execPath, [bin, 'serve'], { env: childEnv, stdio: 'ignore' })
          : spawn('sh', ['-c', `ulimit -n ${opts.maxFiles} && exec "${process.execPath}" "${bin}" serve`], {
              env: childEnv,
              stdio: 'ignore',
            });
      await eventually(
        async () => (await fetch(`${origin}/v1/nothing`).catch(() => null))?.status === 404,
        60_000,
      );
    },
    kill,
    async close() {
      await kill();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
