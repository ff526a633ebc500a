// Small-request benchmark: many small downloads and uploads from many clients, Remessa
// next to nginx serving the same file in the same run, with wrk as the client.
// `npm run build && npm run bench -- small [--rounds 3] [--duration 8]`. Within a round, nginx is
// measured before and after the others (their reference: the mean of the two); ratios are taken
// within a round and reported as median with min–max over the rounds.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { open, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import {
  ensureNginx,
  ensureWrk,
  type Server,
  startBareNode,
  startNginx,
  startRemessa,
  versionOf,
} from './servers.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const PG_ADMIN = process.env['REMESSA_TEST_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    duration: { type: 'string', default: '8' },
    sequential: { type: 'string', default: '100' },
    warmup: { type: 'string', default: '2' },
    'no-pg': { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  console.log(`usage: npm run bench -- small [--rounds 3] [--duration 8] [--sequential 100] [--no-pg]
  --rounds      interleaved rounds (each workload measured once per round); default 3
  --duration    seconds per wrk measurement; default 8
  --sequential  uploads per method in the Bearer-vs-Basic latency case; default 100
  --warmup      seconds of unmeasured load before each measurement (every server); default 2
  --no-pg       skip the PostgreSQL instance`);
  process.exit(0);
}
const ROUNDS = Number(values.rounds);
const DURATION = Number(values.duration);
const SEQUENTIAL = Number(values.sequential);
const WARMUP = Number(values.warmup);

interface WrkResult {
  rps: number;
  p99ms: number;
  mbps: number;
  errors: number;
  non2xx: number;
  requests: number;
}

function ms(text: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text);
  if (!m) return Number.NaN;
  const v = Number(m[1]);
  return m[2] === 'us' ? v / 1000 : m[2] === 'ms' ? v : m[2] === 's' ? v * 1000 : v * 60_000;
}

function bytesOf(text: string): number {
  const m = /^([\d.]+)([KMG]?B)$/.exec(text);
  if (!m) return 0;
  return Number(m[1]) * ({ B: 1, KB: KiB, MB: MiB, GB: 1024 * MiB }[m[2]!] ?? 1);
}

/**
 * One wrk measurement, after WARMUP seconds of the same load unmeasured: every server, nginx too,
 * gets its new connections and (for Node) its JIT warmed before the figures count. Without it the
 * first second of a fresh burst of 200 or 1,000 connections, compiling as it goes, made Remessa's
 * p99 alone.
 */
function wrk(url: string, connections: number, script?: string): WrkResult {
  if (WARMUP > 0) runWrk(url, connections, WARMUP, script);
  return runWrk(url, connections, DURATION, script);
}

function runWrk(url: string, connections: number, seconds: number, script?: string): WrkResult {
  const args = ['-t2', `-c${connections}`, `-d${seconds}s`, '--timeout', '30s', '--latency'];
  if (script) args.push('-s', script);
  const r = spawnSync(ensureWrk(), [...args, url], { encoding: 'utf8', maxBuffer: 16 * MiB });
  const out = r.stdout;
  if (r.status !== 0) throw new Error(`wrk failed: ${r.error ?? r.stderr}`);
  const num = (re: RegExp) => Number(re.exec(out)?.[1] ?? 0);
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const transfer = /Transfer\/sec:\s+(\S+)/.exec(out)?.[1] ?? '0B';
  return {
    rps: num(/Requests\/sec:\s+([\d.]+)/),
    p99ms: ms(/^\s+99%\s+(\S+)/m.exec(out)?.[1] ?? ''),
    mbps: bytesOf(transfer) / 1e6,
    errors: sock ? sock.slice(1).reduce((a, b) => a + Number(b), 0) : 0,
    non2xx: num(/Non-2xx or 3xx responses: (\d+)/),
    requests: num(/(\d+) requests in/),
  };
}

/**
 * The disk's own limit for the upload rows, measured in the same run: `writers` loops creating
 * 4 KiB files with Node's fs (open, write, fdatasync, close; a new file each time, no HTTP, no
 * database, no rename) for DURATION seconds. Every acknowledged upload needs at least this much
 * (Remessa also renames into place and syncs the directory), so it bounds the upload rate.
 */
