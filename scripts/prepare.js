#!/usr/bin/env node
// npm's `prepare` hook: builds dist/ after `npm ci` / `npm install`.
// npm also runs it when the first `npx remessa` on a machine links this project into npx's cache
// to find its bin (npm_command=exec). A rebuild there would clear dist/ under a running server or
// test run for several seconds, so it is skipped when dist/ is already built.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
if (process.env.npm_command === 'exec' && existsSync(path.join(root, 'dist/src/app/cli/main.js'))) process.exit(0);

const npm = process.env.npm_execpath;
const result = npm
  ? spawnSync(process.execPath, [npm, 'run', 'build'], { cwd: root, stdio: 'inherit' })
  : spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' });
process.exit(result.status ?? 1);
