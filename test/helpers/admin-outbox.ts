// The admin outbox's checks, run on SQLite and PostgreSQL (test/admin-reports.test.ts): a failed
// SMS is listed, retried by one of two requests at once, and sent exactly once.
import assert from 'node:assert/strict';
import { adminGet, adminPost, assertRefused, envelopeKeys } from './admin-fixtures.js';
import { bytes, uploadFile } from './files.js';
import type { HttpPeer } from './peers.js';
import type { TestServer } from './server.js';

interface Message {
  id: number;
  status: string;
  [key: string]: unknown;
}

/**
 * `t` runs without workers, sends SMS to `sms` and gives a message up after one attempt; `sender`
 * is a plain account's credentials, `admin` and `auditor` those of the roles.
 */
export async function checkOutboxRetry(
  t: TestServer,
  sms: HttpPeer,
  who: { sender: string; admin: string; adminName: string; auditor: string },
): Promise<void> {
  const { notify, db } = t.server.services;
  sms.status = 500;
  const file = await uploadFile(t, who.sender, 'for-phone.txt', bytes(10), { c: '+5511999990000' });
  await notify.deliverDue();
  const sent = sms.requests.length;
  const list = await adminGet(t, '/outbox?status=failed&channel=sms', who.auditor);
  assert.equal(list.status, 200);
  assert.deepEqual(Object.keys(list.body), envelopeKeys('messages', 'next'));
  const [failed] = list.body['messages'] as Message[];
  const row = await db
    .selectFrom('outbox')
    .selectAll()
    .where('id', '=', failed!.id)
    .executeTakeFirstOrThrow();
  assert.deepEqual(failed, {
    id: row.id,
    channel: 'sms',
    recipient: '+5511999990000',
    kind: 'file-link',
    status: 'failed',
    attempts: 1,
    created: new Date(row.created_at).toISOString(),
    lastAttempt: new Date(row.last_attempt_at!).toISOString(),
    nextAttempt: null,
    sent: null,
    lastError: 'SMS webhook answered HTTP 500',
    fileId: file.id,
    user: row.user_name,
  });
  assert.ok(!JSON.stringify(list.body).includes('/download/file'), 'never the text (it holds the link)');

  // An auditor reads, never changes.
  assertRefused(await adminPost(t, `/outbox/${row.id}/retry`, who.auditor), 403);
  assertRefused(await adminPost(t, '/outbox/999999/retry', who.admin), 404);
  assertRefused(await adminPost(t, '/outbox/abc/retry', who.admin), 400);
  assert.equal(
    (await db.selectFrom('outbox').select('status').where('id', '=', row.id).executeTakeFirst())?.status,
    'failed',
  );

  // Two retries at once: one wins, the other finds it pending.
  sms.status = 201;
  const answers = await Promise.all([1, 2].map(() => adminPost(t, `/outbox/${row.id}/retry`, who.admin)));
  assert.deepEqual(answers.map((a) => a.status).sort(), [200, 409]);
  const won = answers.find((a) => a.status === 200)!;
  assert.deepEqual(Object.keys(won.body), envelopeKeys('message'));
  const message = won.body['message'] as Message;
  assert.equal(message.status, 'pending');
  assert.equal(typeof message['nextAttempt'], 'string');
  assertRefused(answers.find((a) => a.status === 409)!, 409, /pending: only a failed one/);

  // Sent once, however many passes run.
  await Promise.all([notify.deliverDue(), notify.deliverDue()]);
  await notify.deliverDue();
  assert.equal(sms.requests.length, sent + 1);
  assert.equal((JSON.parse(sms.requests.at(-1)!.body) as { to: string }).to, '+5511999990000');
  const after = await adminGet(t, `/outbox?channel=sms&limit=1`, who.admin);
  assert.equal((after.body['messages'] as Message[])[0]!.status, 'sent');
  assertRefused(await adminPost(t, `/outbox/${row.id}/retry`, who.admin), 409, /sent/);

  const audited = await db.selectFrom('audit').selectAll().where('event', '=', 'notify.retried').execute();
  assert.equal(audited.length, 1);
  assert.equal(audited[0]!.user_name, row.user_name);
  assert.equal(audited[0]!.file_id, file.id);
  assert.equal(audited[0]!.actor, who.adminName, 'the acting admin');
  assert.deepEqual(JSON.parse(audited[0]!.detail!), {
    outbox: row.id,
    channel: 'sms',
    kind: 'file-link',
    to: '+5511999990000',
  });
}
