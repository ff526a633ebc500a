// The fuzz suite in `npm test`: every property with a fixed seed and a bounded count,
// so a run is repeatable and stays well under a minute. `npm run fuzz -- --count N` runs longer.
import { after, before, describe, test } from 'node:test';
import { assertAlive, assertNothingLeft, startFuzzTarget } from './fuzz/harness.js';
import { type FuzzContext, PROPERTIES, runProperty } from './fuzz/properties.js';
import { closeAll } from './helpers/server.js';

const SEED = Number(process.env['REMESSA_FUZZ_SEED'] ?? 20261123);
const RUNS = Number(process.env['REMESSA_FUZZ_RUNS'] ?? 250);

describe(`fuzz: hostile requests of every shape (seed ${SEED}, ${RUNS} runs each)`, () => {
  let ctx: FuzzContext;
  before(async () => {
    ctx = await startFuzzTarget(SEED, RUNS);
  });
  after(() => closeAll(ctx?.t));

  for (const name of Object.keys(PROPERTIES) as (keyof typeof PROPERTIES)[]) {
    test(`${name}: every answer is an envelope below 500 and the server stays up`, async () => {
      await runProperty(ctx, name);
      await assertAlive(ctx.t);
    });
  }

  test('afterwards: no temp file, no descriptor, no blob without its row, no error logged', async () => {
    await assertNothingLeft(ctx.t);
  });
});