async function durableFiles(dir: string, writers: number): Promise<WrkResult> {
  mkdirSync(dir, { recursive: true });
  const body = randomBytes(4 * KiB);
  const until = Date.now() + DURATION * 1000;
  let n = 0;
  const latencies: number[] = [];
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      for (let i = 0; Date.now() < until; i++) {
        const t0 = process.hrtime.bigint();
        const fh = await open(path.join(dir, `${w}-${i}`), 'wx', 0o600);
        await fh.write(body);
        await fh.datasync();
        await fh.close();
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        n++;
      }
    }),
  );
  await rm(dir, { recursive: true, force: true });
  latencies.sort((a, b) => a - b);
  return {
    rps: n / DURATION,
    p99ms: latencies[Math.floor(latencies.length * 0.99)] ?? 0,
    mbps: (n * 4 * KiB) / DURATION / 1e6,
    errors: 0,
    non2xx: 0,
    requests: n,
  };
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 });

/** Two measurements of one server as one: their mean rate, p99, throughput; their errors summed. */
function meanOf(a: WrkResult, b: WrkResult): WrkResult {
  return {
    rps: (a.rps + b.rps) / 2,
    p99ms: (a.p99ms + b.p99ms) / 2,
    mbps: (a.mbps + b.mbps) / 2,
    errors: a.errors + b.errors,
    non2xx: a.non2xx + b.non2xx,
    requests: a.requests + b.requests,
  };
}

/** One POST /upload of `body`; resolves with its latency in ms. */
function upload(base: string, auth: string, name: string, body: Buffer): Promise<number> {
  const url = new URL(`${base}/upload?file=${name}`);
  const t0 = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          Authorization: auth,
          'Content-Type': 'application/octet-stream',
          'Content-Length': String(body.length),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => {
          if (res.statusCode !== 200) reject(new Error(`upload answered ${res.statusCode}`));
          else resolve(Number(process.hrtime.bigint() - t0) / 1e6);
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function postJson(url: string, auth: string, body: Buffer): Promise<Record<string, unknown>> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { Authorization: auth, 'Content-Type': 'application/octet-stream' },
    body: new Uint8Array(body),
  });
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
  return (await res.json()) as Record<string, unknown>;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const spread = (xs: number[], digits = 2) =>
  `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`;

interface Instance {
  name: string;
  server: Server & { base: string };
  origin: string;
  link4k: string;
  link1m: string;
  bearer: string;
}

const BASIC = `Basic ${Buffer.from('bench:bench-password-1').toString('base64')}`;

