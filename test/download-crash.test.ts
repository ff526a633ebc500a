// kill -9 under download load: every download whose response reached the
// client has its audit row after a restart, because the row is committed before the first byte.
// The real server runs as a child process, on SQLite and (when reachable) on PostgreSQL.
import assert from 'node:assert/strict';
import { get } from 'node:http';
import { describe, test } from 'node:test';
import pg from 'pg';
import { bytes, outcomeKnown } from './helpers/files.js';
import { eventually } from './helpers/peers.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';
import { basic, type ChildServer, closeWith, serverFor, startChildServer } from './helpers/server.js';

const ROUNDS = 3;
const CLIENTS = 16;
const available = await postgresAvailable();
if (!available && PG_REQUIRED) throw new Error(PG_SKIP);

/** One GET; resolves with whether at least one byte of the body reached us (however it ended). */
function download(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    let got = false;
    const req = get(url, (res) => {
      res.on('data', () => {
        got ||= res.statusCode === 200;
      });
      res.on('end', () => resolve(got));
      res.on('error', () => resolve(got));
      res.on('close', () => resolve(got));
    });
    req.on('error', () => resolve(got));
  });
}

interface Row {
  file_id: number | null;
  detail: string | null;
}

/**
 * ROUNDS times: start, CLIENTS loops downloading small and larger files, kill -9 once this round
 * has some downloads. Returns how many downloads of each file reached the client.
 */
async function downloadAndKill(child: ChildServer): Promise<Map<number, number>> {
  const auth = basic('dl', 'dl-password');
  await child.start();
  const links: { id: number; url: string }[] = [];
  for (const [i, size] of [4096, 4096, 64 * 1024, 1024 * 1024, 3 * 1024 * 1024].entries()) {
    const res = await fetch(`${child.base}/upload?file=f${i}.bin`, {
      method: 'POST',
      headers: { Authorization: auth, 'Content-Type': 'application/octet-stream' },
      body: new Uint8Array(bytes(size)),
    });
    assert.equal(res.status, 200);
    const entry = ((await res.json()) as { files: { id: number; linkURL: string }[] }).files[0]!;
    links.push({ id: entry.id, url: entry.linkURL });
  }
  const reached = new Map<number, number>();
  let total = 0;
  for (let round = 1; round <= ROUNDS; round++) {
    if (round > 1) await child.start();
    let running = true;
    const before = total;
    const client = async (n: number) => {
      for (let i = n; running; i++) {
        const link = links[i % links.length]!;
        if (await download(link.url)) {
          reached.set(link.id, (reached.get(link.id) ?? 0) + 1);
          total++;
        }
      }
    };
    const clients = Array.from({ length: CLIENTS }, (_, n) => client(n));
    await eventually(async () => total >= before + 20 * round, 120_000);
    await child.kill();
    running = false;
    await Promise.all(clients);
  }
  return reached;
}

function check(reached: Map<number, number>, rows: Row[]): void {
  const audited = new Map<number, number>();
  for (const r of rows) audited.set(r.file_id!, (audited.get(r.file_id!) ?? 0) + 1);
  let clientTotal = 0;
  for (const [fileId, n] of reached) {
    clientTotal += n;
    assert.ok(
      (audited.get(fileId) ?? 0) >= n,
      `file ${fileId}: ${n} downloads reached the client, ${audited.get(fileId) ?? 0} audit rows`,
    );
  }
  const unknown = rows.filter((r) => !outcomeKnown(r)).length;
  for (const r of rows.filter(outcomeKnown))
    assert.match(r.detail ?? '', /"bytes":\d+,"complete":(true|false)/);
  console.log(
    `# ${ROUNDS} kills: ${clientTotal} downloads reached the client, ${rows.length} audit rows, ${unknown} of them with the outcome unknown`,
  );
}

describe('kill -9 during downloads: every download that sent a byte is audited', () => {
  test('SQLite', async (ctx) => {
    const child = await startChildServer({ user: { name: 'dl', password: 'dl-password' } });
    closeWith(ctx, child);
    const reached = await downloadAndKill(child);
    const t = await serverFor(ctx, {
      dataDir: child.dataDir,
      env: { REMESSA_SECRET: child.env.REMESSA_SECRET! },
    });
    check(reached, await t.server.services.audit.query({ event: 'download', limit: 100_000 }));
  });

  test('PostgreSQL', { skip: available ? false : PG_SKIP }, async (ctx) => {
    const database = await createTempDatabase();
    closeWith(ctx, () => database.drop());
    // The user is added by the child helper through the CLI, on the same database.
    const child = await startChildServer({
      user: { name: 'dl', password: 'dl-password' },
      env: { REMESSA_DATABASE_URL: database.url },
    });
    closeWith(ctx, child);
    const reached = await downloadAndKill(child);
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    closeWith(ctx, () => client.end());
    const { rows } = await client.query<Row>(
      "select file_id, detail from audit where event = 'download' order by id",
    );
    check(reached, rows);
  });
});
