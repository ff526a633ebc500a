// Resumable uploads (tus) next to POST /upload: one file (default 1 GiB) sent to one
// `remessa serve` (SQLite, local storage) as
//   - POST /upload (octet-stream), the reference,
//   - tus in one PATCH (creation, then the whole body),
//   - tus in chunks (default 64 MiB, one PATCH each, as tus-js-client sends with chunkSize),
// each from the time the client starts until the server answers that the file is committed.
// The same client (node:http, streaming the file from disk) for all three; the order rotates
// between rounds and each round starts on a quiet disk, so no variant always follows another's
// writes. Ratios are taken round by round against POST /upload of the same round.
//   npm run build && npm run bench -- tus [--size 1GiB] [--rounds 3] [--chunk 64MiB]
import { spawnSync } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import { closeSync, createReadStream, mkdtempSync, openSync, writeSync } from 'node:fs';
import { open, readdir, rm } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { sampleRss, startRemessa } from './servers.js';

const MiB = 1024 * 1024;
const AUTH = `Basic ${Buffer.from('bench:bench-password-1').toString('base64')}`;
const DEADLINE_MS = 15 * 60 * 1000;
const SETTLE_MS = 3000;

type Variant = 'POST /upload' | 'tus, one PATCH' | 'tus, chunked';
const VARIANTS: Variant[] = ['POST /upload', 'tus, one PATCH', 'tus, chunked'];

function parseMiB(text: string): number {
  const m = /^(\d+)\s*(mib|gib)$/i.exec(text.trim());
  if (!m) throw new Error(`not a size: ${text} (e.g. 64MiB, 1GiB)`);
  return Number(m[1]) * (m[2]!.toLowerCase() === 'gib' ? 1024 : 1) * MiB;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 });

/** One request; `body` is [start, end) of `file` streamed from disk, or nothing. */
function send(
  url: string,
  method: string,
  headers: Record<string, string>,
  file: string | null = null,
  start = 0,
  end = 0,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        agent,
        headers: {
          Authorization: AUTH,
          ...headers,
          ...(file ? { 'Content-Length': String(end - start) } : { 'Content-Length': '0' }),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          text += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (file && end > start) pipeline(createReadStream(file, { start, end: end - 1 }), req).catch(reject);
    else req.end();
  });
}

