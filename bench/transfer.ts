// Transfer benchmark: uploads and downloads one large file over loopback to Remessa and to nginx
// (the reference) with the same client (curl), reporting MB/s and each server's peak resident memory.
// A script, not a test: `npm run build && npm run bench -- --size 2GiB --runs 3`.
import { spawnSync } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, writeSync } from 'node:fs';
import { open, readdir, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  type CurlResult,
  curl,
  ensureNginx,
  memOf,
  type Server,
  sampleRss,
  startNginx,
  startRemessa,
  treeOf,
  versionOf,
} from './servers.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const MiB = 1024 * 1024;
const DEADLINE_MS = 10 * 60 * 1000;
/** Pause after `sync` before each upload, so the disk has finished earlier writeback. */
const SETTLE_MS = 3000;

interface Options {
  size: number;
  runs: number;
  multipart: boolean;
  nginx: boolean;
  out: string;
  tmp: string;
  src: string;
  nodeArgs: string[];
}

function parseSize(text: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(b|kib|mib|gib|k|m|g)?$/i.exec(text.trim());
  if (!m) throw new Error(`not a size: ${text} (e.g. 1GiB, 512MiB)`);
  const unit = (m[2] ?? 'b').toLowerCase();
  const mult: Record<string, number> = {
    b: 1,
    k: 1024,
    kib: 1024,
    m: MiB,
    mib: MiB,
    g: 1024 * MiB,
    gib: 1024 * MiB,
  };
  const bytes = Math.round(Number(m[1]) * (mult[unit] ?? 1));
  if (bytes < MiB) throw new Error('size must be at least 1 MiB');
  return bytes - (bytes % MiB);
}

function options(): Options {
  const { values } = parseArgs({
    options: {
      size: { type: 'string', default: '1GiB' },
      runs: { type: 'string', default: '3' },
      'no-multipart': { type: 'boolean', default: false },
      'no-nginx': { type: 'boolean', default: false },
      out: { type: 'string', default: path.join(ROOT, 'bench-results') },
      tmp: { type: 'string', default: os.tmpdir() },
      src: { type: 'string' },
      'node-arg': { type: 'string', multiple: true, default: [] },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(`usage: npm run bench -- [--size 1GiB] [--runs 3] [--no-multipart] [--no-nginx]
                   [--out bench-results] [--tmp DIR] [--src DIR] [--node-arg=--cpu-prof ...]
  --size        test file size (B, KiB, MiB, GiB); default 1GiB
  --runs        measurements per case, the median is reported; default 3
  --no-multipart  skip the multipart/form-data upload variant
  --no-nginx    skip the nginx reference
  --tmp         where the servers store files; default the system temp dir
  --src         where the client's test file lives; default --tmp (read into the page cache
                before every upload). nginx's PUT is 2-3x slower with it on tmpfs (/dev/shm)
  --node-arg    extra node option for the Remessa server process (repeatable)`);
    process.exit(0);
  }
  const runs = Number(values.runs);
  if (!Number.isInteger(runs) || runs < 1 || runs > 9) throw new Error('--runs must be 1..9');
  return {
    size: parseSize(values.size),
    runs,
    multipart: !values['no-multipart'],
    nginx: !values['no-nginx'],
    out: path.resolve(values.out),
    tmp: path.resolve(values.tmp),
    src: path.resolve(values.src ?? values.tmp),
    nodeArgs: values['node-arg'],
  };
}

// ---------------------------------------------------------------------------------------------
// Measurements

interface Sample {
  mbps: number;
  seconds: number;
  peakRss: number;
}

interface Case {
  server: string;
  op: string;
  samples: Sample[];
}

const AUTH = `Authorization: Basic ${Buffer.from('bench:bench-password-1').toString('base64')}`;

async function measure(pid: number, size: number, run: () => Promise<CurlResult>, direction: 'up' | 'down') {
  const done = sampleRss(pid);
  let r: CurlResult;
  let peakRss: number;
  try {
    r = await run();
  } finally {
    peakRss = done();
  }
  const bytes = direction === 'up' ? r.sizeUpload : r.sizeDownload;
  // An upload may carry more than the file (multipart framing), never less.
  if (direction === 'up' ? bytes < size : bytes !== size)
    throw new Error(`transferred ${bytes} bytes instead of ${size} (HTTP ${r.code})`);
  const speed = direction === 'up' ? r.speedUpload : r.speedDownload;
  // curl's speed is bytes/s over the whole transfer; MB/s here is 10^6 bytes/s.
  return { sample: { mbps: speed / 1e6, seconds: r.time, peakRss }, result: r };
}

/**
 * Reads a file once so both servers serve downloads from the page cache. On this VM the kernel
 * reclaims page cache proactively (DAMON), so a file written a moment ago may already be on disk
 * only; without this the comparison would pit nginx's cache against Remessa's disk.
 */
async function warmPageCache(file: string): Promise<void> {
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(MiB);
    while ((await fh.read(buf, 0, MiB, null)).bytesRead > 0);
  } finally {
    await fh.close();
  }
}

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await filesUnder(p)));
    else out.push(p);
  }
  return out;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** The filesystem type of the directory, as `df -T` prints it. */
