// Scale-out benchmark: three Remessa instances (one PostgreSQL database, one S3 bucket, a data dir
// of their own each) behind nginx round-robin, 20 concurrent clients uploading and downloading
// mixed sizes (1 KiB–8 MiB, log-uniform) for 60 s, and `kill -9` of one instance half-way. Reports
// requests/s, latency p50/p99, errors, lost or corrupted files among the acknowledged uploads
// (every one is downloaded and hashed at the end) and orphans once the killed instance restarted
// and reconciled (`remessa storage check`).
//   npm run build && npm run bench -- scale [--seconds 60] [--clients 20]
// Needs PostgreSQL (REMESSA_TEST_PG_URL or 127.0.0.1:5432) and an S3-compatible store (ceph-s3).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createTempDatabase } from '../test/helpers/postgres.js';
import { createTestBucket, s3Available } from '../test/helpers/s3.js';
import { ensureNginx, freePort, stop, waitForPort } from './servers.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = path.join(ROOT, 'bin', 'remessa.js');
const KiB = 1024;
const MiB = 1024 * KiB;
/** Uploads stop once this much is stored (the test gateway's disk is small); downloads go on. */
const STORE_CAP = 2.5 * 1024 * MiB;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const basicAuth = `Basic ${Buffer.from('scale:scale-password').toString('base64')}`;

