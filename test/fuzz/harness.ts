// Starts the server the fuzz properties run against and checks what must hold afterwards: the
// server still answers, and no temp file, descriptor or blob without a row was left behind.
import assert from 'node:assert/strict';
import path from 'node:path';
import { footprint } from '../helpers/files.js';
import { eventually } from '../helpers/peers.js';
import { descriptorsUnder } from '../helpers/raw.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { GUESSEE } from './abuse.js';
import { FUZZ_USER, type FuzzContext } from './properties.js';

export async function startFuzzTarget(seed: number, numRuns: number): Promise<FuzzContext> {
  const t = await startTestServer({ env: { REMESSA_MAX_FILE_SIZE: '64KiB', REMESSA_LOG_LEVEL: 'warn' } });
  await t.createUser(FUZZ_USER.name, FUZZ_USER.password);
  await t.createUser(GUESSEE.name, GUESSEE.password);
  const user = await t.server.services.users.find(FUZZ_USER.name);
  const { token } = await t.server.services.auth.issueToken(
    { user: user!, keyId: null, scopes: null },
    'token',
    null,
  );
  return { t, bearer: token, seed, numRuns };
}

/** The server is up and answers in its envelope. */
export async function assertAlive(t: TestServer): Promise<void> {
  const r = await call(`${t.base}/nothing`, { signal: AbortSignal.timeout(10_000) });
  assert.equal(r.status, 404);
}

/** Nothing was left behind: no temp file, no descriptor on one, no blob without its row. */
export async function assertNothingLeft(t: TestServer): Promise<void> {
  await eventually(async () => (await footprint(t)).temps === 0, 30_000);
  await eventually(async () => descriptorsUnder(path.join(t.dataDir, 'tmp')).length === 0, 30_000);
  const f = await footprint(t);
  assert.equal(f.blobs, f.files, `blobs ${f.blobs} for ${f.files} rows`);
  // Only warnings or quieter: an error-level line is a crash-worthy surprise.
  const errors = t.logs.filter((l) => /"level":(50|60)/.test(l));
  assert.deepEqual(errors.slice(0, 3), []);
}
