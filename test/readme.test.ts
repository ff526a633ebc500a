// Every shell example of the README runs, in order, as one bash script against a real
// `remessa serve` on a fresh data directory: a new user follows the README literally,
// so every command must work. Only the addresses change (free ports instead of 8080/8090);
// `remessa` runs this checkout's bin (as `npm link` installs it), the scratch directory is a
// temporary one, and curl fails on an HTTP error, so an example that
// answers 4xx/5xx fails the test. A block can opt out only with a visible
// `<!-- readme-test: skip (reason) -->` line above it.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { cleanEnv, ROOT, type Run } from './helpers/cli.js';
import { eventually } from './helpers/peers.js';
import { freePort } from './helpers/server.js';

/** What the examples write, none of which may land in the checkout. */
const EXAMPLE_OUTPUTS = [
  'report.pdf',
  'received',
  'ana.pdf',
  'part.pdf',
  'from-backup.pdf',
  'mailbox',
  'mailbox.log',
];
const inCheckout = () => EXAMPLE_OUTPUTS.filter((name) => existsSync(path.join(ROOT, name)));

interface Block {
  line: number;
  code: string;
  skip: string | null;
}

function shellBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  const re = /(?:<!-- readme-test: skip \(([^)]*)\) -->\n)?```sh\n([\s\S]*?)```/g;
  for (let m = re.exec(markdown); m; m = re.exec(markdown)) {
    blocks.push({ line: markdown.slice(0, m.index).split('\n').length, code: m[2]!, skip: m[1] ?? null });
  }
  return blocks;
}

/**
 * bash in its own process group, so a server an example starts in the background goes with it
 * when the script fails or hangs (killed after three minutes).
 */
function runScript(script: string, cwd: string, env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', script], {
      cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    const killGroup = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(() => {
      stderr += '\n(killed after 180 s)';
      killGroup();
    }, 180_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      killGroup();
      resolve({ code, stdout, stderr });
    });
  });
}

describe('README shell examples', () => {
  let dir: string;
  let server: ChildProcess | null = null;
  let port: number;
  let mailboxPort: number;
  let env: Record<string, string>;
  let blocks: Block[];

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'remessa-readme-'));
    port = await freePort();
    mailboxPort = await freePort();
    blocks = shellBlocks(await readFile(path.join(ROOT, 'README.md'), 'utf8'));
    // `remessa …` as `npm link` installs it: the checkout's bin, run by node itself (so $! is the
    // server's pid and the mailbox example's kill stops it).
    const bin = path.join(dir, 'bin');
    await mkdir(bin);
    await writeFile(
      path.join(bin, 'remessa'),
      `#!/bin/sh\nexec "${process.execPath}" "${ROOT}/bin/remessa.js" "$@"\n`,
    );
    await chmod(path.join(bin, 'remessa'), 0o755);
    env = {
      PATH: `${bin}:${path.dirname(process.execPath)}:${process.env['PATH'] ?? ''}`,
      HOME: dir,
      REMESSA_DATA_DIR: path.join(dir, 'data'),
      REMESSA_PORT: String(port),
      REMESSA_HOST: '127.0.0.1',
      REMESSA_BASE_URL: `http://localhost:${port}/v1`,
      REMESSA_LOG_LEVEL: 'warn',
    };
    // The scratch directory the skipped serve block makes (HOME is the test's directory).
    await mkdir(path.join(dir, 'remessa-try'));
    server = spawn(process.execPath, [path.join(ROOT, 'bin/remessa.js'), 'serve'], {
      env: { ...process.env, ...env },
      stdio: 'ignore',
    });
    await eventually(
      async () => (await fetch(`http://127.0.0.1:${port}/v1/readyz`).catch(() => null))?.status === 200,
      60_000,
    );
  });

  after(async () => {
    if (server && server.exitCode === null) {
      const exited = new Promise((r) => server!.once('exit', r));
      server.kill('SIGTERM');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  });

  test('only the install and the serve blocks are left out, and they say why', () => {
    assert.deepEqual(
      blocks.filter((b) => b.skip !== null).map((b) => b.skip),
      [
        'installs, and would run the test suite inside itself',
        'serves until stopped; the test starts its own server',
      ],
    );
    assert.ok(blocks.length >= 20, `${blocks.length} blocks`);
  });

  test('every other block runs as written, in order', async () => {
    const script = [
      'set -euo pipefail',
      // An HTTP error is a failed example (examples that pass -f themselves keep it).
      'curl() { case " $* " in *" -f"*) command curl "$@" ;; *) command curl --fail-with-body "$@" ;; esac; }',
      ...blocks
        .filter((b) => b.skip === null)
        .flatMap((b) => [`echo "### README.md line ${b.line}" >&2`, b.code]),
    ]
      .join('\n')
      .replaceAll('localhost:8080', `localhost:${port}`)
      .replaceAll('localhost:8090', `localhost:${mailboxPort}`)
      .replaceAll('REMESSA_PORT=8090', `REMESSA_PORT=${mailboxPort}`);
    // Started in the checkout, as a reader might: the examples' own `cd` takes them elsewhere.
    const checkoutBefore = inCheckout();
    const r = await runScript(script, ROOT, { ...(cleanEnv() as Record<string, string>), ...env });
    const at = r.stderr.lastIndexOf('### README.md');
    assert.equal(r.code, 0, `failed at ${r.stderr.slice(at, at + 3000)}\nstdout: ${r.stdout.slice(-1500)}`);
    assert.deepEqual(inCheckout(), checkoutBefore, 'the examples leave nothing in the checkout');
    // The mailbox server was stopped by its own example.
    const mailbox = await fetch(`http://127.0.0.1:${mailboxPort}/v1/healthz`).catch(() => null);
    assert.equal(mailbox, null, 'the mailbox example stops the server it started');
    const work = path.join(dir, 'remessa-try');

    // What the examples say they do, they did.
    const sent = await readFile(path.join(work, 'report.pdf'));
    assert.equal(sent.length, 52341);
    assert.deepEqual(await readFile(path.join(work, 'received/report.pdf')), sent);
    assert.deepEqual(await readFile(path.join(work, 'received/head.bin')), sent.subarray(0, 1024));
    assert.deepEqual(await readFile(path.join(work, 'ana.pdf')), sent);
    assert.deepEqual(await readFile(path.join(work, 'part.pdf')), sent);
    assert.deepEqual(await readFile(path.join(work, 'from-backup.pdf')), sent);
    assert.match(
      r.stdout,
      /"description":"handlerAuthForget:succsessfully","apiver":"v1 \([\d.]+\)","time":"[^"]+","user":"USER1","linkURL"/,
    );
    // The password the last example set works.
    const token = await fetch(`http://127.0.0.1:${port}/v1/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=password&username=USER1&password=new-long-password',
    });
    assert.equal(token.status, 200);
  });
});
