// Taking back what was sent with two instances on one PostgreSQL database: a file deleted on one
// instance is refused through every link on the other at once; a link revoked on one is refused on
// the other; a limit of one download spent on one instance leaves nothing for the other.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { admin, bearer } from './helpers/admin.js';
import {
  changeLink,
  deleteFile,
  downloadStatus,
  recipientToken,
  revokeLink,
  sendTo,
} from './helpers/links.js';
import { eventually } from './helpers/peers.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';
import { call, closeAll, startTestServer, type TestServer } from './helpers/server.js';

const available = await postgresAvailable();
if (!available && PG_REQUIRED) throw new Error(PG_SKIP);

const EXPIRED = 'invalid or expired download link';
const ANA = 'ana@example.com';
const BOB = 'bob@example.com';

describe('link control on PostgreSQL, two instances', { skip: available ? false : PG_SKIP }, () => {
  let database: Awaited<ReturnType<typeof createTempDatabase>>;
  let a: TestServer;
  let b: TestServer;

  before(async () => {
    database = await createTempDatabase();
    const env = { REMESSA_DATABASE_URL: database.url, REMESSA_RECIPIENT_PIN: 'false' };
    a = await startTestServer({ env });
    b = await startTestServer({ env });
    await a.createUser('alice', 'alice-password-1');
    await a.createUser('root', 'root-password-1', { role: 'admin' });
  });
  after(async () => {
    await closeAll(a, b, () => database?.drop());
  });

  /** A file alice sent to ana and bob through instance a, with the three tokens. */
  const sent = async () => {
    const file = await sendTo(a, [ANA, BOB]);
    return { file, ana: await recipientToken(a, file.id, ANA), bob: await recipientToken(a, file.id, BOB) };
  };

  /** The complete downloads counted on `email`'s link, as the database has them. */
  const linkDownloads = async (t: TestServer, fileId: number, email: string) => {
    const row = await t.server.services.db
      .selectFrom('links')
      .select('downloads')
      .where('file_id', '=', fileId)
      .where('recipient_email', '=', email)
      .executeTakeFirstOrThrow();
    return Number(row.downloads);
  };

  const refusedAsExpired = async (t: TestServer, token: string) => {
    const r = await call(`${t.base}/download/file?k=${encodeURIComponent(token)}`);
    assert.deepEqual([r.status, r.body['detail']], [401, EXPIRED]);
  };

  test('deleted on one instance: every link refused on the other at once', async () => {
    const { file, ana, bob } = await sent();
    for (const token of [file.k, ana, bob]) assert.equal(await downloadStatus(b, token), 200);
    assert.equal((await deleteFile(a, file.k)).status, 200);
    for (const token of [file.k, ana, bob]) await refusedAsExpired(b, token);
  });

  test('deleted by an admin on one instance: refused on the other', async () => {
    const { file, ana } = await sent();
    assert.equal(await downloadStatus(a, ana), 200);
    const r = await admin(b, await bearer(b, 'root', 'root-password-1'), 'DELETE', `/files/${file.id}`);
    assert.equal(r.status, 200);
    await refusedAsExpired(a, ana);
    await refusedAsExpired(a, file.k);
  });

  test('revoked on one instance: refused on the other, the other recipient served', async () => {
    const { file, ana, bob } = await sent();
    assert.equal((await revokeLink(b, file.k, ANA)).status, 200);
    await refusedAsExpired(a, ana);
    assert.equal(await downloadStatus(a, bob), 200);
    assert.equal(await downloadStatus(b, bob), 200);
  });

  test('a limit of one: a complete download on one instance, the second on the other refused', async () => {
    const { file, bob } = await sent();
    assert.equal((await changeLink(a, file.k, { maxDownloads: 1 }, BOB)).status, 200);
    assert.equal(await downloadStatus(a, bob), 200);
    // A download is counted just after its response ends (FileService.downloadFinished).
    await eventually(async () => (await linkDownloads(b, file.id, BOB)) === 1);
    await refusedAsExpired(b, bob);
    await refusedAsExpired(a, bob);
    assert.equal(await downloadStatus(b, file.k), 200, "the owner's link is never limited");
  });
});
