// The bench's processes: the two servers it compares, the curl client, and memory sampling from
// /proc. Used by bench/transfer.ts.
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const MiB = 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// Processes, ports, memory sampling

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export async function waitForPort(port: number, child: ChildProcess, what: string): Promise<void> {
  const until = Date.now() + 20_000;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`${what} exited with ${child.exitCode} while starting`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not listen on ${port} within 20 s`);
}

/** VmRSS and VmHWM of a process in bytes (0 if it is gone). */
export function memOf(pid: number): { rss: number; hwm: number } {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
  } catch {
    return { rss: 0, hwm: 0 };
  }
}

/** The process and its descendants (nginx: master + workers). */
export function treeOf(pid: number): number[] {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    try {
      const kids = readFileSync(`/proc/${out[i]}/task/${out[i]}/children`, 'utf8').trim();
      if (kids) out.push(...kids.split(/\s+/).map(Number));
    } catch {
      // gone
    }
  }
  return out;
}

/** Samples the summed VmRSS of a process tree every `everyMs` until stopped; returns the peak. */
export function sampleRss(pid: number, everyMs = 50): () => number {
  let peak = 0;
  const tick = () => {
    const total = treeOf(pid).reduce((sum, p) => sum + memOf(p).rss, 0);
    if (total > peak) peak = total;
  };
  tick();
  const timer = setInterval(tick, everyMs);
  return () => {
    clearInterval(timer);
    tick();
    return peak;
  };
}

export interface CurlResult {
  code: number;
  sizeUpload: number;
  sizeDownload: number;
  speedUpload: number;
  speedDownload: number;
  time: number;
}

export function curl(args: string[]): Promise<CurlResult> {
  const fmt = '%{http_code} %{size_upload} %{size_download} %{speed_upload} %{speed_download} %{time_total}';
  return new Promise((resolve, reject) => {
    const child = spawn('curl', ['-sS', '--max-time', '300', '-w', fmt, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.once('error', reject);
    child.once('close', (code) => {
      if (code !== 0) {
        reject(new Error(`curl exited with ${code}: ${err.trim()}`));
        return;
      }
      const [http, up, down, su, sd, t] = out.trim().split(/\s+/).map(Number);
      resolve({
        code: http ?? 0,
        sizeUpload: up ?? 0,
        sizeDownload: down ?? 0,
        speedUpload: su ?? 0,
        speedDownload: sd ?? 0,
        time: t ?? 0,
      });
    });
  });
}

export function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** A tool's version line (nginx -v writes to stderr). */
export function versionOf(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  return `${r.stdout ?? ''}${r.stderr ?? ''}`.trim() || 'unknown';
}

// ---------------------------------------------------------------------------------------------
// Servers

export interface Server {
  name: string;
  pid: number;
  stop(): Promise<void>;
}

/** A Debian package's binary, installed with apt-get where it is missing (never downloaded). */
function ensureDebianBinary(pkg: string, paths: string[]): string {
  const found = paths.find((p) => existsSync(p));
  if (found) return found;
  console.log(`${pkg} missing: installing the Debian package (apt-get install ${pkg})…`);
  execFileSync(
    'sh',
    ['-c', `apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${pkg}`],
    { stdio: 'inherit' },
  );
  const now = paths.find((p) => existsSync(p));
  if (!now) throw new Error(`${pkg} still not found after apt-get install`);
  return now;
}

export const ensureNginx = (): string => ensureDebianBinary('nginx', ['/usr/sbin/nginx', '/usr/bin/nginx']);
export const ensureWrk = (): string => ensureDebianBinary('wrk', ['/usr/bin/wrk', '/usr/local/bin/wrk']);

export async function startNginx(
  bin: string,
  dir: string,
  /** worker_connections (the small-request bench opens 1,000 at once) */
  connections = 64,
): Promise<Server & { port: number; root: string }> {
  const port = await freePort();
  const root = path.join(dir, 'www');
  mkdirSync(path.join(root, 'up'), { recursive: true });
  for (const d of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(path.join(dir, d));
  // Running as root, nginx would drop its worker to `nobody`, which cannot write our temp dir.
  const user = process.getuid?.() === 0 ? 'user root root;\n' : '';
  const conf = `${user}worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections ${connections}; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  default_type application/octet-stream;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  server {
    listen 127.0.0.1:${port};
    root ${root};
    client_max_body_size 0;
    location /up/ {
      dav_methods PUT DELETE;
      dav_access user:rw;
    }
  }
}
`;
  await writeFile(path.join(dir, 'nginx.conf'), conf);
  const child = spawn(bin, ['-p', dir, '-c', path.join(dir, 'nginx.conf')], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await waitForPort(port, child, 'nginx');
  return { name: 'nginx', pid: child.pid!, port, root, stop: () => stop(child) };
}

/**
 * The floor of any Node.js server on this machine: node:http answering the files of `root` from
 * memory (read once at start), nothing else. A reference for the small-request bench: whatever a
 * Node service adds (routing, a database, an audit trail) comes on top of this.
 */
export async function startBareNode(root: string, names: string[]): Promise<Server & { port: number }> {
  const port = await freePort();
  const script = `
const http = require('node:http');
const fs = require('node:fs');
const path = require('node:path');
const files = new Map(${JSON.stringify(names)}.map((n) => ['/' + n, fs.readFileSync(path.join(${JSON.stringify(root)}, n))]));
http
  .createServer((req, res) => {
    const body = files.get(req.url);
    if (!body) { res.statusCode = 404; res.end(); return; }
    res.setHeader('Content-Type', 'application/octet-stream');
    res.setHeader('Content-Length', body.length);
    res.end(body);
  })
  .listen(${port}, '127.0.0.1', 4096);
`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'ignore', 'inherit'] });
  await waitForPort(port, child, 'bare node');
  return { name: 'node-http', pid: child.pid!, port, stop: () => stop(child) };
}

export async function startRemessa(
  dir: string,
  size: number,
  nodeArgs: string[],
  /** more REMESSA_* settings (a PostgreSQL database, the log level) */
  extraEnv: Record<string, string> = {},
): Promise<Server & { base: string }> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}/v1`;
  const env = {
    ...process.env,
    REMESSA_DATA_DIR: dir,
    REMESSA_PORT: String(port),
    REMESSA_HOST: '127.0.0.1',
    REMESSA_BASE_URL: base,
    REMESSA_LOG_LEVEL: 'warn',
    REMESSA_MAX_FILE_SIZE: String(size + 64 * MiB),
    ...extraEnv,
  };
  const cli = path.join(ROOT, 'bin', 'remessa.js');
  execFileSync(process.execPath, [cli, 'user', 'add', 'bench', '--password-stdin'], {
    env,
    input: 'bench-password-1\n',
    stdio: ['pipe', 'ignore', 'inherit'],
  });
  // Started through the launcher itself (as `npx remessa serve` is); --node-arg values are added
  // through NODE_OPTIONS.
  const child = spawn(cli, ['serve'], {
    env: { ...env, NODE_OPTIONS: [process.env['NODE_OPTIONS'] ?? '', ...nodeArgs].join(' ').trim() },
    cwd: dir,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await waitForPort(port, child, 'remessa');
  return { name: 'remessa', pid: child.pid!, base, stop: () => stop(child) };
}
