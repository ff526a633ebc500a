// `npm run bench [-- ARGS]`: the transfer benchmark (bench/transfer.ts) then, where an S3-compatible
// store answers, its S3 rows (bench/s3.ts, same --size and --runs); `npm run bench -- s3` only
// the S3 rows; `npm run bench -- scale` the scale-out benchmark (bench/scale.ts); `npm run bench --
// auth` Basic vs Bearer upload latency (bench/auth.ts); `npm run bench --
// small` many small requests from many clients next to nginx (bench/small.ts); `npm run bench --
// tus` resumable uploads next to POST /upload (bench/tus.ts); `npm run bench -- admin-stats` the
// admin statistics over a million audit rows (bench/admin-stats.ts). Each runs as its
// own process so each keeps its own deadline and clean-up.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { s3Available } from '../test/helpers/s3.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const run = (script: string, argv: string[]) =>
  spawnSync(process.execPath, [path.join(here, script), ...argv], { stdio: 'inherit' }).status ?? 1;

if (args[0] === 'scale') process.exit(run('scale.js', args.slice(1)));
if (args[0] === 's3') process.exit(run('s3.js', args.slice(1)));
if (args[0] === 'auth') process.exit(run('auth.js', args.slice(1)));
if (args[0] === 'small') process.exit(run('small.js', args.slice(1)));
if (args[0] === 'tus') process.exit(run('tus.js', args.slice(1)));
if (args[0] === 'admin-stats') process.exit(run('admin-stats.js', args.slice(1)));
let status = run('transfer.js', args);
if (status === 0 && !args.includes('--help') && (await s3Available())) {
  // The S3 rows take the same size and number of runs.
  const keep: string[] = [];
  for (let i = 0; i < args.length; i++)
    if (args[i] === '--size' || args[i] === '--runs') keep.push(args[i]!, args[++i] ?? '');
  status = run('s3.js', keep);
}
process.exit(status);
