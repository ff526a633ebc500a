// A client that goes away in the middle of its upload is a client that went away, not an outage:
// nothing is logged as the database or the file store being out of reach, locally or on S3.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, test } from 'node:test';
import { eventually } from './helpers/peers.js';
import { createTempDatabase, PG_SKIP, postgresAvailable } from './helpers/postgres.js';
import { createTestBucket, S3_SKIP, s3Available } from './helpers/s3.js';
import { basic, startTestServer, type TestServer } from './helpers/server.js';

const S3_UP = await s3Available();
const PG_UP = await postgresAvailable();

/** Sends the head of an upload and part of its body, then resets the connection. */
async function cutUpload(t: TestServer, kind: 'raw' | 'multipart' | 'tus'): Promise<void> {
  const url = new URL(t.base);
  const auth = basic('ana', 'ana-password');
  const body = Buffer.alloc(256 * 1024, 'x');
  const boundary = 'cut-boundary';
  const head =
    kind === 'raw'
      ? [`POST ${url.pathname}/upload?file=cut.bin HTTP/1.1`, 'Content-Type: application/octet-stream']
      : kind === 'multipart'
        ? [`POST ${url.pathname}/upload HTTP/1.1`, `Content-Type: multipart/form-data; boundary=${boundary}`]
        : [
            `POST ${url.pathname}/uploads HTTP/1.1`,
            'Tus-Resumable: 1.0.0',
            'Content-Type: application/offset+octet-stream',
            `Upload-Length: ${10 * body.length}`,
            `Upload-Metadata: filename ${Buffer.from('cut.bin').toString('base64')}`,
          ];
  const preamble =
    kind === 'multipart'
      ? `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="cut.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`
      : '';
  const socket = connect(Number(url.port), url.hostname);
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  socket.on('error', () => {});
  socket.write(
    [
      ...head,
      `Host: ${url.host}`,
      `Authorization: ${auth}`,
      `Content-Length: ${10 * body.length}`,
      '',
      '',
    ].join('\r\n') + preamble,
  );
  socket.write(body);
  await new Promise((r) => setTimeout(r, 200));
  socket.resetAndDestroy();
}

async function noOutageLogged(t: TestServer): Promise<void> {
  for (const kind of ['raw', 'multipart', 'tus'] as const) await cutUpload(t, kind);
  // The server has seen every cut once it holds no connection of ours.
  const connections = () =>
    new Promise<number>((resolve, reject) =>
      t.server.app.server.getConnections((err, n) => (err ? reject(err) : resolve(n))),
    );
  await eventually(async () => (await connections()) === 0);
  // And has finished with what each brought (its log lines are written by then).
  await eventually(
    async () => (await t.server.services.db.selectFrom('uploads').select('id').execute()).length <= 1,
  );
  const outage = t.logs.filter((l) => /unreachable|out of reach|request failed/.test(l));
  assert.deepEqual(outage, [], 'a client hanging up is not logged as an outage');
}

describe('a client that hangs up mid-upload', () => {
  test('local store: not logged as an outage', async (t) => {
    const s = await startTestServer();
    t.after(() => s.close());
    await s.createUser('ana', 'ana-password');
    await noOutageLogged(s);
  });

  test('PostgreSQL and S3: not logged as an outage', {
    skip: PG_UP && S3_UP ? false : PG_SKIP,
  }, async (t) => {
    const bucket = await createTestBucket('gone-pg/');
    const db = await createTempDatabase();
    const s = await startTestServer({ env: { ...bucket.env, REMESSA_DATABASE_URL: db.url } });
    t.after(async () => {
      await s.close();
      await bucket.drop();
      await db.drop();
    });
    await s.createUser('ana', 'ana-password');
    await noOutageLogged(s);
  });

  test('S3 store: not logged as an outage', { skip: S3_UP ? false : S3_SKIP }, async (t) => {
    const bucket = await createTestBucket('gone/');
    const s = await startTestServer({ env: bucket.env });
    t.after(async () => {
      await s.close();
      await bucket.drop();
    });
    await s.createUser('ana', 'ana-password');
    await noOutageLogged(s);
  });
});
