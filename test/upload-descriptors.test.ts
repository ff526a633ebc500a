// Uploads under a descriptor limit (the usual 1,024): each upload being received holds about three,
// so hundreds of slow ones used them all up and every upload, anyone's, failed with a 500. Now an
// account and an address may send only so many at once (429), an upload starts only if its
// descriptors fit (503), and a lack of descriptors anywhere in the upload path is a 503.
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { describe, test } from 'node:test';
import { eventually } from './helpers/peers.js';
import { httpHead, type RawAnswer, rawConnect, rawRequest, readAnswer } from './helpers/raw.js';
import { basic, startChildServer } from './helpers/server.js';

const SIZE = 200 * 1024; // past the inline limit: written to a file of its own
const FLOOD = { name: 'flood', password: 'flood-password' };
const OTHER = { name: 'other', password: 'other-password' };

/** 400 uploads from 127.0.0.1 and 127.0.0.2, each sending a few bytes a second; answers each. */
async function trickle(origin: string, host: string) {
  const head = (i: number) =>
    httpHead('POST', `/v1/upload?file=t${i}.bin`, host, [
      `Authorization: ${basic(FLOOD.name, FLOOD.password)}`,
      'Content-Type: application/octet-stream',
      `Content-Length: ${SIZE}`,
    ]);
  const flows: { socket: Socket; sent: number; answered: boolean; done: Promise<RawAnswer> }[] = [];
  for (let i = 0; i < 400; i++) {
    const socket = await rawConnect(origin, i % 2 === 0 ? '127.0.0.1' : '127.0.0.2');
    socket.on('error', () => {});
    const flow = {
      socket,
      sent: 1000,
      /** the first bytes of an answer came (a refusal closes the connection only later) */
      answered: false,
      done: readAnswer(socket, 180_000),
    };
    socket.once('data', () => {
      flow.answered = true;
    });
    socket.write(head(i) + 'a'.repeat(1000));
    flows.push(flow);
  }
  // A byte a second each: well inside the body timeout.
  const drip = setInterval(() => {
    for (const f of flows)
      if (!f.answered && f.socket.writable && f.sent < SIZE - 1) {
        f.socket.write('a');
        f.sent++;
      }
  }, 1000);
  return {
    flows,
    stop: () => clearInterval(drip),
    /** Sends the rest of every body still being received; answers every status. */
    async finish(): Promise<(number | null)[]> {
      clearInterval(drip);
      for (const f of flows) if (!f.answered && f.socket.writable) f.socket.write('a'.repeat(SIZE - f.sent));
      return (await Promise.all(flows.map((f) => f.done))).map((a) => a.status);
    },
  };
}

/** The account's uploads at once in the first test (the default, 64, also fits in 1,024). */
const PER_USER = 16;

describe('uploads under a limit of 1,024 descriptors', () => {
  test('400 trickling uploads from two addresses: 200, 429 or 503, never a 500; another user still uploads', async () => {
    const child = await startChildServer({
      user: FLOOD,
      moreUsers: [OTHER],
      maxFiles: 1024,
      env: { REMESSA_MAX_UPLOADS_PER_USER: String(PER_USER) },
    });
    const { origin } = child;
    const host = new URL(origin).host;
    let flood: Awaited<ReturnType<typeof trickle>> | undefined;
    try {
      await child.start();
      flood = await trickle(origin, host);
      const { flows } = flood;
      // All but the account's few allowed at once are refused before their bodies are read.
      await eventually(async () => flows.filter((f) => f.answered).length >= 400 - PER_USER, 60_000);
      const other = await rawRequest(
        origin,
        httpHead('POST', '/v1/upload?file=other.bin', host, [
          `Authorization: ${basic(OTHER.name, OTHER.password)}`,
          'Content-Type: application/octet-stream',
          `Content-Length: ${SIZE}`,
        ]),
        Buffer.alloc(SIZE, 0x62),
        { localAddress: '127.0.0.3', waitMs: 60_000 },
      );
      assert.equal(other.status, 200, other.body);
      const statuses = await flood.finish();
      const tally = new Map<number | null, number>();
      for (const s of statuses) tally.set(s, (tally.get(s) ?? 0) + 1);
      console.log(`# statuses: ${JSON.stringify([...tally])}`);
      for (const s of statuses) assert.ok(s === 200 || s === 429 || s === 503, `status ${s}`);
      assert.ok((tally.get(200) ?? 0) > 0, 'some of the flood was stored');
    } finally {
      flood?.stop();
      for (const f of flood?.flows ?? []) f.socket.destroy();
      await child.close();
    }
  });

  test('with no per-account or per-address limit: uploads past what the descriptors allow get 503, never a 500', async () => {
    const child = await startChildServer({
      user: FLOOD,
      maxFiles: 1024,
      env: { REMESSA_MAX_UPLOADS_PER_USER: '0', REMESSA_MAX_UPLOADS_PER_ADDRESS: '0' },
    });
    const { origin } = child;
    let flood: Awaited<ReturnType<typeof trickle>> | undefined;
    try {
      await child.start();
      flood = await trickle(origin, new URL(origin).host);
      const { flows } = flood;
      // Past the budget, uploads are refused before their bodies are read.
      await eventually(async () => flows.filter((f) => f.answered).length > 0, 60_000);
      const statuses = await flood.finish();
      const tally = new Map<number | null, number>();
      for (const s of statuses) tally.set(s, (tally.get(s) ?? 0) + 1);
      console.log(`# statuses: ${JSON.stringify([...tally])}`);
      for (const s of statuses) assert.ok(s === 200 || s === 503, `status ${s}`);
      assert.ok((tally.get(200) ?? 0) > 0, 'some of the flood was stored');
    } finally {
      flood?.stop();
      for (const f of flood?.flows ?? []) f.socket.destroy();
      await child.close();
    }
  });
});