function fsTypeOf(dir: string): string {
  return versionOf('df', ['-T', dir]).split('\n')[1]?.split(/\s+/)[1] ?? 'unknown';
}

async function makeTestFile(file: string, size: number): Promise<void> {
  const fd = openSync(file, 'w', 0o600);
  const block = Buffer.allocUnsafe(MiB);
  try {
    for (let written = 0; written < size; written += MiB) {
      randomFillSync(block);
      writeSync(fd, block);
    }
  } finally {
    closeSync(fd);
  }
}

async function main(): Promise<void> {
  const opt = options();
  const watchdog = setTimeout(() => {
    console.error('bench: deadline of 10 minutes reached, giving up');
    process.exit(2);
  }, DEADLINE_MS);
  watchdog.unref();

  const work = mkdtempSync(path.join(opt.tmp, 'remessa-bench-'));
  const srcDir = mkdtempSync(path.join(opt.src, 'remessa-bench-src-'));
  const servers: Server[] = [];
  const cleanup = async () => {
    for (const s of servers) await s.stop().catch(() => {});
    await rm(work, { recursive: true, force: true });
    await rm(srcDir, { recursive: true, force: true });
  };
  process.once('SIGINT', () => {
    cleanup().finally(() => process.exit(130));
  });

  try {
    const nginxBin = opt.nginx ? ensureNginx() : null;
    const machine = {
      nproc: os.availableParallelism(),
      cpu: os.cpus()[0]?.model ?? 'unknown',
      memTotalMiB: Math.round(os.totalmem() / MiB),
      kernel: os.release(),
      node: process.version,
      nginx: nginxBin ? versionOf(nginxBin, ['-v']).replace(/^nginx version:\s*/, '') : null,
      curl: versionOf('curl', ['--version']).split(' ').slice(0, 2).join(' '),
      filesystem: fsTypeOf(work),
      clientFile: `${opt.src} (${fsTypeOf(srcDir)})`,
    };
    console.log(
      `machine: ${machine.nproc} CPUs (${machine.cpu}), ${machine.memTotalMiB} MiB RAM, Linux ${machine.kernel}, ` +
        `${machine.filesystem} temp dir; client's test file in ${machine.clientFile}`,
    );
    console.log(`node ${machine.node}, nginx ${machine.nginx ?? '(skipped)'}, ${machine.curl}`);

    const file = path.join(srcDir, 'payload.bin');
    const sizeMiB = opt.size / MiB;
    process.stdout.write(`generating ${sizeMiB} MiB of random bytes… `);
    await makeTestFile(file, opt.size);
    console.log('done');

    const remessa = await startRemessa(path.join(work, 'remessa'), opt.size, opt.nodeArgs);
    servers.push(remessa);
    const nginx = nginxBin ? await startNginx(nginxBin, path.join(work, 'nginx')) : null;
    if (nginx) servers.push(nginx);
    const idleRss = memOf(remessa.pid).rss;

    const cases = new Map<string, Case>();
    const record = (server: string, op: string, s: Sample) => {
      const key = `${server}|${op}`;
      const c = cases.get(key) ?? { server, op, samples: [] };
      c.samples.push(s);
      cases.set(key, c);
    };

    const respFile = path.join(work, 'response.json');
    const blobDir = path.join(work, 'remessa', 'blobs');
    const remessaUpload = (kind: 'raw' | 'multipart') => {
      const url = `${remessa.base}/upload?file=payload.bin`;
      const args =
        kind === 'raw'
          ? ['-T', file, '-X', 'POST', '-H', 'Content-Type: application/octet-stream']
          : ['-F', `f=@${file};filename=payload.bin;type=application/octet-stream`];
      return curl(['-H', AUTH, ...args, '-o', respFile, url]);
    };
    const linkOf = async (): Promise<string> => {
      const body = JSON.parse(await readFile(respFile, 'utf8')) as { files?: { linkURL: string }[] };
      const link = body.files?.[0]?.linkURL;
      if (!link) throw new Error(`upload answered without a link: ${JSON.stringify(body).slice(0, 300)}`);
      return link;
    };
    // Stored uploads are removed between runs so that a 2 GiB run does not fill the disk.
    const dropRemessaBlobs = async () => {
      for (const sub of await readdir(blobDir).catch(() => [] as string[])) {
        await rm(path.join(blobDir, sub), { recursive: true, force: true });
      }
    };

    // Warm-up (not measured): JIT, database, page cache of the test file.
    {
      const small = path.join(work, 'warm.bin');
      await makeTestFile(small, 8 * MiB);
      await curl([
        '-H',
        AUTH,
        '-T',
        small,
        '-X',
        'POST',
        '-H',
        'Content-Type: application/octet-stream',
        '-o',
        respFile,
        `${remessa.base}/upload?file=warm.bin`,
      ]);
      await curl(['-o', '/dev/null', await linkOf()]);
      if (nginx) {
        await curl(['-T', small, '-o', '/dev/null', `http://127.0.0.1:${nginx.port}/up/warm.bin`]);
        await curl(['-o', '/dev/null', `http://127.0.0.1:${nginx.port}/up/warm.bin`]);
      }
      await unlink(small);
      await dropRemessaBlobs();
    }

    // Every upload starts on a quiet disk: what a previous upload left for writeback would slow
    // whichever server comes next. The order also alternates between runs, so neither server
    // always follows the other's writes.
    const settleDisk = async () => {
      // The client's file must come from memory; this VM's kernel evicts idle page cache within
      // seconds (see warmPageCache), which left later runs reading it partly from the disk.
      await warmPageCache(file);
      spawnSync('sync');
      await new Promise((r) => setTimeout(r, SETTLE_MS));
    };

    const nginxRound = async (n: NonNullable<typeof nginx>) => {
      const url = `http://127.0.0.1:${n.port}/up/payload.bin`;
      await settleDisk();
      const up = await measure(n.pid, opt.size, () => curl(['-T', file, '-o', '/dev/null', url]), 'up');
      if (up.result.code !== 201 && up.result.code !== 204)
        throw new Error(`nginx PUT answered ${up.result.code}`);
      record('nginx', 'upload (PUT)', up.sample);
      // nginx answers once the body is in the page cache; Remessa fsyncs before it answers. For a
      // like-for-like reference, also time an fsync of what nginx wrote, right after its PUT.
      const t0 = process.hrtime.bigint();
      const fh = await open(path.join(n.root, 'up', 'payload.bin'), 'r');
      await fh.sync();
      await fh.close();
      const syncSeconds = Number(process.hrtime.bigint() - t0) / 1e9;
      const durable = up.sample.seconds + syncSeconds;
      record('nginx', 'upload (PUT) + fsync', {
        mbps: opt.size / durable / 1e6,
        seconds: durable,
        peakRss: up.sample.peakRss,
      });
      await warmPageCache(path.join(n.root, 'up', 'payload.bin'));
      const down = await measure(n.pid, opt.size, () => curl(['-o', '/dev/null', url]), 'down');
      record('nginx', 'download', down.sample);
      await rm(path.join(n.root, 'up', 'payload.bin'), { force: true });
      process.stdout.write(` nginx ↑${up.sample.mbps.toFixed(0)} ↓${down.sample.mbps.toFixed(0)}`);
    };

    const remessaRound = async () => {
      const kinds: ('raw' | 'multipart')[] = opt.multipart ? ['raw', 'multipart'] : ['raw'];
      for (const kind of kinds) {
        await settleDisk();
        const up = await measure(remessa.pid, opt.size, () => remessaUpload(kind), 'up');
        if (up.result.code !== 200) {
          throw new Error(
            `remessa upload answered ${up.result.code}: ${(await readFile(respFile, 'utf8')).slice(0, 300)}`,
          );
        }
        record('remessa', kind === 'raw' ? 'upload (octet-stream)' : 'upload (multipart)', up.sample);
        const link = await linkOf();
        process.stdout.write(` remessa-${kind} ↑${up.sample.mbps.toFixed(0)}`);
        if (kind === 'raw') {
          for (const blob of await filesUnder(blobDir)) await warmPageCache(blob);
          const down = await measure(remessa.pid, opt.size, () => curl(['-o', '/dev/null', link]), 'down');
          if (down.result.code !== 200) throw new Error(`remessa download answered ${down.result.code}`);
          record('remessa', 'download', down.sample);
          process.stdout.write(` ↓${down.sample.mbps.toFixed(0)}`);
        }
        await dropRemessaBlobs();
      }
    };

    for (let run = 1; run <= opt.runs; run++) {
      process.stdout.write(`run ${run}/${opt.runs}:`);
      if (nginx && run % 2 === 1) await nginxRound(nginx);
      await remessaRound();
      if (nginx && run % 2 === 0) await nginxRound(nginx);
      console.log('');
    }

    const hwm = memOf(remessa.pid).hwm;
    const nginxHwm = nginx ? treeOf(nginx.pid).reduce((s, p) => s + memOf(p).hwm, 0) : 0;
    const rows = [...cases.values()].map((c) => ({
      server: c.server,
      op: c.op,
      mbps: median(c.samples.map((s) => s.mbps)),
      seconds: median(c.samples.map((s) => s.seconds)),
      peakRssMiB: Math.max(...c.samples.map((s) => s.peakRss)) / MiB,
      samples: c.samples,
    }));
    const ref = (op: 'upload' | 'download') =>
      rows.find((r) => r.server === 'nginx' && r.op === (op === 'upload' ? 'upload (PUT)' : 'download'))
        ?.mbps ?? null;
    const durableRef = rows.find((r) => r.op === 'upload (PUT) + fsync')?.mbps ?? null;

    console.log('');
    console.log(`${sizeMiB} MiB over loopback, curl client, median of ${opt.runs}`);
    console.log('server   operation                   MB/s  % nginx  % nginx+fsync  seconds  peak RSS (MiB)');
    for (const r of rows) {
      const nref = ref(r.op.startsWith('upload') ? 'upload' : 'download');
      const pct = r.server === 'remessa' && nref ? `${((100 * r.mbps) / nref).toFixed(0)}%` : '';
      const pctDurable =
        r.server === 'remessa' && r.op.startsWith('upload') && durableRef
          ? `${((100 * r.mbps) / durableRef).toFixed(0)}%`
          : '';
      console.log(
        `${r.server.padEnd(8)} ${r.op.padEnd(24)} ${r.mbps.toFixed(0).padStart(7)} ${pct.padStart(8)} ` +
          `${pctDurable.padStart(14)} ${r.seconds.toFixed(2).padStart(8)} ${r.peakRssMiB.toFixed(1).padStart(15)}`,
      );
    }
    console.log(
      `remessa RSS idle ${(idleRss / MiB).toFixed(1)} MiB, VmHWM ${(hwm / MiB).toFixed(1)} MiB` +
        (nginx ? `; nginx (master+worker) VmHWM ${(nginxHwm / MiB).toFixed(1)} MiB` : ''),
    );

    mkdirSync(opt.out, { recursive: true });
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    const outFile = path.join(opt.out, `transfer-${sizeMiB}MiB-${stamp}.json`);
    await writeFile(
      outFile,
      JSON.stringify(
        {
          date: new Date().toISOString(),
          sizeBytes: opt.size,
          runs: opt.runs,
          nodeArgs: opt.nodeArgs,
          machine,
          nginxConfig: 'worker_processes 1; sendfile on; tcp_nopush on; access_log off; dav_methods PUT',
          remessa: { idleRssMiB: idleRss / MiB, vmHwmMiB: hwm / MiB },
          nginxVmHwmMiB: nginx ? nginxHwm / MiB : null,
          results: rows,
        },
        null,
        2,
      ),
    );
    console.log(`results: ${path.relative(process.cwd(), outFile)}`);
  } finally {
    await cleanup();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(`bench failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
