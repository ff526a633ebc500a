// Quota warnings (docs/quotas.md): crossing 80 % and 95 % of a quota sends the account one e-mail
// and one `quota.warning` webhook event per crossing, not one per upload; falling back below a
// threshold and crossing it again warns again.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { bytes, uploadFile } from './helpers/files.js';
import { deleteFile } from './helpers/links.js';
import { HttpPeer, MailSink } from './helpers/peers.js';
import { ownerToken } from './helpers/quotas.js';
import { basic, closeWith, serverFor } from './helpers/server.js';

const ALICE = basic('alice', 'alice-password-1');
const SECRET = 'quota-webhook-secret-0123456789';

describe('quota warnings', () => {
  test('one e-mail and one event per threshold crossed, again after falling below', async (ctx) => {
    const mail = closeWith(ctx, await MailSink.start());
    const hook = closeWith(ctx, await HttpPeer.start());
    const t = await serverFor(ctx, {
      startWorkers: false,
      env: {
        REMESSA_QUOTA_DEFAULT: '10000',
        REMESSA_SMTP_URL: mail.url,
        REMESSA_WEBHOOK_URL: `${hook.url}/hooks`,
        REMESSA_WEBHOOK_SECRET: SECRET,
        REMESSA_WEBHOOK_ALLOW_PRIVATE: 'true',
      },
    });
    await t.createUser('alice', 'alice-password-1', { email: 'alice@example.com', lang: 'en' });
    const warnings = async () => {
      await t.server.services.notify.deliverDue();
      const events = hook.requests
        .map((r) => JSON.parse(r.body) as { type: string; data: Record<string, unknown> })
        .filter((e) => e.type === 'quota.warning');
      const mails = mail.messages.filter((m) => /storage is/.test(m.subject ?? ''));
      return { events: events.map((e) => e.data), subjects: mails.map((m) => m.subject) };
    };

    const big = await uploadFile(t, ALICE, 'big.bin', bytes(8000));
    let w = await warnings();
    assert.deepEqual(w.events, [{ user: 'alice', percent: 80, usage: 8000, quota: 10000 }]);
    assert.deepEqual(w.subjects, ['Remessa: your storage is 80% full']);
    assert.match(mail.messages.at(-1)!.text ?? '', /7\.8 KiB of your 9\.8 KiB \(80%\)/);

    await uploadFile(t, ALICE, 'more.bin', bytes(500));
    w = await warnings();
    assert.equal(w.events.length, 1, 'still above 80 %: nothing new');
    assert.equal(w.subjects.length, 1);

    const top = await uploadFile(t, ALICE, 'top.bin', bytes(1000));
    w = await warnings();
    assert.deepEqual(
      w.events.map((e) => [e['percent'], e['usage']]),
      [
        [80, 8000],
        [95, 9500],
      ],
    );
    assert.deepEqual(w.subjects.at(-1), 'Remessa: your storage is 95% full');

    // Below both thresholds, then past 80 % again: warned again (and only for 80 %).
    assert.equal((await deleteFile(t, ownerToken(big))).status, 200);
    assert.equal((await deleteFile(t, ownerToken(top))).status, 200);
    w = await warnings();
    assert.equal(w.events.length, 2, 'a deletion warns of nothing');
    await uploadFile(t, ALICE, 'again.bin', bytes(7600));
    w = await warnings();
    assert.deepEqual(
      w.events.map((e) => e['percent']),
      [80, 95, 80],
    );
    assert.equal(w.subjects.length, 3);
    assert.equal((await t.server.services.audit.query({ event: 'quota.warning' })).length, 3);
  });

  test('one upload past both thresholds warns once, of 95 %; no quota, no warning', async (ctx) => {
    const mail = closeWith(ctx, await MailSink.start());
    const t = await serverFor(ctx, {
      startWorkers: false,
      env: { REMESSA_SMTP_URL: mail.url },
    });
    await t.createUser('alice', 'alice-password-1', { email: 'alice@example.com', lang: 'pt' });
    await t.createUser('bob', 'bob-password-1', { email: 'bob@example.com' });
    await t.server.services.users.update('alice', { quota: '10000' });
    await uploadFile(t, ALICE, 'all.bin', bytes(9900));
    await uploadFile(t, basic('bob', 'bob-password-1'), 'b.bin', bytes(9900));
    await t.server.services.notify.deliverDue();
    const subjects = mail.messages.map((m) => m.subject);
    assert.deepEqual(subjects, ['Remessa: seu espaço está 95% ocupado']);
    const rows = await t.server.services.audit.query({ event: 'quota.warning' });
    assert.deepEqual(
      rows.map((r) => [r.user_name, JSON.parse(r.detail ?? '{}')]),
      [['alice', { percent: 95, usage: 9900, quota: 10000 }]],
    );
  });
});