async function prepare(name: string, server: Server & { base: string }): Promise<Instance> {
  const up4 = (await postJson(`${server.base}/upload?file=small.bin`, BASIC, randomBytes(4 * KiB))) as {
    files: { linkURL: string }[];
  };
  const up1 = (await postJson(`${server.base}/upload?file=one.bin`, BASIC, randomBytes(MiB))) as {
    files: { linkURL: string }[];
  };
  const tok = await fetch(`${server.base}/oauth2/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'password', username: 'bench', password: 'bench-password-1' }),
  });
  const token = ((await tok.json()) as { access_token: string }).access_token;
  return {
    name,
    server,
    origin: new URL(server.base).origin,
    link4k: up4.files[0]!.linkURL,
    link1m: up1.files[0]!.linkURL,
    bearer: `Bearer ${token}`,
  };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'remessa-small-'));
  const servers: Server[] = [];
  let pgName: string | null = null;
  const admin = new pg.Client({ connectionString: PG_ADMIN });
  try {
    console.log(
      `# small-request bench: ${os.cpus().length} CPUs, load ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}, ` + `${versionOf(ensureWrk(), ['-v']).split('\n')[0]}, node ${process.version}`,
    );
    const nginxBin = ensureNginx();
    mkdirSync(path.join(dir, 'nginx'));
    const nginx = await startNginx(nginxBin, path.join(dir, 'nginx'), 4096);
    servers.push(nginx);
    await writeFile(path.join(nginx.root, 'small.bin'), randomBytes(4 * KiB));
    await writeFile(path.join(nginx.root, 'one.bin'), randomBytes(MiB));
    const nginxOrigin = `http://127.0.0.1:${nginx.port}`;
    const bare = await startBareNode(nginx.root, ['small.bin', 'one.bin']);
    servers.push(bare);
    const bareOrigin = `http://127.0.0.1:${bare.port}`;

    // One peer address (loopback) opens 1,000 connections: the per-address cap is off, as behind
    // a proxy (docs/security.md).
    const common = { REMESSA_MAX_CONNECTIONS_PER_ADDRESS: '0' };
    const start = async (name: string, env: Record<string, string>) => {
      mkdirSync(path.join(dir, name));
      const s = await startRemessa(path.join(dir, name), 64 * MiB, [], { ...common, ...env });
      servers.push(s);
      return prepare(name, s);
    };
    const sqlite = await start('sqlite', {});
    const logged = await start('sqlite-log', { REMESSA_LOG_LEVEL: 'info' });
    let postgres: Instance | null = null;
    if (!values['no-pg']) {
      try {
        await admin.connect();
        pgName = `remessa_bench_${randomBytes(4).toString('hex')}`;
        await admin.query(`create database ${pgName}`);
        const url = new URL(PG_ADMIN);
        url.pathname = `/${pgName}`;
        postgres = await start('postgres', { REMESSA_DATABASE_URL: url.toString() });
      } catch (err) {
        console.log(`# PostgreSQL skipped: ${(err as Error).message}`);
      }
    }
    const remessas = [sqlite, logged, ...(postgres ? [postgres] : [])];

    const script = async (inst: Instance) => {
      const file = path.join(dir, `upload-${inst.name}.lua`);
      await writeFile(
        file,
        `local n = 0
local counter = 0
-- A new name per request, in every run: the warm-up and each round start from 1 again.
local run = tostring(os.time())
function setup(thread) counter = counter + 1; thread:set("tid", counter) end
local body = string.rep("x", ${4 * KiB})
local headers = { ["Authorization"] = "${inst.bearer}", ["Content-Type"] = "application/octet-stream" }
function request()
  n = n + 1
  return wrk.format("POST", "/v1/upload?file=w" .. run .. "-" .. tid .. "-" .. n .. ".bin", headers, body)
end
`,
      );
      return file;
    };

    type Row = {
      workload: string;
      server: string;
      results: WrkResult[];
      ratios: number[];
      p99ratios: number[];
      /** Against node:http in the same round: the part of the ratio that does not move with the machine. */
      floorRatios: number[];
    };
    const rows = new Map<string, Row>();
    const record = (workload: string, server: string, r: WrkResult, ref?: WrkResult, floor?: WrkResult) => {
      const key = `${workload}|${server}`;
      const row = rows.get(key) ?? {
        workload,
        server,
        results: [],
        ratios: [],
        p99ratios: [],
        floorRatios: [],
      };
      row.results.push(r);
      if (ref) {
        row.ratios.push(r.rps / ref.rps);
        row.p99ratios.push(r.p99ms / ref.p99ms);
      }
      if (floor) row.floorRatios.push(r.rps / floor.rps);
      rows.set(key, row);
      console.log(
        `  ${workload.padEnd(26)} ${server.padEnd(12)} ${r.rps.toFixed(0).padStart(7)} req/s  ${r.mbps.toFixed(1).padStart(7)} MB/s  p99 ${r.p99ms.toFixed(1).padStart(7)} ms  errors ${r.errors} non-2xx ${r.non2xx}`,
      );
    };
    const latency = new Map<string, { bearer: number[]; basic: number[]; ratio: number[] }>();

    for (let round = 1; round <= ROUNDS; round++) {
      console.log(`# round ${round} (load ${os.loadavg()[0]!.toFixed(2)})`);
      // Each workload: nginx before and after the bare Node floor and the Remessa instances, on the
      // same file; their reference is the mean of the two. This VM's speed drifts by a third within
      // a minute (nginx 29,000-46,000 req/s in one run), so one nginx measurement at
      // one end of the round made the ratio depend on which end was the fast one.
      const pair = (
        workload: string,
        file: string,
        urlOf: (i: Instance) => string,
        c: number,
        which: Instance[],
      ) => {
        const before = wrk(`${nginxOrigin}/${file}`, c);
        const floor = wrk(`${bareOrigin}/${file}`, c);
        const mine = which.map((i) => ({ i, r: wrk(urlOf(i), c) }));
        const after = wrk(`${nginxOrigin}/${file}`, c);
        const ref = meanOf(before, after);
        record(workload, 'nginx', ref);
        record(workload, 'node-http', floor, ref);
        for (const { i, r } of mine) record(workload, i.name, r, ref, floor);
      };
      pair('4 KiB download, c16', 'small.bin', (i) => i.link4k, 16, remessas);
      pair('1 MiB download, c200', 'one.bin', (i) => i.link1m, 200, [
        sqlite,
        ...(postgres ? [postgres] : []),
      ]);
      pair('1 MiB download, c1000', 'one.bin', (i) => i.link1m, 1000, [sqlite]);
      const disk = await durableFiles(path.join(dir, `disk-${round}`), 16);
      record('4 KiB upload, c16 Bearer', 'disk (fs only)', disk);
      for (const inst of [sqlite, ...(postgres ? [postgres] : [])]) {
        const r = wrk(`${inst.origin}/`, 16, await script(inst));
        record('4 KiB upload, c16 Bearer', inst.name, r, disk);
      }
      // Sequential 4 KiB uploads, Bearer and Basic alternating (same connection, keep-alive).
      for (const inst of [sqlite, ...(postgres ? [postgres] : [])]) {
        const body = randomBytes(4 * KiB);
        const b: number[] = [];
        const s: number[] = [];
        for (let i = 0; i < SEQUENTIAL; i++) {
          b.push(await upload(inst.server.base, inst.bearer, `seq-b-${round}-${i}.bin`, body));
          s.push(await upload(inst.server.base, BASIC, `seq-s-${round}-${i}.bin`, body));
        }
        const l = latency.get(inst.name) ?? { bearer: [], basic: [], ratio: [] };
        l.bearer.push(median(b));
        l.basic.push(median(s));
        l.ratio.push(median(s) / median(b));
        latency.set(inst.name, l);
        console.log(
          `  4 KiB upload, sequential  ${inst.name.padEnd(12)} median Bearer ${median(b).toFixed(2)} ms, Basic ${median(s).toFixed(2)} ms`,
        );
      }
    }

    console.log(`\n## Summary over ${ROUNDS} rounds: median (min–max)\n`);
    console.log(
      'Reference: nginx for the downloads (node-http: node:http answering the same bytes from memory, the floor of any Node server here), the disk (fs only) row for the uploads. The last column divides by node-http in the same round instead: how far nginx is ahead of Node differs from machine to machine (0.6 to 1.0 of nginx for node-http), this ratio much less.\n',
    );
    console.log(
      '| workload | server | req/s | MB/s | p99 ms | errors + non-2xx | vs reference req/s | vs reference p99 | vs node-http req/s |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|');
    for (const row of rows.values()) {
      const rs = row.results;
      console.log(
        `| ${row.workload} | ${row.server} | ${spread(
          rs.map((r) => r.rps),
          0,
        )} | ${spread(
          rs.map((r) => r.mbps),
          1,
        )} | ${spread(
          rs.map((r) => r.p99ms),
          1,
        )} | ${rs.reduce((a, r) => a + r.errors + r.non2xx, 0)} | ${row.ratios.length ? spread(row.ratios) : ''} | ${
          row.p99ratios.length ? spread(row.p99ratios) : ''
        } | ${row.floorRatios.length ? spread(row.floorRatios) : ''} |`,
      );
    }
    console.log('\n| 4 KiB upload, sequential | median Bearer ms | median Basic ms | Basic / Bearer |');
    console.log('|---|---|---|---|');
    for (const [name, l] of latency)
      console.log(`| ${name} | ${spread(l.bearer)} | ${spread(l.basic)} | ${spread(l.ratio)} |`);
  } finally {
    agent.destroy();
    for (const s of servers.reverse()) await s.stop();
    if (pgName) {
      await admin.query(`drop database if exists ${pgName} with (force)`).catch(() => {});
    }
    await admin.end().catch(() => {});
    await rm(dir, { recursive: true, force: true });
  }
}

const watchdog = setTimeout(
  () => {
    console.error('small-request bench: over 30 minutes, giving up');
    process.exit(1);
  },
  30 * 60 * 1000,
);
watchdog.unref();
await main();
