// `npm run fuzz -- --count 100000 [--seed N] [--only queries,rawSockets]`: the fuzz properties for
// as long as you like, with figures for docs/security.md. Exits non-zero on the first failure,
// printing fast-check's shrunk counterexample and the seed that reproduces it.
import { parseArgs } from 'node:util';
import { assertAlive, assertNothingLeft, startFuzzTarget } from './harness.js';
import { PROPERTIES, runProperty } from './properties.js';

const { values } = parseArgs({
  options: {
    count: { type: 'string', default: '1000' },
    seed: { type: 'string', default: String(Date.now() % 2 ** 31) },
    only: { type: 'string' },
  },
});
const count = Number(values.count);
const seed = Number(values.seed);
const names = (values.only ? values.only.split(',') : Object.keys(PROPERTIES)) as (keyof typeof PROPERTIES)[];
const perProperty = Math.max(1, Math.ceil(count / names.length));
const ctx = await startFuzzTarget(seed, perProperty);
let failed = false;
try {
  for (const name of names) {
    const started = process.hrtime.bigint();
    await runProperty(ctx, name);
    await assertAlive(ctx.t);
    const s = Number(process.hrtime.bigint() - started) / 1e9;
    console.log(
      `${name}: ${perProperty} cases in ${s.toFixed(1)} s (${(perProperty / s).toFixed(0)}/s), server up`,
    );
  }
  await assertNothingLeft(ctx.t);
  console.log(
    `seed ${seed}: ${perProperty * names.length} cases, no 5xx, no crash, no temp file, descriptor or orphan blob left`,
  );
} catch (err) {
  failed = true;
  console.error(`seed ${seed}:`, err);
} finally {
  await ctx.t.close();
}
process.exit(failed ? 1 : 0);
