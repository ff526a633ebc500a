#!/usr/bin/env node
// Runs every compiled test file with Node's test runner. `npm test` builds and lints first
// (pretest), so this always runs the tests of the current source.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';

const dir = path.resolve('dist/test');
const only = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.test.js'))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort()
  .map((f) => path.join(dir, f));
if (files.length === 0) {
  console.error('no test files found in dist/test');
  process.exit(1);
}
// A test file that has not finished after ten minutes fails and names itself, instead of holding
// CI until its overall limit with no clue where it hung. (The slowest, the CLI's, spawns some fifty
// processes: on a quiet machine a few minutes, on a loaded one five were seen not to be enough.)
const result = spawnSync(
  process.execPath,
  [
    '--enable-source-maps',
    '--test',
    '--test-concurrency=3',
    '--test-timeout=600000',
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    // node's own summary does not count skipped suites: this one lists them (scripts/skip-summary.js)
    `--test-reporter=${path.resolve('scripts/skip-summary.js')}`,
    '--test-reporter-destination=stdout',
    ...files,
  ],
  { stdio: 'inherit' },
);
process.exit(result.status ?? 1);