function pct(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : 0;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: process.argv.slice(2).filter((a) => a !== 'scale'),
    options: { seconds: { type: 'string', default: '60' }, clients: { type: 'string', default: '20' } },
  });
  const seconds = Number(values.seconds);
  const clients = Number(values.clients);
  if (!(await s3Available()))
    throw new Error('no S3-compatible store: start ../shared/services/ceph-s3/start');
  const nginxBin = ensureNginx();
  const work = mkdtempSync(path.join(os.tmpdir(), 'remessa-bench-scale-'));
  const database = await createTempDatabase();
  const bucket = await createTestBucket('scale/');
  const cleanups: (() => Promise<unknown>)[] = [
    () => bucket.drop(),
    () => database.drop(),
    () => rm(work, { recursive: true, force: true }),
  ];
  try {
    const lbPort = await freePort();
    const base = `http://127.0.0.1:${lbPort}/v1`;
    const ports = [await freePort(), await freePort(), await freePort()];
    const envOf = (i: number) => ({
      ...process.env,
      ...bucket.env,
      REMESSA_DATABASE_URL: database.url,
      REMESSA_DATA_DIR: path.join(work, `instance-${i}`),
      REMESSA_PORT: String(ports[i]),
      REMESSA_HOST: '127.0.0.1',
      REMESSA_BASE_URL: base,
      REMESSA_SECRET: 'scale-bench-secret-scale-bench',
      REMESSA_TRUST_PROXY: 'true',
      REMESSA_LOG_LEVEL: 'warn',
    });
    execFileSync(process.execPath, [CLI, 'user', 'add', 'scale', '--password-stdin'], {
      env: envOf(0),
      input: 'scale-password\n',
      stdio: ['pipe', 'ignore', 'inherit'],
    });
    const instances: (ChildProcess | null)[] = [];
    const startInstance = async (i: number) => {
      const child = spawn(process.execPath, [CLI, 'serve'], {
        env: envOf(i),
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      await waitForPort(ports[i]!, child, `instance ${i}`);
      instances[i] = child;
    };
    for (let i = 0; i < 3; i++) await startInstance(i);
    cleanups.unshift(async () => {
      for (const c of instances) if (c) await stop(c);
    });

    // nginx: round-robin, no buffering of bodies either way (docs/deploy.md).
    const lbDir = path.join(work, 'nginx');
    for (const d of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'])
      mkdirSync(path.join(lbDir, d), { recursive: true });
    const conf = `${process.getuid?.() === 0 ? 'user root root;\n' : ''}worker_processes 1;
daemon off;
pid ${lbDir}/nginx.pid;
error_log ${lbDir}/error.log error;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${lbDir}/client_body;
  proxy_temp_path ${lbDir}/proxy;
  fastcgi_temp_path ${lbDir}/fastcgi;
  uwsgi_temp_path ${lbDir}/uwsgi;
  scgi_temp_path ${lbDir}/scgi;
  upstream remessa {
${ports.map((p) => `    server 127.0.0.1:${p} max_fails=1 fail_timeout=5s;`).join('\n')}
    keepalive 32;
  }
  server {
    listen 127.0.0.1:${lbPort};
    client_max_body_size 0;
    location / {
      proxy_pass http://remessa;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $remote_addr;
      proxy_request_buffering off;
      proxy_buffering off;
      proxy_read_timeout 300s;
      proxy_send_timeout 300s;
    }
  }
}
`;
    await writeFile(path.join(lbDir, 'nginx.conf'), conf);
    const lb = spawn(nginxBin, ['-p', lbDir, '-c', path.join(lbDir, 'nginx.conf')], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    cleanups.unshift(() => stop(lb));
    await waitForPort(lbPort, lb, 'nginx');

    // One sign-in, then a bearer token: Basic auth would verify the argon2id hash on every upload
    // and measure the password hashing instead of the transfers.
    const login = await fetch(`${base}/auth/login`, {
      method: 'POST',
      headers: { Authorization: basicAuth },
    });
    const auth = `Bearer ${((await login.json()) as { bearer: string }).bearer}`;
    const pool = randomBytes(8 * MiB + 64 * KiB);
    const acknowledged: { link: string; sha: string; bytes: number }[] = [];
    const latencies: number[] = [];
    let requests = 0;
    let errors = 0;
    let corruptedInRun = 0;
    let stored = 0;
    let running = true;
    const timed = async <T>(fn: () => Promise<T>): Promise<T> => {
      const t0 = performance.now();
      try {
        return await fn();
      } finally {
        latencies.push(performance.now() - t0);
        requests++;
      }
    };
    const client = async (n: number) => {
      for (let i = 0; running; i++) {
        if (stored < STORE_CAP) {
          const size = Math.round(KiB * 2 ** (Math.random() * 13)); // 1 KiB – 8 MiB
          const off = Math.floor(Math.random() * 64 * KiB);
          const data = pool.subarray(off, off + size);
          const ok = await timed(async () => {
            const res = await fetch(`${base}/upload?file=c${n}-${i}.bin`, {
              method: 'POST',
              headers: { Authorization: auth, 'Content-Type': 'application/octet-stream' },
              body: data,
            });
            const body = (await res.json()) as { files?: { linkURL: string; sha256: string }[] };
            return res.status === 200 ? body.files?.[0] : undefined;
          }).catch(() => undefined);
          if (!ok) errors++;
          else {
            if (ok.sha256 !== sha(data)) corruptedInRun++;
            acknowledged.push({ link: ok.linkURL, sha: sha(data), bytes: size });
            stored += size;
          }
        }
        const pick = acknowledged[Math.floor(Math.random() * acknowledged.length)];
        if (!pick) continue;
        const got = await timed(async () => {
          const res = await fetch(pick.link);
          return res.status === 200 ? Buffer.from(await res.arrayBuffer()) : null;
        }).catch(() => null);
        if (!got) errors++;
        else if (sha(got) !== pick.sha) corruptedInRun++;
      }
    };
    console.log(
      `3 instances behind nginx round-robin, ${clients} clients, ${seconds} s; kill -9 of instance 1 at ${seconds / 2} s`,
    );
    const t0 = performance.now();
    const killer = setTimeout(
      () => {
        instances[1]?.kill('SIGKILL');
        console.log(`killed instance 1 at ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      },
      (seconds / 2) * 1000,
    );
    const stopper = setTimeout(() => {
      running = false;
    }, seconds * 1000);
    await Promise.all(Array.from({ length: clients }, (_, n) => client(n)));
    clearTimeout(killer);
    clearTimeout(stopper);
    const elapsed = (performance.now() - t0) / 1000;

    // Every acknowledged upload must come back whole.
    let lost = 0;
    let corrupted = corruptedInRun;
    for (const a of acknowledged) {
      const res = await fetch(a.link).catch(() => null);
      if (res?.status !== 200) {
        lost++;
        continue;
      }
      if (sha(Buffer.from(await res.arrayBuffer())) !== a.sha) corrupted++;
    }
    // The killed instance comes back: its start-up reconciles what the kill left.
    await stop(instances[1]!);
    await startInstance(1);
    const check = JSON.parse(
      execFileSync(process.execPath, [CLI, 'storage', 'check', '--json'], {
        env: envOf(2),
        encoding: 'utf8',
      }),
    ) as {
      rows: number;
      objects: number;
      missing: unknown[];
      orphans: unknown[];
      intents: number;
      partial: number;
    };

    const sorted = [...latencies].sort((a, b) => a - b);
    const result = {
      seconds: elapsed,
      clients,
      requests,
      requestsPerSecond: requests / elapsed,
      p50ms: pct(sorted, 50),
      p99ms: pct(sorted, 99),
      errors,
      acknowledgedUploads: acknowledged.length,
      acknowledgedMiB: stored / MiB,
      lost,
      corrupted,
      rows: check.rows,
      objects: check.objects,
      missing: check.missing.length,
      orphans: check.orphans.length,
    };
    console.log(
      `${result.requests} requests in ${elapsed.toFixed(1)} s: ${result.requestsPerSecond.toFixed(1)} req/s, ` +
        `p50 ${result.p50ms.toFixed(0)} ms, p99 ${result.p99ms.toFixed(0)} ms, ${errors} errors`,
    );
    console.log(
      `${acknowledged.length} uploads acknowledged (${result.acknowledgedMiB.toFixed(0)} MiB): ${lost} lost, ${corrupted} corrupted`,
    );
    console.log(
      `after restart of the killed instance: ${check.rows} rows, ${check.objects} objects, ${result.missing} missing, ${result.orphans} orphans`,
    );
    mkdirSync(path.join(ROOT, 'bench-results'), { recursive: true });
    await writeFile(
      path.join(ROOT, 'bench-results', `scale-${new Date().toISOString().replace(/[:.]/g, '-')}.json`),
      JSON.stringify(result, null, 2),
    );
  } finally {
    for (const c of cleanups) await c().catch(() => {});
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(`bench failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
