// Taking back what was sent (docs/links.md): the owner deletes a file now, revokes one recipient's
// link, changes a link's expiry and download limit; each stopped link answers as an expired one,
// and only the owner's link may ask. The same from the command line.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadConfig } from '../src/app/config.js';
import { admin, auditRows, bearer } from './helpers/admin.js';
import { run } from './helpers/cli.js';
import { footprint } from './helpers/files.js';
import {
  changeLink,
  deleteFile,
  downloadStatus,
  recipientToken,
  revokeLink,
  sendTo,
} from './helpers/links.js';
import { call, serverFor, type TestServer } from './helpers/server.js';

const EXPIRED = 'invalid or expired download link';
const ANA = 'ana@example.com';
const BOB = 'bob@example.com';

async function setup(ctx: Parameters<typeof serverFor>[0], env: Record<string, string> = {}) {
  const t = await serverFor(ctx, { env: { REMESSA_RECIPIENT_PIN: 'false', ...env } });
  await t.createUser('alice', 'alice-password-1');
  const sent = await sendTo(t, [ANA, BOB]);
  return { t, sent, ana: await recipientToken(t, sent.id, ANA), bob: await recipientToken(t, sent.id, BOB) };
}

async function refusedAsExpired(t: TestServer, token: string) {
  const r = await call(`${t.base}/download/file?k=${encodeURIComponent(token)}`);
  assert.equal(r.status, 401);
  assert.equal(r.body['detail'], EXPIRED);
}

