// The command-line client as a person at a terminal sees it: `remessa send` across a network
// outage and run again after an interruption, `remessa get` across cuts and a load balancer's 503,
// each under a pseudo-terminal, with every line left on the screen checked whole (no bar glued to
// a message, the 100 % bar on its own line, the prompt's line free). Also the mode of saved files
// and a missing file to send.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ROOT, remessa, run } from './helpers/cli.js';
import { CutProxy } from './helpers/cut-proxy.js';
import { eventually } from './helpers/peers.js';
import { remessaOnTerminal, type Screen, screen } from './helpers/pty.js';
import { basic, startTestServer, type TestServer } from './helpers/server.js';
import { writeBigFile } from './helpers/tus.js';

const MiB = 1024 * 1024;
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** The bar at 100 % with what this run moved: `moved` is 'sent' or 'received'. */
const doneBar = (name: string, mib: number, moved: string) =>
  new RegExp(
    `^${esc(name)} \\[█{30}\\] 100% ${mib}\\.0/${mib}\\.0 MiB, (\\d+\\.\\d) MiB ${moved} in \\d+\\.\\d s \\(\\d+\\.\\d MiB/s\\)$`,
  );
const retryLine = (name: string, why: string, wait = '\\d+ s') =>
  new RegExp(`^${esc(name)}: ${why}; reconnecting… \\(attempt [1-8] of 8, in ${wait}\\)$`);

/** Every line is one of `allowed`; the last two are the 100 % bar and the result; the prompt's line is free. */
function assertScreen(s: Screen, allowed: RegExp[], bar: RegExp, result: RegExp): void {
  const shown = s.lines.join('\n');
  for (const line of s.lines)
    assert.ok(
      allowed.some((re) => re.test(line)),
      `a garbled line: ${JSON.stringify(line)}\non this screen:\n${shown}`,
    );
  assert.match(s.lines.at(-2) ?? '', bar, shown);
  assert.match(s.lines.at(-1) ?? '', result, shown);
  assert.deepEqual({ row: s.row, column: s.column }, { row: s.lines.length, column: 0 }, shown);
}

