// The command-line client: `remessa login/send/get/logout` run as the real binary
// against a real server, through a proxy that cuts the connection in either direction.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ROOT, remessa } from './helpers/cli.js';
import { CutProxy } from './helpers/cut-proxy.js';
import { eventually, MailSink } from './helpers/peers.js';
import { basic, closeAll, startTestServer, type TestServer } from './helpers/server.js';
import { writeBigFile } from './helpers/tus.js';

const MiB = 1024 * 1024;

/** POST /upload of a file's contents as alice (Basic), with the query `query`. */
async function uploadAsAlice(t: TestServer, query: string, file: string): Promise<Response> {
  return fetch(`${t.base}/upload?${query}`, {
    method: 'POST',
    headers: { Authorization: basic('alice', 'alice-password'), 'Content-Type': 'application/octet-stream' },
    body: await readFile(file),
  });
}

describe('remessa send / get', () => {
  let t: TestServer;
  let dir: string;
  let up: CutProxy;
  let down: CutProxy;
  let env: Record<string, string>;
  const port = () => Number(new URL(t.origin).port);

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'remessa-client-'));
    t = await startTestServer({ startWorkers: false });
    await t.createUser('alice', 'alice-password');
    up = await CutProxy.start({ target: { host: '127.0.0.1', port: port() }, everyBytes: 8 * MiB });
    down = await CutProxy.start({
      target: { host: '127.0.0.1', port: port() },
      everyBytes: 8 * MiB,
      direction: 'down',
    });
    env = { REMESSA_SERVER: `${up.origin}/v1`, XDG_CONFIG_HOME: path.join(dir, 'config') };
  });
  after(async () => {
    await up.close();
    await down.close();
    await t.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('login keeps a 0600 token; send and get round-trip a file with a cut in each direction', async () => {
    const login = await remessa({ ...env, REMESSA_USER: 'alice', REMESSA_PASSWORD: 'alice-password' }, [
      'login',
    ]);
    assert.equal(login.code, 0, login.stderr);
    const tokenFile = path.join(dir, 'config', 'remessa', 'tokens.json');
    assert.equal((await stat(tokenFile)).mode & 0o777, 0o600);
    assert.equal((await stat(path.join(dir, 'config', 'remessa'))).mode & 0o777, 0o700);

    const file = path.join(dir, 'report.bin');
    const digest = await writeBigFile(file, 20);
    const cutsBefore = up.cuts;
    const sent = await remessa(env, [
      'send',
      file,
      '--email',
      'erin@example.com',
      '--message',
      'olá',
      '--json',
    ]);
    assert.equal(sent.code, 0, sent.stderr);
    assert.ok(up.cuts > cutsBefore, 'the upload went through at least one cut');
    const [entry] = JSON.parse(sent.stdout) as Record<string, unknown>[];
    assert.equal(entry!['name'], 'report.bin');
    assert.equal(entry!['sha256'], digest);
    assert.equal(entry!['length'], 20 * MiB);

    const link = String(entry!['linkURL']).replace(t.origin, down.origin);
    const outDir = path.join(dir, 'out');
    await mkdir(outDir);
    const cutsDown = down.cuts;
    const got = await run(['get', link, '-o', path.join(outDir, 'copy.bin'), '--json']);
    assert.equal(got.code, 0, got.stderr);
    assert.ok(down.cuts > cutsDown, 'the download went through at least one cut');
    assert.match(got.stderr, /connection lost at \d+ bytes \(.*\); reconnecting… \(attempt 1 of 8, in 0 s\)/);
    assert.deepEqual(JSON.parse(got.stdout), {
      path: path.join(outDir, 'copy.bin'),
      length: 20 * MiB,
      sha256: digest,
    });
    assert.deepEqual(await readdir(outDir), ['copy.bin']);

    // Without -o the server's file name is used, in the current directory.
    const plain = await run(['get', link], outDir);
    assert.equal(plain.code, 0, plain.stderr);
    assert.equal(plain.stdout.trim(), path.join(outDir, 'report.bin'));

    const logout = await remessa(env, ['logout']);
    assert.equal(logout.code, 0, logout.stderr);
    const again = await remessa(env, ['send', file]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /not signed in/);
  });

  test('get keeps resuming for as long as each attempt brings bytes, however many cuts it takes', async () => {
    const file = path.join(dir, 'flaky.bin');
    const digest = await writeBigFile(file, 12);
    const sent = await uploadAsAlice(t, 'file=flaky.bin', file);
    assert.equal(sent.status, 200);
    const { files } = (await sent.json()) as { files: { linkURL: string }[] };
    // A network that drops every megabyte: a dozen cuts, twice what a fixed budget of attempts
    // allowed before.
    const flaky = await CutProxy.start({
      target: { host: '127.0.0.1', port: port() },
      everyBytes: MiB,
      direction: 'down',
    });
    try {
      const out = path.join(dir, 'flaky-copy.bin');
      const got = await remessa({}, [
        'get',
        files[0]!.linkURL.replace(t.origin, flaky.origin),
        '-o',
        out,
        '--json',
      ]);
      assert.equal(got.code, 0, got.stderr);
      assert.ok(flaky.cuts >= 10, `${flaky.cuts} cuts`);
      assert.deepEqual(JSON.parse(got.stdout), { path: out, length: 12 * MiB, sha256: digest });
    } finally {
      await flaky.close();
    }
  });

  test('send resumes an interrupted upload when run again with the same file', async () => {
    const creds = {
      ...env,
      REMESSA_SERVER: `${t.base}`,
      REMESSA_USER: 'alice',
      REMESSA_PASSWORD: 'alice-password',
    };
    const file = path.join(dir, 'resume.bin');
    const digest = await writeBigFile(file, 64);
    // Killed (as by Ctrl-C or a crash) once some of the file is on its way.
    const child = spawn(process.execPath, ['bin/remessa.js', 'send', file], {
      cwd: ROOT,
      env: { ...process.env, ...creds },
    });
    let err = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      err += d;
      if (/: [1-9]\d% \(/.test(err)) child.kill('SIGKILL');
    });
    await new Promise((r) => child.once('close', r));
    assert.match(err, /resume\.bin: \d+% \(/);
    const { db } = t.server.services;
    const row = await eventually(async () => {
      const r = await db
        .selectFrom('uploads')
        .selectAll()
        .where('filename', '=', 'resume.bin')
        .executeTakeFirst();
      return r && r.received > 0 && r.lock_owner === null ? r : undefined;
    });
    assert.ok(row.received < row.length);
    const second = await remessa(creds, ['send', file]);
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stderr, /resume\.bin: resuming an interrupted upload/);
    assert.doesNotMatch(second.stderr, /: 0% \(/);
    const [name, link] = second.stdout.trim().split('  ');
    assert.equal(name, 'resume.bin');
    const head = await fetch(link!, { method: 'HEAD' });
    assert.equal(head.headers.get('etag'), `"${digest}"`);
  });

  test('sending the same file again is a new upload, never a "resume" of the finished one', async () => {
    const creds = {
      ...env,
      REMESSA_SERVER: t.base,
      REMESSA_USER: 'alice',
      REMESSA_PASSWORD: 'alice-password',
    };
    const file = path.join(dir, 'twice.bin');
    await writeBigFile(file, 2);
    const ids = new Set<number>();
    // The record of a finished upload was dropped without waiting, and often outlived the command.
    for (let i = 0; i < 4; i++) {
      const sent = await remessa(creds, ['send', file, '--json']);
      assert.equal(sent.code, 0, sent.stderr);
      assert.doesNotMatch(sent.stderr, /resuming/);
      ids.add((JSON.parse(sent.stdout) as { id: number }[])[0]!.id);
    }
    assert.equal(ids.size, 4);
  });

  function run(args: string[], cwd = ROOT) {
    return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [path.join(ROOT, 'bin/remessa.js'), ...args], {
        cwd,
        env: { ...process.env, ...env },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        stdout += d;
      });
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        stderr += d;
      });
      child.once('error', reject);
      child.once('close', (code) => resolve({ code, stdout, stderr }));
    });
  }
});

