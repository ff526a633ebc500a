// A tus PATCH whose connection goes silent on one instance (a cut on the way left it half-open:
// no FIN, no RST, the body just stops) no longer holds the upload for the body timeout: the
// silent writer stops renewing its lease, so tus-js-client, resuming through another instance with
// its default retry schedule, takes the upload over and finishes it byte-identical.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { describe, test } from 'node:test';
import * as tus from 'tus-js-client';
import { eventually } from './helpers/peers.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';
import { basic, call, closeAll, startTestServer } from './helpers/server.js';

const available = await postgresAvailable();
if (!available && PG_REQUIRED) test('PostgreSQL is required here', () => assert.fail(PG_SKIP));

describe('a PATCH gone silent on one instance', { skip: available ? false : PG_SKIP }, () => {
  test('tus-js-client resumes it through another instance within its default retries', async (t) => {
    const db = await createTempDatabase();
    const env = { REMESSA_DATABASE_URL: db.url };
    const a = await startTestServer({ env });
    const b = await startTestServer({ env: { ...env, REMESSA_BASE_URL: a.base } });
    let silent: Socket | undefined;
    t.after(() =>
      closeAll(
        async () => silent?.destroy(),
        a,
        b,
        () => db.drop(),
      ),
    );
    await a.createUser('mover', 'mover-password');
    const auth = basic('mover', 'mover-password');
    const data = randomBytes(4 * 1024 * 1024);
    const created = await call(`${a.base}/uploads`, {
      method: 'POST',
      headers: {
        Authorization: auth,
        'Tus-Resumable': '1.0.0',
        'Upload-Length': String(data.length),
        'Upload-Metadata': `filename ${Buffer.from('moved.bin').toString('base64')}`,
      },
    });
    assert.equal(created.status, 201);
    const path = new URL(created.headers.get('location')!, a.origin).pathname;
    // Half the body reaches instance A, then nothing more: the connection stays open.
    const socket = connect(Number(new URL(a.origin).port), '127.0.0.1');
    silent = socket;
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.write(
      [
        `PATCH ${path} HTTP/1.1`,
        `Host: ${new URL(a.origin).host}`,
        `Authorization: ${auth}`,
        'Tus-Resumable: 1.0.0',
        'Upload-Offset: 0',
        'Content-Type: application/offset+octet-stream',
        `Content-Length: ${data.length}`,
        '',
        '',
      ].join('\r\n'),
    );
    socket.write(data.subarray(0, data.length / 2));
    const holder = async () =>
      (await a.server.services.db.selectFrom('uploads').select('lock_owner').executeTakeFirst())?.lock_owner;
    await eventually(async () => Boolean(await holder()), 20_000);

    // The client comes back through instance B at once, as after any cut.
    const seen: number[] = [];
    await new Promise<void>((resolve, reject) => {
      const upload = new tus.Upload(Buffer.from(data), {
        uploadUrl: `${b.origin}${path}`,
        headers: { Authorization: auth },
        retryDelays: [0, 1000, 3000, 5000],
        onAfterResponse: (_req, res) => {
          seen.push(res.getStatus());
        },
        onError: reject,
        onSuccess: () => resolve(),
      });
      upload.start();
    });
    const [file] = await b.server.services.db.selectFrom('files').select(['sha256', 'length']).execute();
    assert.equal(file?.length, data.length);
    assert.equal(file?.sha256, createHash('sha256').update(data).digest('hex'), `answers: ${seen.join(',')}`);
  });
});