describe('remessa send and get on a terminal', () => {
  let t: TestServer;
  let dir: string;
  let creds: Record<string, string>;
  const port = () => Number(new URL(t.origin).port);

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'remessa-screen-'));
    t = await startTestServer({ startWorkers: false });
    await t.createUser('alice', 'alice-password');
    creds = {
      REMESSA_SERVER: t.base,
      REMESSA_USER: 'alice',
      REMESSA_PASSWORD: 'alice-password',
      XDG_CONFIG_HOME: path.join(dir, 'config'),
      REMESSA_CLIENT_CHUNK_BYTES: String(4 * MiB),
    };
  });
  after(async () => {
    await t.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** Uploads `file` as alice under `name`; the download links of the answer. */
  const uploadAs = async (file: string, name: string) => {
    const posted = await fetch(`${t.base}/upload?file=${name}`, {
      method: 'POST',
      headers: {
        Authorization: basic('alice', 'alice-password'),
        'Content-Type': 'application/octet-stream',
      },
      body: await readFile(file),
    });
    return ((await posted.json()) as { files: { linkURL: string }[] }).files;
  };

  test('send across an outage says "reconnecting…" on lines of their own and ends on the 100 % bar', async () => {
    const file = path.join(dir, 'report.bin');
    const digest = await writeBigFile(file, 24);
    // The network goes at 10 MiB and stays gone until two reconnections have been refused.
    const up = await CutProxy.start({
      target: { host: '127.0.0.1', port: port() },
      everyBytes: 10 * MiB,
      onCut: (p) => {
        p.down = true;
        p.everyBytes = 0;
      },
    });
    try {
      const client = remessaOnTerminal({ ...creds, REMESSA_SERVER: `${up.origin}/v1` }, ['send', file]);
      await eventually(async () => up.refused >= 2, 30_000);
      up.down = false;
      const { code, raw } = await client.exited;
      assert.equal(code, 0, raw);
      const s = screen(raw);
      const retries = s.lines.filter((l) => retryLine('report.bin', 'connection lost \\([^)]*\\)').test(l));
      assert.ok(retries.length >= 2, s.lines.join('\n'));
      assert.match(retries[1]!, /attempt 2 of 8, in 1 s/);
      const bar = doneBar('report.bin', 24, 'sent');
      const result = /^report\.bin {2}(http:\/\/\S+)$/;
      assertScreen(
        s,
        [
          retryLine('report.bin', 'connection lost \\([^)]*\\)'),
          /^report\.bin: reconnected; going on from \d+\.\d MiB$/,
          bar,
          result,
        ],
        bar,
        result,
      );
      const link = result.exec(s.lines.at(-1)!)![1]!;
      assert.equal((await fetch(link, { method: 'HEAD' })).headers.get('etag'), `"${digest}"`);
    } finally {
      await up.close();
    }
  });

  test('send run again resumes on a clean first line and counts only the bytes it sent', async () => {
    const file = path.join(dir, 'again.bin');
    await writeBigFile(file, 48);
    // The first run dies (as by a crash) once some of the file is on the server.
    const first = spawn(process.execPath, ['bin/remessa.js', 'send', file], {
      cwd: ROOT,
      env: { ...process.env, ...creds },
    });
    let err = '';
    first.stderr.setEncoding('utf8').on('data', (d: string) => {
      err += d;
      if (/: [1-9]\d% \(/.test(err)) first.kill('SIGKILL');
    });
    await new Promise((r) => first.once('close', r));
    const { db } = t.server.services;
    await eventually(async () => {
      const r = await db
        .selectFrom('uploads')
        .selectAll()
        .where('filename', '=', 'again.bin')
        .executeTakeFirst();
      return r && r.received > 0 && r.lock_owner === null;
    });
    const { code, raw } = await remessaOnTerminal(creds, ['send', file]).exited;
    assert.equal(code, 0, raw);
    const s = screen(raw);
    const resumed = /^again\.bin: resuming an interrupted upload at (\d+\.\d) of 48\.0 MiB$/;
    const bar = doneBar('again.bin', 48, 'sent');
    const result = /^again\.bin {2}http:\/\/\S+$/;
    assert.match(s.lines[0]!, resumed, s.lines.join('\n'));
    assertScreen(s, [resumed, bar, result], bar, result);
    const already = Number(resumed.exec(s.lines[0]!)![1]);
    const sent = Number(bar.exec(s.lines.at(-2)!)![1]);
    assert.ok(already >= 1, `${already} MiB were on the server`);
    assert.ok(Math.abs(already + sent - 48) <= 0.11, `${already} MiB resumed + ${sent} MiB sent`);
  });

  test('get resumes after cuts and waits out a 503 with Retry-After, the screen whole', async () => {
    const file = path.join(dir, 'source.bin');
    const digest = await writeBigFile(file, 12);
    const files = await uploadAs(file, 'source.bin');
    // Cut every 4 MiB; after the first cut the load balancer has no backend for two requests.
    const down = await CutProxy.start({
      target: { host: '127.0.0.1', port: port() },
      everyBytes: 4 * MiB,
      direction: 'down',
      onCut: (p) => {
        if (p.cuts > 1) return;
        p.unavailable = 2;
        p.retryAfter = 2;
      },
    });
    try {
      const out = path.join(dir, 'copy.bin');
      const link = files[0]!.linkURL.replace(t.origin, down.origin);
      const { code, raw } = await remessaOnTerminal({}, ['get', link, '-o', out]).exited;
      assert.equal(code, 0, raw);
      assert.ok(down.cuts >= 2 && down.answered503 === 2, `${down.cuts} cuts, ${down.answered503} 503s`);
      const s = screen(raw);
      const lost = retryLine('copy.bin', 'connection lost at \\d+ bytes \\([^)]*\\)');
      const busy = retryLine('copy.bin', 'server unavailable \\(503\\)', '2 s as the server asked');
      assert.equal(s.lines.filter((l) => busy.test(l)).length, 2, s.lines.join('\n'));
      const bar = doneBar('copy.bin', 12, 'received');
      const result = new RegExp(`^${esc(out)}$`);
      assertScreen(s, [lost, busy, bar, result], bar, result);
      assert.equal((await stat(out)).size, 12 * MiB);
      const got = await remessa({}, ['get', files[0]!.linkURL, '-o', path.join(dir, 'check.bin'), '--json']);
      assert.equal((JSON.parse(got.stdout) as { sha256: string }).sha256, digest);
    } finally {
      await down.close();
    }
  });

  test('get saves the file with the mode the umask leaves, as curl does', async () => {
    const file = path.join(dir, 'shared.bin');
    await writeBigFile(file, 1);
    const files = await uploadAs(file, 'shared.bin');
    for (const [umask, mode] of [
      ['027', 0o640],
      ['022', 0o644],
    ] as const) {
      const out = path.join(dir, `shared-${umask}.bin`);
      const got = await run(
        'sh',
        [
          '-c',
          `umask ${umask} && exec "$0" "$@"`,
          process.execPath,
          'bin/remessa.js',
          'get',
          files[0]!.linkURL,
          '-o',
          out,
        ],
        { env: {} },
      );
      assert.equal(got.code, 0, got.stderr);
      assert.equal(((await stat(out)).mode & 0o777).toString(8), mode.toString(8), `umask ${umask}`);
    }
  });

  test('send of a missing file says so in one line, exits non-zero, and sends nothing', async () => {
    const present = path.join(dir, 'present.bin');
    await writeBigFile(present, 1);
    const missing = path.join(dir, 'missing.bin');
    const sent = await remessa(creds, ['send', present, missing]);
    assert.equal(sent.code, 1);
    assert.equal(sent.stderr, `remessa: cannot read ${missing}: no such file\n`);
    assert.equal(sent.stdout, '');
    const { db } = t.server.services;
    const row = await db
      .selectFrom('uploads')
      .select('id')
      .where('filename', '=', 'present.bin')
      .executeTakeFirst();
    assert.equal(row, undefined, 'the file before it was not sent either');
  });
});
