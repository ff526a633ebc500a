// Usage stays exact across kill -9: uploads in flight on `remessa serve` killed again and again;
// afterwards the counter equals the recomputed figure, and once the leases of the killed uploads'
// reservations have run out the sweeper leaves none behind.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { bytes } from './helpers/files.js';
import { storageCheck } from './helpers/quotas.js';
import { basic, startChildServer, startTestServer } from './helpers/server.js';

const USER = { name: 'ana', password: 'ana-password-1' };

describe('quotas across kill -9', () => {
  test('usage equals the recomputed figure after a kill -9 loop; no reservation left', async () => {
    const child = await startChildServer({
      user: USER,
      env: { REMESSA_QUOTA_DEFAULT: '1GiB', REMESSA_INLINE_MAX_SIZE: '0' },
    });
    try {
      const auth = basic(USER.name, USER.password);
      for (let round = 0; round < 4; round++) {
        await child.start();
        const inFlight = Array.from({ length: 6 }, (_, i) =>
          fetch(`${child.base}/upload?file=r${round}-${i}.bin`, {
            method: 'POST',
            headers: { Authorization: auth, 'Content-Type': 'application/octet-stream' },
            body: new Uint8Array(bytes(i % 2 ? 2 * 1024 * 1024 : 20_000)),
          }).catch(() => null),
        );
        await new Promise((r) => setTimeout(r, 50 + round * 60));
        await child.kill();
        await Promise.all(inFlight);
      }
      const env = { ...child.env };
      const check = await storageCheck(env);
      assert.equal(check.code, 0, JSON.stringify(check.usage));
      assert.deepEqual(
        check.usage.map((u) => u.counted - u.recomputed),
        [0],
      );
      // The killed uploads' reservations hold nothing past their lease, and the sweeper removes them.
      const t = await startTestServer({ dataDir: child.dataDir, env, startWorkers: false });
      try {
        await t.advanceClock(2 * 60 * 1000);
        await t.server.workers.get('file-sweeper')!.runOnce();
        const left = await t.server.services.db.selectFrom('quota_reservations').selectAll().execute();
        assert.deepEqual(left, []);
      } finally {
        await t.close();
      }
      assert.equal((await storageCheck(env)).code, 0);
    } finally {
      await child.close();
    }
  });
});
