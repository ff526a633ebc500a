// A burst of connections waiting in the kernel's queue is accepted in one event-loop turn, not one
// per turn (libuv's pace, which left a thousand clients' last few hundred waiting for seconds while
// every turn served the busy ones). The clients connect from a worker thread while the server's
// thread is blocked, so they are all in the queue when its loop next polls.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { acceptWaitingConnections } from '../src/platform/http/accept-backlog.js';
import type { NativeModule } from '../src/platform/native/native.js';
import { NATIVE_SKIP } from './helpers/native.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const CLIENTS = 40;

/** Connects `count` clients, each sending one request; signals once all are connected. */
const CLIENT_SCRIPT = `
const { workerData, parentPort } = require('node:worker_threads');
const net = require('node:net');
const { port, count, flag } = workerData;
const connected = new Int32Array(flag);
const answers = new Array(count);
let closed = 0;
for (let i = 0; i < count; i++) {
  let text = '';
  const socket = net.connect(port, '127.0.0.1', () => {
    socket.write('GET /v1/healthz HTTP/1.1\\r\\nHost: test\\r\\nConnection: close\\r\\n\\r\\n');
    if (Atomics.add(connected, 0, 1) + 1 === count) Atomics.notify(connected, 0);
  });
  socket.setEncoding('latin1');
  socket.on('data', (d) => { text += d; });
  socket.on('error', (err) => { text = 'error ' + err.code; });
  socket.on('close', () => {
    answers[i] = text.split('\\r\\n')[0];
    if (++closed === count) parentPort.postMessage(answers);
  });
}
`;

describe('a burst of new connections', { skip: NATIVE_SKIP }, () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server?.close());

  test('is accepted in one turn of the event loop, and each connection is served', async () => {
    const http = server.server.app.server;
    let accepted = 0;
    let inFirstTurn = -1;
    const sockets: Socket[] = [];
    const count = (socket: Socket) => {
      sockets.push(socket);
      if (accepted++ === 0) setImmediate(() => (inFirstTurn = accepted));
    };
    http.on('connection', count);
    try {
      const flag = new Int32Array(new SharedArrayBuffer(4));
      const worker = new Worker(CLIENT_SCRIPT, {
        eval: true,
        workerData: { port: Number(new URL(server.origin).port), count: CLIENTS, flag: flag.buffer },
      });
      const answers = new Promise<string[]>((resolve, reject) => {
        worker.once('message', resolve);
        worker.once('error', reject);
      });
      // This thread stops until every client is connected (in the kernel's accept queue).
      for (let seen = 0; seen < CLIENTS; seen = Atomics.load(flag, 0)) {
        assert.notEqual(Atomics.wait(flag, 0, seen, 20_000), 'timed-out', 'the clients did not connect');
      }
      assert.deepEqual(await answers, new Array(CLIENTS).fill('HTTP/1.1 200 OK'));
      await worker.terminate();
      assert.equal(accepted, CLIENTS);
      assert.equal(inFirstTurn, CLIENTS, `${inFirstTurn} of ${CLIENTS} accepted in the first turn`);
      // Sockets made from the extra descriptors are the server's as Node's own are.
      assert.ok(sockets.every((s) => s.remoteAddress === '127.0.0.1' && s.destroyed));
    } finally {
      http.off('connection', count);
    }
  });
});

describe('a native module without a working acceptPending', () => {
  for (const [what, native] of [
    ['built by an older version (no acceptPending)', {}],
    [
      'whose acceptPending throws',
      {
        acceptPending: () => {
          throw new Error('boom');
        },
      },
    ],
  ] as const) {
    test(`${what}: connections are served at libuv's pace, the process lives`, async () => {
      const server = createServer((_req, res) => res.end('ok'));
      acceptWaitingConnections(server, native as unknown as NativeModule);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const { port } = server.address() as { port: number };
        const answers = await Promise.all(
          Array.from({ length: 5 }, () =>
            fetch(`http://127.0.0.1:${port}/`, { headers: { connection: 'close' } }).then((r) => r.text()),
          ),
        );
        assert.deepEqual(answers, ['ok', 'ok', 'ok', 'ok', 'ok']);
      } finally {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    });
  }
});
