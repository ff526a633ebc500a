#!/usr/bin/env node
// Bundles the browser portal (src/features/portal/client) with esbuild into dist/portal/assets with
// content-hashed names, and writes dist/portal/manifest.json ({ js, css }) that the server reads
// to render the HTML shell. Part of `npm run build`; fails if the gzipped JS exceeds its budget.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const JS_BUDGET_GZIP = 100 * 1024;
const outdir = path.resolve('dist/portal/assets');
rmSync(path.resolve('dist/portal'), { recursive: true, force: true });
mkdirSync(outdir, { recursive: true });

const result = await build({
  entryPoints: { app: 'src/features/portal/client/main.ts', styles: 'src/features/portal/client/styles.css' },
  bundle: true,
  minify: true,
  format: 'esm',
  target: 'es2020',
  outdir,
  entryNames: '[name]-[hash]',
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning',
});

const manifest = {};
let jsGzip = 0;
for (const file of Object.keys(result.metafile.outputs)) {
  const name = path.basename(file);
  if (name.endsWith('.js')) {
    manifest.js = name;
    jsGzip += gzipSync(readFileSync(file)).length;
  } else if (name.endsWith('.css')) manifest.css = name;
}
if (!manifest.js || !manifest.css) throw new Error('portal build produced no JS or CSS');
if (jsGzip > JS_BUDGET_GZIP) throw new Error(`portal JS is ${jsGzip} bytes gzipped, over the ${JS_BUDGET_GZIP} budget`);
manifest.jsGzipBytes = jsGzip;
writeFileSync(path.resolve('dist/portal/manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
console.log(`portal: ${manifest.js} (${(jsGzip / 1024).toFixed(1)} KiB gzipped), ${manifest.css}`);
