// Upload requests' webhook events, as a receiver gets them: `request.file_received` for each file
// that arrives (the uploader's address masked) and `request.completed` when a request fills up or
// is closed, signed and in their documented shape.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { verifySignature } from '../src/features/webhooks/signature.js';
import { HttpPeer, MailSink } from './helpers/peers.js';
import { makeRequest, requestUpload, tokenOf } from './helpers/requests.js';
import { basic, call, closeAll, startTestServer, type TestServer } from './helpers/server.js';

const SECRET = 'request-webhook-secret-0123456789';
const ANA = basic('ana', 'ana-password-1');

interface Event {
  id: string;
  type: string;
  data: Record<string, unknown>;
}

describe('upload requests: webhook events', { timeout: 120_000 }, () => {
  let t: TestServer;
  let mail: MailSink;
  let hook: HttpPeer;

  before(async () => {
    mail = await MailSink.start();
    hook = await HttpPeer.start();
    t = await startTestServer({
      env: {
        REMESSA_SMTP_URL: mail.url,
        REMESSA_WEBHOOK_URL: `${hook.url}/hooks`,
        REMESSA_WEBHOOK_SECRET: SECRET,
        REMESSA_WEBHOOK_ALLOW_PRIVATE: 'true',
      },
      startWorkers: false,
    });
    await t.createUser('ana', 'ana-password-1', { email: 'ana@example.com', lang: 'en' });
  });
  after(() => closeAll(t, mail, hook));

  /** Every event delivered so far, each signature checked as a receiver would. */
  const events = async (type: string): Promise<Event[]> => {
    await t.server.services.notify.deliverDue();
    return hook.requests
      .map((r) => {
        const header = String(r.headers['remessa-signature']);
        assert.ok(verifySignature(SECRET, header, r.body, Math.floor(t.clock.now() / 1000)));
        return JSON.parse(r.body) as Event;
      })
      .filter((e) => e.type === type);
  };

  test('request.file_received for an invited address, request.completed when it is full', async () => {
    const made = await makeRequest(t, ANA, { title: 'Payslips', emails: ['bob@example.com'], maxFiles: 1 });
    const token = tokenOf(made.links[0]!.url);
    assert.equal((await call(`${t.base}/requests/pin?t=${token}`, { method: 'POST' })).status, 200);
    await t.server.services.notify.deliverDue();
    const pinMail = await mail.take('bob@example.com');
    const pin = /\b(\d{6})\b/.exec(pinMail.text ?? '')![1]!;
    const up = await requestUpload(t, token, 'march.pdf', Buffer.from('payslip of march'), { pin });
    assert.equal(up.status, 201, up.detail);

    const [received] = await events('request.file_received');
    assert.ok(received, 'request.file_received delivered');
    const data = received.data as { file: { id: number; name: string; length: number } } & Record<
      string,
      unknown
    >;
    assert.deepEqual(data['request'], { id: made.id, title: 'Payslips' });
    assert.equal(data['user'], 'ana');
    assert.equal(data.file.name, 'march.pdf');
    assert.equal(data['from'] === 'bob@example.com', false, 'the address is masked');
    assert.match(String(data['from']), /^b.*@example\.com$/);
    assert.ok(!JSON.stringify(received).includes(token), 'no request token in an event');

    const [completed] = await events('request.completed');
    assert.ok(completed, 'request.completed delivered');
    assert.deepEqual(completed.data, {
      request: { id: made.id, title: 'Payslips', received: { files: 1, bytes: 16 } },
      reason: 'full',
      user: 'ana',
    });
  });

  test('request.completed when its requester closes it, once', async () => {
    const made = await makeRequest(t, ANA, { title: 'Open call', reusable: true });
    const up = await requestUpload(t, made.token, 'a.txt', Buffer.from('abc'));
    assert.equal(up.status, 201, up.detail);
    const closed = await call(`${t.base}/requests/${made.id}/close`, {
      method: 'POST',
      headers: { Authorization: ANA },
    });
    assert.equal(closed.status, 200);
    const again = await call(`${t.base}/requests/${made.id}/close`, {
      method: 'POST',
      headers: { Authorization: ANA },
    });
    assert.equal(again.status, 200, 'closing again changes nothing');
    const mine = (await events('request.completed')).filter(
      (e) => (e.data['request'] as { id: string }).id === made.id,
    );
    assert.equal(mine.length, 1);
    assert.deepEqual(mine[0]!.data, {
      request: { id: made.id, title: 'Open call', received: { files: 1, bytes: 3 } },
      reason: 'closed',
      user: 'ana',
    });
    const fromOpenLink = (await events('request.file_received')).find(
      (e) => (e.data['request'] as { id: string }).id === made.id,
    );
    assert.equal(fromOpenLink?.data['from'], null);
  });
});
