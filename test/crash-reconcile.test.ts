// kill -9 under load, again and again: the real server as a child process (SQLite, local store)
// with uploads streaming in from several clients when it is killed. After each restart, start-up
// reconciliation must leave exactly one blob per file row, no temp file and no write intent, and
// every upload that was acknowledged must still be there, byte for byte.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { bytes, footprint } from './helpers/files.js';
import { eventually } from './helpers/peers.js';
import { basic, closeWith, serverFor, startChildServer } from './helpers/server.js';

const ROUNDS = 6;
const CLIENTS = 8;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

test(`kill -9 during concurrent uploads, ${ROUNDS} rounds: after restart blobs = rows, no temp files, nothing acknowledged lost`, async (ctx) => {
  const child = await startChildServer({ user: { name: 'crash', password: 'crash-password' } });
  const { base, dataDir } = child;
  const auth = basic('crash', 'crash-password');
  /** sha256 of every acknowledged upload, by file id */
  const acknowledged = new Map<number, string>();
  closeWith(ctx, child);
  for (let round = 1; round <= ROUNDS; round++) {
    await child.start();
    let running = true;
    const before = acknowledged.size;
    const client = async (n: number) => {
      for (let i = 0; running; i++) {
        // 64 KiB to 3 MiB: some finish between kills, some are cut off mid-body or mid-commit.
        const data = bytes(64 * 1024 + ((n * 7919 + i * 104729) % (3 * 1024 * 1024)));
        const res = await fetch(`${base}/upload?file=r${round}-c${n}-${i}.bin`, {
          method: 'POST',
          headers: { Authorization: auth, 'Content-Type': 'application/octet-stream' },
          body: new Uint8Array(data),
        }).catch(() => null);
        if (!res) return;
        const body = (await res.json().catch(() => null)) as {
          files?: { id: number; sha256: string }[];
        } | null;
        if (res.status === 200 && body?.files?.[0]) {
          assert.equal(body.files[0].sha256, sha(data));
          acknowledged.set(body.files[0].id, body.files[0].sha256);
        }
      }
    };
    const clients = Array.from({ length: CLIENTS }, (_, n) => client(n));
    // Kill once this round has a few acknowledged uploads, with the others still streaming.
    await eventually(async () => acknowledged.size >= before + 3 + round);
    await child.kill();
    running = false;
    await Promise.all(clients);
  }

  // The next start reconciles what the last kill left.
  const t = await serverFor(ctx, { dataDir, env: { REMESSA_SECRET: child.env.REMESSA_SECRET! } });
  const fp = await footprint(t);
  assert.equal(fp.temps, 0, 'no temp files');
  assert.equal(fp.blobs, fp.files, 'one blob per file row');
  const { db, reconciler } = t.server.services;
  assert.deepEqual(await db.selectFrom('blob_intents').selectAll().execute(), []);
  const report = await reconciler.check(false);
  assert.deepEqual([report.missing, report.orphans], [[], []]);
  const rows = await db.selectFrom('files').select(['id', 'sha256']).execute();
  const stored = new Map(rows.map((r) => [r.id, r.sha256]));
  for (const [id, digest] of acknowledged) assert.equal(stored.get(id), digest, `acknowledged file ${id}`);
  console.log(`# ${ROUNDS} kills: ${acknowledged.size} acknowledged, ${rows.length} rows, ${fp.blobs} blobs`);
});
