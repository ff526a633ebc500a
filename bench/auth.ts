// Basic vs Bearer: median latency of sequential 4 KiB uploads with each (target: Basic
// ≤ 1.5× Bearer, thanks to the verified-credential cache). One `remessa serve` (SQLite, or
// PostgreSQL with --pg), one keep-alive client; each round runs both schemes back to back, the
// order alternating between rounds, so both see the same machine load. Bearer is the reference.
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
type Scheme = 'basic' | 'bearer';

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
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
    const basic = `Basic ${Buffer.from('bench:bench-password-1').toString('base64')}`;
    const login = await fetch(`${server.base}/auth/login`, {
      method: 'POST',
      headers: { Authorization: basic },
    });
    const bearer = `Bearer ${String(((await login.json()) as Record<string, unknown>)['bearer'])}`;
    const auth: Record<Scheme, string> = { basic, bearer };
    const body = new Uint8Array(4 * KiB).fill(7);
    let n = 0;
    const upload = async (scheme: Scheme): Promise<number> => {
      const started = performance.now();
      const res = await fetch(`${server.base}/upload?file=f${n++}.bin`, {
        method: 'POST',
        headers: { Authorization: auth[scheme], 'Content-Type': 'application/octet-stream' },
        body,
      });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${scheme} upload answered ${res.status}`);
      return performance.now() - started;
    };
    // Warm-up: JIT, the connection, the credential cache, the database's pages.
    for (let i = 0; i < 30; i++) for (const s of ['bearer', 'basic'] as const) await upload(s);

    const db = database ? 'PostgreSQL' : 'SQLite';
    console.log(`4 KiB uploads, sequential, ${requests} per scheme per round, ${rounds} rounds, ${db}`);
    console.log('round  bearer p50 ms  basic p50 ms  basic/bearer');
    const ratios: number[] = [];
    const medians: Record<Scheme, number[]> = { basic: [], bearer: [] };
    for (let r = 0; r < rounds; r++) {
      const order: Scheme[] = r % 2 === 0 ? ['bearer', 'basic'] : ['basic', 'bearer'];
      const got = {} as Record<Scheme, number>;
      for (const scheme of order) {
        const times: number[] = [];
        for (let i = 0; i < requests; i++) times.push(await upload(scheme));
        got[scheme] = median(times);
        medians[scheme].push(got[scheme]);
      }
      const ratio = got.basic / got.bearer;
      ratios.push(ratio);
      console.log(
        `${String(r + 1).padStart(5)}  ${got.bearer.toFixed(2).padStart(13)}  ${got.basic.toFixed(2).padStart(12)}  ${ratio.toFixed(2).padStart(12)}`,
      );
    }
    const range = (xs: number[], d = 2) => `${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)}`;
    console.log(
      `median of rounds: bearer ${median(medians.bearer).toFixed(2)} ms (${range(medians.bearer)}), ` +
        `basic ${median(medians.basic).toFixed(2)} ms (${range(medians.basic)}), ` +
        `basic/bearer ${median(ratios).toFixed(2)} (${range(ratios)}); target ≤ 1.5`,
    );
  } finally {
    await server.stop();
    await database?.drop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
