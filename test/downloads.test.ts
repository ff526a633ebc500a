// Downloads on both send paths: sendfile(2) through the native module (the default where it is
// built) and streaming through Node (REMESSA_SENDFILE=off, or no module). Each must deliver exact
// bytes for files of any size and for ranges, keep the connection usable, survive a reader that
// stalls (the socket fills and the sender must wait), and stop cleanly when the client goes away.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { mkdtemp, open, rm } from 'node:fs/promises';
import { Agent, get, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { nativeModule } from '../src/platform/native/native.js';
import { bytes, type FileEntry, uploadFile, uploadRaw } from './helpers/files.js';
import { NATIVE_SKIP } from './helpers/native.js';
import { eventually } from './helpers/peers.js';
import { basic, startTestServer, type TestServer } from './helpers/server.js';

const MiB = 1024 * 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const openFds = () => readdirSync('/proc/self/fd').length;

function fetchRaw(
  url: string,
  headers: Record<string, string> = {},
  agent?: Agent,
): Promise<{ res: IncomingMessage; body: Buffer }> {
  return new Promise((resolve, reject) => {
    get(url, { headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ res, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

for (const mode of ['sendfile', 'streamed'] as const) {
  describe(`downloads (${mode})`, {
    skip: mode === 'sendfile' ? NATIVE_SKIP : false,
  }, () => {
    let t: TestServer;
    const auth = basic('dl', 'dl-password');
    const data = bytes(24 * MiB + 123);
    let link = '';
    let fileId = 0;

    before(async () => {
      t = await startTestServer({
        env: { REMESSA_SENDFILE: mode === 'sendfile' ? 'auto' : 'off', REMESSA_STALL_SECONDS: '2' },
      });
      await t.createUser('dl', 'dl-password');
      const entry = await uploadFile(t, auth, 'big.bin', data);
      link = entry.linkURL;
      fileId = entry.id;
    });
    after(() => t.close());

    /** Audit rows of full downloads of the big file that did not complete, oldest first. */
    const incompleteDownloads = async () =>
      (await t.server.services.audit.query({})).filter(
        (e) =>
          e.event === 'download' &&
          e.file_id === fileId &&
          /"complete":false/.test(e.detail ?? '') &&
          !/"range"/.test(e.detail ?? ''),
      );

    test('the start-up log says how downloads are sent', () => {
      const line = t.logs.find((l) => l.includes('Remessa is serving'))!;
      assert.equal(JSON.parse(line).downloads.split(' ')[0], mode);
    });

    test('files of every size around page and chunk edges come back byte for byte', async () => {
      const KiB = 1024;
      for (const size of [0, 1, 4095, 4096, 4097, 4 * MiB - 1, 4 * MiB, 4 * MiB + 1, 12 * MiB + 4097]) {
        const payload = bytes(size);
        const up = await uploadRaw(t, auth, payload, { file: `edge-${size}.bin` });
        assert.equal(up.status, 200, `upload of ${size} bytes`);
        const entry = (up.body['files'] as FileEntry[])[0]!;
        assert.equal(entry.length, size);
        const got = await fetchRaw(entry.linkURL);
        assert.equal(got.body.length, size);
        assert.equal(
          sha(got.body),
          sha(payload),
          `contents of ${size} bytes (${(size / KiB).toFixed(1)} KiB)`,
        );
      }
    });

    test('whole file and ranges are byte-identical, with the right headers', async () => {
      const whole = await fetchRaw(link);
      assert.equal(whole.res.statusCode, 200);
      assert.equal(whole.res.headers['content-length'], String(data.length));
      assert.equal(whole.res.headers['x-content-type-options'], 'nosniff');
      assert.equal(sha(whole.body), sha(data));
      for (const [range, start, end] of [
        ['bytes=0-0', 0, 0],
        ['bytes=1000000-17000000', 1_000_000, 17_000_000],
        ['bytes=-5', data.length - 5, data.length - 1],
      ] as const) {
        const part = await fetchRaw(link, { Range: range });
        assert.equal(part.res.statusCode, 206);
        assert.equal(part.res.headers['content-range'], `bytes ${start}-${end}/${data.length}`);
        assert.ok(part.body.equals(data.subarray(start, end + 1)), range);
      }
    });

    test('one keep-alive connection carries several downloads in a row', async () => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const sockets = new Set<unknown>();
      try {
        for (const range of ['bytes=0-99', 'bytes=100-', 'bytes=5-9']) {
          const r = await fetchRaw(link, { Range: range }, agent);
          sockets.add(r.res.socket);
          const [a, b] = range.slice(6).split('-');
          assert.ok(r.body.equals(data.subarray(Number(a), b ? Number(b) + 1 : undefined)));
        }
        assert.equal(sockets.size, 1, 'the same connection served all three');
      } finally {
        agent.destroy();
      }
    });

    test('a reader that stalls gets every byte once it reads again; parallel downloads stay intact', async () => {
      const stalled = new Promise<Buffer>((resolve, reject) => {
        get(link, (res) => {
          res.pause();
          setTimeout(() => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => resolve(Buffer.concat(chunks)));
            res.resume();
          }, 700);
        }).on('error', reject);
      });
      const parallel = await Promise.all(
        [0, 1, 2].map((i) => fetchRaw(link, { Range: `bytes=${i * 8 * MiB}-` })),
      );
      parallel.forEach((r, i) => {
        assert.ok(r.body.equals(data.subarray(i * 8 * MiB)));
      });
      assert.equal(sha(await stalled), sha(data));
    });

    test('pipelined requests on one connection are answered in order, bodies intact', async () => {
      const url = new URL(link);
      const target = `${url.pathname}${url.search}`;
      const raw = await new Promise<Buffer>((resolve, reject) => {
        const sock = connect(Number(url.port), url.hostname);
        const chunks: Buffer[] = [];
        sock.on('data', (c: Buffer) => chunks.push(c));
        sock.on('end', () => resolve(Buffer.concat(chunks)));
        sock.on('error', reject);
        const req = (range: string, last = false) =>
          `GET ${target} HTTP/1.1\r\nHost: x\r\nRange: bytes=${range}\r\n${last ? 'Connection: close\r\n' : ''}\r\n`;
        sock.write(req('0-2097151') + req('5-9') + req('2097152-4194303', true));
      });
      let rest = raw;
      const bodies: Buffer[] = [];
      while (rest.length > 0) {
        const end = rest.indexOf('\r\n\r\n');
        const head = rest.subarray(0, end).toString('latin1');
        assert.match(head, /^HTTP\/1\.1 206 /);
        const len = Number(/content-length: (\d+)/i.exec(head)?.[1]);
        bodies.push(rest.subarray(end + 4, end + 4 + len));
        rest = rest.subarray(end + 4 + len);
      }
      assert.equal(bodies.length, 3);
      assert.ok(bodies[0]!.equals(data.subarray(0, 2 * MiB)));
      assert.ok(bodies[1]!.equals(data.subarray(5, 10)));
      assert.ok(bodies[2]!.equals(data.subarray(2 * MiB, 4 * MiB)));
    });

    test('a client that stops reading but stays connected is cut off after REMESSA_STALL_SECONDS', async () => {
      const fdsBefore = openFds();
      const auditedBefore = (await incompleteDownloads()).length;
      let received = 0;
      const res = await new Promise<IncomingMessage>((resolve, reject) => {
        // A connection of its own (no keep-alive pool), so nothing else ever reads from it.
        get(link, { agent: false }, (r) => {
          r.pause(); // takes nothing more: the server's socket fills up and progress stops
          resolve(r);
        }).on('error', reject);
      });
      // The server gives up on its own: the download is audited as incomplete, its file closed.
      await eventually(async () => (await incompleteDownloads()).length > auditedBefore, 20_000).catch(
        (err: Error) => {
          throw new Error(`${err.message}; server log tail:\n${t.logs.slice(-8).join('\n')}`);
        },
      );
      assert.ok(t.logs.some((l) => l.includes('download stalled')));
      await eventually(async () => openFds() <= fdsBefore);
      // Reading again now yields what was in flight, then the reset: never the whole file.
      const ended = await new Promise<string>((resolve) => {
        res.on('data', (c: Buffer) => {
          received += c.length;
        });
        res.on('end', () => resolve('end'));
        res.on('error', () => resolve('error'));
        res.on('aborted', () => resolve('aborted'));
        res.resume();
      });
      assert.notEqual(ended, 'end');
      assert.ok(received < data.length, `got ${received} of ${data.length}`);
    });

    test('a client that goes away mid-download: partial audit row, no descriptor left open', async () => {
      const before = openFds();
      const auditedBefore = (await incompleteDownloads()).length;
      await new Promise<void>((resolve, reject) => {
        const req = get(link, (res) => {
          res.pause();
          res.once('readable', () => {
            req.destroy();
            resolve();
          });
        });
        req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
      });
      // This abort's own row: the stall test before it left one of its own.
      const row = await eventually(async () => {
        const rows = await incompleteDownloads();
        return rows.length > auditedBefore ? rows.at(-1) : undefined;
      });
      const sent = Number(/"bytes":(\d+)/.exec(row.detail ?? '')?.[1]);
      assert.ok(sent < data.length, `partial: ${sent} of ${data.length}`);
      await eventually(async () => openFds() <= before);
      // The server is still fine afterwards.
      assert.equal(sha((await fetchRaw(link)).body), sha(data));
    });
  });
}

describe('the native module', { skip: NATIVE_SKIP }, () => {
  test('a transfer that cannot start throws a clear error instead of crashing', () => {
    const native = nativeModule()!;
    assert.throws(
      () => native.start(999_999, 0, 0, 10, () => {}),
      /sendfile could not start: Bad file descriptor/,
    );
    assert.throws(() => native.start(0, 0, 0, 0, () => {}), TypeError);
    assert.equal(typeof native.mallocTrimThreshold(1024 * 1024), 'boolean');
    assert.throws(() => native.startWriteback(999_999, 0, 0, () => {}), /bad descriptor/);
  });

  test('early writeback of an upload reports back from the thread pool', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'remessa-wb-'));
    const fh = await open(path.join(dir, 'f'), 'w');
    try {
      await fh.write(bytes(3 * MiB));
      const errno = await new Promise<number>((resolve) =>
        nativeModule()!.startWriteback(fh.fd, 0, 0, resolve),
      );
      assert.equal(errno, 0);
    } finally {
      await fh.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
