#!/usr/bin/env node
// Builds the optional native module in native/ (sendfile(2) downloads, upload hashing, malloc
// tuning) with node-gyp, against the headers of the Node that runs this script: nothing is
// downloaded. Part of `npm run build`, so `npm ci` builds it. It never fails the install: on a
// machine without a C compiler, headers or node-gyp it says why and the server runs without it.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'native');
const skip = (why) => {
  console.warn(`native: module NOT built (${why}); downloads will stream through Node.`);
  process.exit(0);
};
if (process.platform !== 'linux') skip('sendfile support is Linux-only');

// Headers of this Node: npm passes its `nodedir` setting; otherwise the ones installed with Node
// (Debian's nodejs-dev, official tarballs). Without any, node-gyp would try to download them.
const prefix = path.resolve(path.dirname(process.execPath), '..');
const nodedir =
  process.env.npm_config_nodedir ||
  (existsSync(path.join(prefix, 'include/node/node_api.h')) ? prefix : null);
if (!nodedir) skip(`no Node headers under ${prefix}/include/node`);

// npm runs scripts with npm_config_node_gyp set to its own node-gyp; else npm's copy next to this
// Node, or Debian's.
const nodeGyp = [
  process.env.npm_config_node_gyp,
  path.join(prefix, 'lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js'),
  '/usr/share/nodejs/node-gyp/bin/node-gyp.js',
]
  .filter(Boolean)
  .find((p) => existsSync(p));
if (!nodeGyp) skip('node-gyp not found');

const result = spawnSync(process.execPath, [nodeGyp, 'rebuild', '--directory', dir, `--nodedir=${nodedir}`], {
  stdio: ['ignore', 'pipe', 'pipe'],
  encoding: 'utf8',
  timeout: 5 * 60 * 1000,
});
if (result.status !== 0) {
  const lines = `${result.stderr ?? ''}${result.stdout ?? ''}`.split('\n').filter((l) => /ERR|error/i.test(l));
  skip(`node-gyp failed: ${result.error?.message ?? lines.slice(0, 6).join(' | ')}`);
}
console.log('native: built native/build/Release/remessa_native.node (sendfile downloads, upload hashing, malloc tuning, accepting waiting connections)');