describe('remessa get on a secure (PIN) link', () => {
  let t: TestServer;
  let mail: MailSink;
  let down: CutProxy;
  let dir: string;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'remessa-client-pin-'));
    mail = await MailSink.start();
    t = await startTestServer({ env: { REMESSA_SMTP_URL: mail.url } });
    await t.createUser('alice', 'alice-password');
    down = await CutProxy.start({
      target: { host: '127.0.0.1', port: Number(new URL(t.origin).port) },
      everyBytes: 6 * MiB,
      direction: 'down',
    });
  });
  after(async () => {
    await closeAll(down, t, mail);
    await rm(dir, { recursive: true, force: true });
  });

  test('--pin opens the recipient link; the download resumes after a cut and arrives whole', async () => {
    const file = path.join(dir, 'secret.bin');
    const digest = await writeBigFile(file, 10);
    const sent = await uploadAsAlice(t, 'file=secret.bin&m=erin@example.com', file);
    assert.equal(sent.status, 200);
    const letter = (await mail.take('erin@example.com')).text ?? '';
    const link = /(https?:\/\/\S+\/download\/file\?\S+)/.exec(letter)?.[1];
    assert.ok(link, `no link in: ${letter}`);
    const k = new URL(link).searchParams.get('k')!;
    const viaProxy = link.replace(t.origin, down.origin);
    const out = path.join(dir, 'copy.bin');

    // A wrong PIN is refused before anything is written.
    const wrongPin = await remessa({}, ['get', viaProxy, '-o', out, '--pin', '000000', '--json']);
    assert.notEqual(wrongPin.code, 0);
    assert.match(wrongPin.stderr, /download refused \(403\)/);
    assert.deepEqual(await readdir(dir), ['secret.bin']);

    assert.equal(
      (await fetch(`${t.base}/download/pin?k=${encodeURIComponent(k)}`, { method: 'POST' })).status,
      200,
    );
    const pin = /\b(\d{6})\b/.exec((await mail.take('erin@example.com')).text ?? '')?.[1];
    assert.ok(pin, 'a PIN by e-mail');
    const cuts = down.cuts;
    const got = await remessa({}, ['get', viaProxy, '-o', out, '--pin', pin, '--json']);
    assert.equal(got.code, 0, got.stderr);
    assert.ok(down.cuts > cuts, 'the download went through at least one cut');
    assert.match(got.stderr, /connection lost at \d+ bytes \(.*\); reconnecting… \(attempt 1 of 8, in 0 s\)/);
    assert.deepEqual(JSON.parse(got.stdout), { path: out, length: 10 * MiB, sha256: digest });
    assert.deepEqual((await readdir(dir)).sort(), ['copy.bin', 'secret.bin']);
  });
});
