// Webhooks with two instances on one PostgreSQL database: events made on either
// instance, both delivering at once: each event id reaches the receiver exactly once, and the
// events of each file in the order they happened.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { verifySignature } from '../src/features/webhooks/signature.js';
import { eventually, HttpPeer } from './helpers/peers.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';
import { basic, call, closeAll, startTestServer, type TestServer } from './helpers/server.js';

const available = await postgresAvailable();
if (!available && PG_REQUIRED) throw new Error(PG_SKIP);

const SECRET = 'global-webhook-secret-0123456789';

interface Event {
  id: string;
  type: string;
  data: { file?: { id: number } };
}

describe('webhooks on PostgreSQL, two instances', { skip: available ? false : PG_SKIP }, () => {
  let database: Awaited<ReturnType<typeof createTempDatabase>>;
  let receiver: HttpPeer;
  let a: TestServer;
  let b: TestServer;

  before(async () => {
    database = await createTempDatabase();
    receiver = await HttpPeer.start();
    const env = {
      REMESSA_DATABASE_URL: database.url,
      REMESSA_WEBHOOK_URL: `${receiver.url}/global`,
      REMESSA_WEBHOOK_SECRET: SECRET,
      REMESSA_WEBHOOK_ALLOW_PRIVATE: 'true',
    };
    a = await startTestServer({ env, startWorkers: false });
    b = await startTestServer({ env, startWorkers: false });
    await a.createUser('alice', 'alice-password');
  });
  after(async () => {
    await closeAll(a, b, receiver, () => database?.drop());
  });

  test('events from both instances, delivered by both at once: each once, in order per file', async () => {
    const auth = basic('alice', 'alice-password');
    const sub = await call(`${b.base}/webhooks`, {
      method: 'POST',
      headers: { Authorization: auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ url: `${receiver.url}/alice`, events: ['file.uploaded', 'file.downloaded'] }),
    });
    assert.equal(sub.status, 200);
    const aliceSecret = String((sub.body['webhook'] as { secret: string }).secret);

    const files: { id: number; k: string }[] = [];
    for (let i = 0; i < 12; i++) {
      const on = i % 2 === 0 ? a : b;
      const fd = new FormData();
      fd.append('file', new Blob([new Uint8Array(Buffer.alloc(100 + i, i))]), `f${i}.bin`);
      const r = await call(`${on.base}/upload`, {
        method: 'POST',
        headers: { Authorization: auth },
        body: fd,
      });
      assert.equal(r.status, 200);
      const entry = (r.body['files'] as { id: number; linkURL: string }[])[0]!;
      files.push({ id: entry.id, k: new URL(entry.linkURL).searchParams.get('k')! });
    }
    // Each file downloaded twice (from the instance that holds its contents: local storage) while
    // both instances deliver.
    const deliverBoth = () =>
      Promise.all([
        a.server.services.notify.deliverDue(),
        b.server.services.notify.deliverDue(),
        a.server.services.notify.deliverDue(),
      ]);
    await Promise.all([
      deliverBoth(),
      ...files.map(async (f, i) => {
        const on = i % 2 === 0 ? a : b;
        for (let n = 0; n < 2; n++) {
          const res = await fetch(`${on.base}/download/file?k=${f.k}`);
          assert.equal(res.status, 200);
          await res.arrayBuffer();
        }
      }),
    ]);
    // A download's audit row (and its event) is written as its response ends: poll briefly.
    await eventually(async () => {
      await deliverBoth();
      return receiver.requests.length >= files.length * 3 * 2;
    });

    const now = Math.floor(a.clock.now() / 1000);
    const byPath = (path: string, secret: string) =>
      receiver.requests
        .filter((r) => r.url === path)
        .map((r) => {
          assert.ok(verifySignature(secret, String(r.headers['remessa-signature']), r.body, now));
          return JSON.parse(r.body) as Event;
        });
    for (const [path, secret] of [
      ['/global', SECRET],
      ['/alice', aliceSecret],
    ] as const) {
      const events = byPath(path, secret);
      assert.equal(events.length, files.length * 3, path);
      assert.equal(new Set(events.map((e) => e.id)).size, events.length, `${path}: an event id twice`);
      for (const f of files) {
        assert.deepEqual(
          events.filter((e) => e.data.file?.id === f.id).map((e) => e.type),
          ['file.uploaded', 'file.downloaded', 'file.downloaded'],
          `${path}: file ${f.id} in order`,
        );
      }
    }
    const left = await a.server.services.notify.list({ status: 'pending' });
    assert.deepEqual(left, []);
  });
});