async function warmPageCache(file: string): Promise<void> {
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(MiB);
    while ((await fh.read(buf, 0, MiB, null)).bytesRead > 0);
  } finally {
    await fh.close();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: process.argv.slice(2).filter((a) => a !== 'tus'),
    options: {
      size: { type: 'string', default: '1GiB' },
      rounds: { type: 'string', default: '3' },
      chunk: { type: 'string', default: '64MiB' },
      tmp: { type: 'string', default: os.tmpdir() },
    },
  });
  const size = parseMiB(values.size);
  const chunk = parseMiB(values.chunk);
  const rounds = Number(values.rounds);
  if (!Number.isInteger(rounds) || rounds < 1 || rounds > 9) throw new Error('--rounds must be 1..9');
  const watchdog = setTimeout(() => {
    console.error('bench tus: deadline of 15 minutes reached, giving up');
    process.exit(2);
  }, DEADLINE_MS);
  watchdog.unref();

  const work = mkdtempSync(path.join(path.resolve(values.tmp), 'remessa-bench-tus-'));
  const file = path.join(work, 'payload.bin');
  {
    const fd = openSync(file, 'w', 0o600);
    const block = Buffer.allocUnsafe(MiB);
    for (let n = 0; n < size; n += MiB) {
      randomFillSync(block);
      writeSync(fd, block);
    }
    closeSync(fd);
  }
  const dataDir = path.join(work, 'remessa');
  const server = await startRemessa(dataDir, size, []);
  const blobDir = path.join(dataDir, 'blobs');
  try {
    let n = 0;
    const upload: Record<Variant, () => Promise<void>> = {
      'POST /upload': async () => {
        const r = await send(
          `${server.base}/upload?file=p${n++}.bin`,
          'POST',
          { 'Content-Type': 'application/octet-stream' },
          file,
          0,
          size,
        );
        if (r.status !== 200) throw new Error(`POST /upload answered ${r.status}: ${r.text.slice(0, 200)}`);
      },
      'tus, one PATCH': () => tus(size),
      'tus, chunked': () => tus(chunk),
    };
    const tus = async (step: number) => {
      const name = Buffer.from(`p${n++}.bin`).toString('base64');
      const tusHeaders = { 'Tus-Resumable': '1.0.0' };
      const created = await send(`${server.base}/uploads`, 'POST', {
        ...tusHeaders,
        'Upload-Length': String(size),
        'Upload-Metadata': `filename ${name}`,
      });
      if (created.status !== 201) throw new Error(`tus creation answered ${created.status}: ${created.text}`);
      const url = new URL(String(created.headers['location']), server.base).href;
      for (let at = 0; at < size; at += step) {
        const end = Math.min(size, at + step);
        const r = await send(
          url,
          'PATCH',
          { ...tusHeaders, 'Upload-Offset': String(at), 'Content-Type': 'application/offset+octet-stream' },
          file,
          at,
          end,
        );
        if (r.status !== 204 || r.headers['upload-offset'] !== String(end))
          throw new Error(`PATCH at ${at} answered ${r.status} (${r.headers['upload-offset']}): ${r.text}`);
      }
    };
    // Stored files are removed between uploads so that the disk holds one at a time.
    const dropBlobs = async () => {
      for (const sub of await readdir(blobDir).catch(() => [] as string[]))
        await rm(path.join(blobDir, sub), { recursive: true, force: true });
    };
    const settle = async () => {
      await dropBlobs();
      await warmPageCache(file);
      spawnSync('sync');
      await new Promise((r) => setTimeout(r, SETTLE_MS));
    };

    // Warm-up (not measured): JIT, database pages, the code paths of all three.
    for (const v of VARIANTS) await upload[v]();

    const mbps = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
    const rss = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
    const ratios: string[] = [];
    for (let round = 0; round < rounds; round++) {
      const order = VARIANTS.map((_, i) => VARIANTS[(i + round) % VARIANTS.length]!);
      const got = new Map<Variant, number>();
      for (const v of order) {
        await settle();
        const done = sampleRss(server.pid);
        const t0 = process.hrtime.bigint();
        try {
          await upload[v]();
        } finally {
          rss.get(v)!.push(done());
        }
        const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
        const speed = size / seconds / 1e6;
        got.set(v, speed);
        mbps.get(v)!.push(speed);
        console.log(`round ${round + 1}: ${v.padEnd(15)} ${speed.toFixed(0).padStart(5)} MB/s`);
      }
      const ref = got.get('POST /upload')!;
      ratios.push(
        `round ${round + 1} (${order.join(' → ')}): ` +
          VARIANTS.slice(1)
            .map((v) => `${v} ${(got.get(v)! / ref).toFixed(2)}×`)
            .join(', '),
      );
    }

    const mb = (x: number) => (x / MiB).toFixed(0);
    console.log(
      `\n${mb(size)} MiB, ${rounds} rounds, chunks of ${mb(chunk)} MiB; node ${process.version}, ` +
        `${os.cpus().length} CPUs; local storage, SQLite\n`,
    );
    console.log('| variant | MB/s median (min–max) | server peak RSS MiB (max) |');
    console.log('|---|---|---|');
    for (const v of VARIANTS) {
      const xs = mbps.get(v)!;
      console.log(
        `| ${v}${v === 'tus, chunked' ? ` (${mb(chunk)} MiB)` : ''} | ${median(xs).toFixed(0)} ` +
          `(${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)}) | ${mb(Math.max(...rss.get(v)!))} |`,
      );
    }
    console.log('\nratios to POST /upload of the same round:');
    for (const r of ratios) console.log(`- ${r}`);
  } finally {
    agent.destroy();
    await server.stop().catch(() => {});
    await rm(work, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
