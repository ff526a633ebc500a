// Basic and API keys against Bearer: median latency of sequential 4 KiB uploads with each way a
// script authenticates (target: each ≤ 1.5× Bearer). Basic with a password is fast thanks to the
// verified-credential cache; a key, as Basic's password or as the Bearer token, needs no argon2 at
// all (one SHA-256 and the key's row). One `remessa serve` (SQLite, or PostgreSQL with --pg), one
// keep-alive client; each round runs every way back to back, the order rotating between rounds,
// so all see the same machine load. Bearer (a signed token) is the reference.
//   npm run build && npm run bench -- auth [--requests 300] [--rounds 5] [--pg]
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { createTempDatabase } from '../test/helpers/postgres.js';
import { startRemessa } from './servers.js';

const KiB = 1024;
const WAYS = ['bearer', 'basic', 'keyBasic', 'keyBearer'] as const;
type Way = (typeof WAYS)[number];

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}
const range = (xs: number[], d = 2) => `${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)}`;

/** The Authorization header of each way, for the bench account. */
async function authorizations(base: string): Promise<Record<Way, string>> {
  const basic = `Basic ${Buffer.from('bench:bench-password-1').toString('base64')}`;
  const login = await fetch(`${base}/auth/login`, { method: 'POST', headers: { Authorization: basic } });
  const bearer = `Bearer ${String(((await login.json()) as Record<string, unknown>)['bearer'])}`;
  const made = await fetch(`${base}/keys`, {
    method: 'POST',
    headers: { Authorization: basic, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 'bench' }),
  });
  const key = String(((await made.json()) as { apiKey: { key: string } }).apiKey.key);
  return {
    bearer,
    basic,
    keyBasic: `Basic ${Buffer.from(`bench:${key}`).toString('base64')}`,
    keyBearer: `Bearer ${key}`,
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: process.argv.slice(2).filter((a) => a !== 'auth'),
    options: {
      requests: { type: 'string', default: '300' },
      rounds: { type: 'string', default: '5' },
      pg: { type: 'boolean', default: false },
    },
  });
  const requests = Number(values.requests);
  const rounds = Number(values.rounds);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'remessa-bench-auth-'));
  const database = values.pg ? await createTempDatabase() : null;
  if (database) process.env['REMESSA_DATABASE_URL'] = database.url;
  const server = await startRemessa(dir, 64 * KiB, []);
  try {
    const auth = await authorizations(server.base);
    const body = new Uint8Array(4 * KiB).fill(7);
    let n = 0;
    const upload = async (way: Way): Promise<number> => {
      const started = performance.now();
      const res = await fetch(`${server.base}/upload?file=f${n++}.bin`, {
        method: 'POST',
        headers: { Authorization: auth[way], 'Content-Type': 'application/octet-stream' },
        body,
      });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${way} upload answered ${res.status}`);
      return performance.now() - started;
    };
    // Warm-up: JIT, the connection, the credential cache, the database's pages.
    for (let i = 0; i < 30; i++) for (const w of WAYS) await upload(w);

    const db = database ? 'PostgreSQL' : 'SQLite';
    console.log(`4 KiB uploads, sequential, ${requests} per way per round, ${rounds} rounds, ${db}`);
    console.log(`round  ${WAYS.map((w) => `${w} p50 ms`.padStart(17)).join('')}   (÷ bearer)`);
    const medians = Object.fromEntries(WAYS.map((w) => [w, [] as number[]])) as Record<Way, number[]>;
    const ratios = Object.fromEntries(WAYS.map((w) => [w, [] as number[]])) as Record<Way, number[]>;
    for (let r = 0; r < rounds; r++) {
      const order = WAYS.map((_, i) => WAYS[(i + r) % WAYS.length]!);
      const got = {} as Record<Way, number>;
      for (const way of order) {
        const times: number[] = [];
        for (let i = 0; i < requests; i++) times.push(await upload(way));
        got[way] = median(times);
        medians[way].push(got[way]);
      }
      for (const w of WAYS) ratios[w].push(got[w] / got.bearer);
      const cells = WAYS.map((w) =>
        `${got[w].toFixed(2)} (${(got[w] / got.bearer).toFixed(2)})`.padStart(16),
      );
      console.log(`${String(r + 1).padStart(5)}  ${cells.join('')}`);
    }
    console.log('\nmedian of rounds (min–max), and ÷ bearer in the same round; target ≤ 1.5');
    for (const w of WAYS)
      console.log(
        `  ${w.padEnd(10)} ${median(medians[w]).toFixed(2)} ms (${range(medians[w])})` +
          (w === 'bearer' ? '' : `, ÷ bearer ${median(ratios[w]).toFixed(2)} (${range(ratios[w])})`),
      );
  } finally {
    await server.stop();
    await database?.drop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
