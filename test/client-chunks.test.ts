// `remessa send` in chunks: the server keeps a PATCH's bytes when its request ends, so a server
// killed with -9 mid-upload loses only the chunk in flight, and the client, reconnecting, goes on
// from the last whole chunk instead of byte 0.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { remessa } from './helpers/cli.js';
import { CutProxy } from './helpers/cut-proxy.js';
import { eventually } from './helpers/peers.js';
import { basic, type ChildServer, closeAll, startChildServer } from './helpers/server.js';
import { writeBigFile } from './helpers/tus.js';

const MiB = 1024 * 1024;
const CHUNK = MiB;

describe('remessa send across a kill -9 of the server', () => {
  let server: ChildServer;
  let up: CutProxy;
  let dir: string;
  let killed: Promise<void> | undefined;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'remessa-chunks-'));
    server = await startChildServer({ user: { name: 'alice', password: 'alice-password' } });
    await server.start();
    // Once two and a half chunks have gone through, the server is killed (before it can see the
    // connection drop) and the network stays down until the test lets the client back in.
    up = await CutProxy.start({
      target: { host: '127.0.0.1', port: Number(new URL(server.origin).port) },
      everyBytes: 2.5 * CHUNK,
      onCut: (p) => {
        killed = server.kill();
        p.down = true;
        p.everyBytes = 0;
      },
    });
  });
  after(async () => {
    await closeAll(up, server);
    await rm(dir, { recursive: true, force: true });
  });

  test('the upload goes on from the last whole chunk the server kept, and arrives whole', async () => {
    const file = path.join(dir, 'big.bin');
    const digest = await writeBigFile(file, 8);
    const config = path.join(dir, 'config');
    const sending = remessa(
      {
        REMESSA_SERVER: `${up.origin}/v1`,
        REMESSA_USER: 'alice',
        REMESSA_PASSWORD: 'alice-password',
        XDG_CONFIG_HOME: config,
        REMESSA_CLIENT_CHUNK_BYTES: String(CHUNK),
      },
      ['send', file, '--json'],
    );
    // (a client that ends first, having failed, says why)
    await Promise.race([
      eventually(async () => killed !== undefined, 60_000),
      sending.then((r) => assert.fail(`the client ended first: ${r.code} ${r.stderr}`)),
    ]);
    await killed;
    await server.start();
    // Where the restarted server stands, before the client may reach it again.
    const stored = JSON.parse(await readFile(path.join(config, 'remessa', 'uploads.json'), 'utf8')) as Record<
      string,
      { uploadUrl: string }
    >;
    const [upload] = Object.values(stored);
    assert.ok(upload, 'the client kept the upload URL');
    const head = await fetch(upload.uploadUrl.replace(up.origin, server.origin), {
      method: 'HEAD',
      headers: { 'Tus-Resumable': '1.0.0', Authorization: basic('alice', 'alice-password') },
    });
    assert.equal(head.status, 200);
    const offset = Number(head.headers.get('upload-offset'));
    assert.ok(offset >= 2 * CHUNK && offset < 8 * MiB, `the server kept ${offset} bytes`);

    up.down = false;
    const sent = await sending;
    assert.equal(sent.code, 0, sent.stderr);
    assert.match(
      sent.stderr,
      /big\.bin: connection lost \(.*\); reconnecting… \(attempt \d of 8, in \d+ s\)/,
    );
    assert.match(sent.stderr, /big\.bin: reconnected; going on from [2-7]\.\d MiB/);
    const [entry] = JSON.parse(sent.stdout) as { sha256: string; length: number }[];
    assert.equal(entry!.length, 8 * MiB);
    assert.equal(entry!.sha256, digest);
  });
});