describe('link control', () => {
  test("revoking one recipient's link: it answers as expired, the others keep working", async (ctx) => {
    const { t, sent, ana, bob } = await setup(ctx);
    assert.equal(await downloadStatus(t, ana), 200);
    const r = await revokeLink(t, sent.k, ANA);
    assert.equal(r.status, 200);
    const recipients = r.body['recipients'] as { address: string; revoked: boolean }[];
    assert.deepEqual(
      recipients.map((x) => [x.address, x.revoked]),
      [
        ['a***@example.com', true],
        ['b***@example.com', false],
      ],
    );
    await refusedAsExpired(t, ana);
    assert.equal(await downloadStatus(t, bob), 200);
    assert.equal(await downloadStatus(t, sent.k), 200);
    assert.equal((await auditRows(t, 'link.revoked')).length, 1);
    // Only the owner's link may ask; a name that is not a recipient is a 404; none is a 400.
    assert.equal((await revokeLink(t, bob, ANA)).status, 403);
    assert.equal((await revokeLink(t, sent.k, 'eve@example.com')).status, 404);
    assert.equal((await call(`${t.base}/download/revoke?k=${sent.k}`, { method: 'POST' })).status, 400);
    assert.equal((await revokeLink(t, 'not-a-token', BOB)).status, 401);
    assert.equal(await downloadStatus(t, bob), 200);
  });

  test('a download limit of one: one complete download, then expired; a cut one does not count', async (ctx) => {
    const { t, sent, ana, bob } = await setup(ctx);
    const r = await changeLink(t, sent.k, { maxDownloads: 1 }, BOB);
    assert.equal(r.status, 200);
    assert.deepEqual(
      (r.body['recipients'] as { maxDownloads: number | null }[]).map((x) => x.maxDownloads),
      [null, 1],
    );
    assert.equal(await downloadStatus(t, bob, { Range: 'bytes=0-99' }), 206);
    assert.equal(await downloadStatus(t, bob), 200);
    await refusedAsExpired(t, bob);
    assert.equal(await downloadStatus(t, ana), 200);
    assert.equal(await downloadStatus(t, ana), 200);
    // Without `to`: every recipient link; the owner's link is never limited.
    const all = await changeLink(t, sent.k, { maxDownloads: 2 });
    assert.equal(all.status, 200);
    assert.deepEqual(
      (all.body['recipients'] as { maxDownloads: number; completeDownloads: number }[]).map((x) => [
        x.maxDownloads,
        x.completeDownloads,
      ]),
      [
        [2, 2],
        [2, 1],
      ],
    );
    await refusedAsExpired(t, ana);
    assert.equal(await downloadStatus(t, bob), 200, 'two allowed now, one used');
    await refusedAsExpired(t, bob);
    for (let i = 0; i < 3; i++) assert.equal(await downloadStatus(t, sent.k), 200);
    assert.equal((await changeLink(t, sent.k, { maxDownloads: null }, BOB)).status, 200);
    assert.equal(await downloadStatus(t, bob), 200);
  });

  test('REMESSA_LINK_MAX_DOWNLOADS: every new recipient link starts with that limit', async (ctx) => {
    const { t, sent, ana } = await setup(ctx, { REMESSA_LINK_MAX_DOWNLOADS: '1' });
    const status = await call(`${t.base}/download/status?k=${sent.k}`);
    assert.deepEqual(
      (status.body['recipients'] as { maxDownloads: number }[]).map((r) => r.maxDownloads),
      [1, 1],
    );
    assert.equal(await downloadStatus(t, ana), 200);
    await refusedAsExpired(t, ana);
    for (let i = 0; i < 2; i++)
      assert.equal(await downloadStatus(t, sent.k), 200, "the owner's link has no limit");
    assert.throws(
      () => loadConfig({ REMESSA_LINK_MAX_DOWNLOADS: '0' }),
      /REMESSA_LINK_MAX_DOWNLOADS must be between 1/,
    );
  });

  test("a link's own expiry, and the file's", async (ctx) => {
    const { t, sent, ana, bob } = await setup(ctx);
    const inAnHour = new Date(t.clock.now() + 3_600_000).toISOString();
    assert.equal((await changeLink(t, sent.k, { expires: inAnHour }, ANA)).status, 200);
    t.clock.advance(2 * 3_600_000);
    await refusedAsExpired(t, ana);
    assert.equal(await downloadStatus(t, bob), 200);
    const soon = new Date(t.clock.now() + 60_000).toISOString();
    assert.equal((await changeLink(t, sent.k, { expires: soon })).status, 200);
    const file = await t.server.services.db
      .selectFrom('files')
      .select('expires_at')
      .executeTakeFirstOrThrow();
    assert.equal(Number(file.expires_at), Date.parse(soon));
    for (const bad of [
      { expires: '2001-01-01' },
      { expires: 'tomorrow' },
      {},
      { maxDownloads: 0 },
      { maxDownloads: 1.5 },
      { expires: null },
    ])
      assert.equal((await changeLink(t, sent.k, bad)).status, 400, JSON.stringify(bad));
    assert.equal((await changeLink(t, sent.k, { maxDownloads: 1 }, 'eve@example.com')).status, 404);
    assert.equal((await auditRows(t, 'link.changed')).length, 2);
  });

  test('deleting a file: contents and every link gone at once, audited', async (ctx) => {
    const { t, sent, ana, bob } = await setup(ctx);
    assert.equal((await deleteFile(t, ana)).status, 403, "a recipient's link cannot delete");
    const before = await footprint(t);
    const r = await deleteFile(t, sent.k);
    assert.equal(r.status, 200);
    assert.deepEqual([r.body['user'], r.body['name'], r.body['deleted']], ['alice', 'report.pdf', true]);
    for (const token of [sent.k, ana, bob]) await refusedAsExpired(t, token);
    assert.equal((await deleteFile(t, sent.k)).status, 401);
    const after = await footprint(t);
    assert.deepEqual([after.files, after.blobs], [before.files - 1, before.blobs - 1]);
    const [row] = await auditRows(t, 'file.deleted');
    assert.equal(row!.user_name, 'alice');
    assert.match(row!.detail!, /"name":"report.pdf"/);
    assert.equal(await t.server.services.db.selectFrom('links').select('id').executeTakeFirst(), undefined);
  });

  test('an admin deletes any file now: every link gone, audited with the admin as actor', async (ctx) => {
    const { t, sent, ana, bob } = await setup(ctx);
    await t.createUser('root', 'root-password-1', { role: 'admin' });
    await t.createUser('aud', 'aud-password-1', { role: 'auditor' });
    const root = await bearer(t, 'root', 'root-password-1');
    const aud = await bearer(t, 'aud', 'aud-password-1');
    const refused = await admin(t, aud, 'DELETE', `/files/${sent.id}`);
    assert.deepEqual([refused.status, refused.body['detail']], [403, 'an admin role is required']);
    assert.equal(await downloadStatus(t, ana), 200);
    const r = await admin(t, root, 'DELETE', `/files/${sent.id}`);
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('cache-control'), 'no-store');
    assert.deepEqual(
      [r.body['user'], r.body['file']],
      ['root', { id: sent.id, name: 'report.pdf', owner: 'alice', deleted: true }],
    );
    for (const token of [sent.k, ana, bob]) await refusedAsExpired(t, token);
    const [row] = await auditRows(t, 'file.deleted');
    assert.deepEqual([row!.user_name, row!.actor, row!.file_id], ['alice', 'root', sent.id]);
    assert.match(row!.detail!, /"via":"admin"/);
    const again = await admin(t, root, 'DELETE', `/files/${sent.id}`);
    assert.deepEqual([again.status, again.body['detail']], [404, 'no such file']);
    assert.equal((await admin(t, root, 'DELETE', '/files/999999')).status, 404);
    assert.equal((await admin(t, root, 'DELETE', '/files/nope')).status, 400);
    assert.equal((await admin(t, null, 'DELETE', `/files/${sent.id}`)).status, 401);
  });

  test('from the command line: file delete, link revoke, link set', async (ctx) => {
    const { t, sent, ana, bob } = await setup(ctx);
    const remessa = (args: string[]) => run(process.execPath, ['bin/remessa.js', ...args], { env: t.env });
    const ok = async (args: string[]) => {
      const r = await remessa(args);
      assert.equal(r.code, 0, r.stderr);
      return r.stdout;
    };
    assert.match(
      await ok(['link', 'revoke', sent.linkURL, '--to', ANA]),
      /^revoked the link of recipient \d+\n$/,
    );
    await refusedAsExpired(t, ana);
    assert.equal(
      await ok(['link', 'set', sent.k, '--to', BOB, '--max-downloads', '1']),
      `changed the link of ${BOB} of report.pdf\n`,
    );
    assert.equal(await downloadStatus(t, bob), 200);
    await refusedAsExpired(t, bob);
    const bad = await remessa(['link', 'set', sent.k, '--max-downloads', 'lots']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /--max-downloads: a whole number or "none"/);
    assert.equal(await ok(['file', 'delete', sent.linkURL]), 'deleted report.pdf\n');
    await refusedAsExpired(t, sent.k);
    const again = await remessa(['file', 'delete', sent.linkURL]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /invalid or expired download link/);
  });
});
