// Behind a load balancer: REMESSA_TRUST_PROXY names the proxies whose X-Forwarded-For is believed,
// and the client address is the right-most one no trusted proxy wrote. A client that forges the
// header changes nothing: its failed sign-ins still add up to 429, and the audit names the address
// the proxy saw. `true` (believe anyone) is refused at start.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../src/app/config.js';
import { CREDENTIAL_FAILURES_PER_MINUTE } from '../src/features/auth/auth-service.js';
import { call, startTestServer } from './helpers/server.js';

const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };

describe('REMESSA_TRUST_PROXY', () => {
  test('forged X-Forwarded-For: the address the trusted proxy appended counts, and is audited', async (t) => {
    // The test client connects from 127.0.0.1: it plays the load balancer, which appends the
    // address it saw to whatever the client sent.
    const s = await startTestServer({ env: { REMESSA_TRUST_PROXY: '127.0.0.1' } });
    t.after(() => s.close());
    await s.createUser('ana', 'ana-password');
    const statuses: number[] = [];
    for (let i = 0; i < CREDENTIAL_FAILURES_PER_MINUTE + 10; i++) {
      const r = await call(`${s.base}/oauth2/token`, {
        method: 'POST',
        headers: { ...FORM, 'X-Forwarded-For': `198.51.100.${i}, 203.0.113.7` },
        body: 'grant_type=password&username=ana&password=wrong',
      });
      statuses.push(r.status);
    }
    assert.deepEqual(new Set(statuses.slice(0, 5)), new Set([401]));
    assert.equal(statuses.at(-1), 429, `statuses: ${statuses.join(',')}`);
    const failed = await s.server.services.db
      .selectFrom('audit')
      .select('remote')
      .where('event', '=', 'login.failed')
      .execute();
    assert.ok(failed.length > 0);
    assert.deepEqual(new Set(failed.map((r) => r.remote)), new Set(['203.0.113.7']));
  });

  test('a hop count trusts that many proxies nearest to Remessa', async (t) => {
    const s = await startTestServer({ env: { REMESSA_TRUST_PROXY: '1' } });
    t.after(() => s.close());
    await call(`${s.base}/oauth2/token`, {
      method: 'POST',
      headers: { ...FORM, 'X-Forwarded-For': '198.51.100.9, 203.0.113.8' },
      body: 'grant_type=password&username=nobody&password=wrong',
    });
    const [row] = await s.server.services.db
      .selectFrom('audit')
      .select('remote')
      .where('event', '=', 'login.failed')
      .execute();
    assert.equal(row?.remote, '203.0.113.8');
  });

  test('without it, the header is ignored', async (t) => {
    const s = await startTestServer();
    t.after(() => s.close());
    await call(`${s.base}/oauth2/token`, {
      method: 'POST',
      headers: { ...FORM, 'X-Forwarded-For': '203.0.113.9' },
      body: 'grant_type=password&username=nobody&password=wrong',
    });
    const [row] = await s.server.services.db.selectFrom('audit').select('remote').execute();
    assert.equal(row?.remote, '127.0.0.1');
  });

  test('`true` is refused with what to write instead; bad entries are refused', () => {
    assert.throws(
      () => loadConfig({ REMESSA_TRUST_PROXY: 'true' }),
      (err: Error) =>
        err instanceof ConfigError &&
        /REMESSA_TRUST_PROXY=10\.0\.0\.5/.test(err.message) &&
        /=1\)/.test(err.message),
    );
    for (const bad of ['yes', '10.0.0.300', '10.0.0.0/33', 'proxy.example.com'])
      assert.throws(() => loadConfig({ REMESSA_TRUST_PROXY: bad }), ConfigError, bad);
    assert.deepEqual(loadConfig({ REMESSA_TRUST_PROXY: '10.0.0.0/8, ::1,loopback' }).trustProxy, [
      '10.0.0.0/8',
      '::1',
      'loopback',
    ]);
    assert.equal(loadConfig({ REMESSA_TRUST_PROXY: '2' }).trustProxy, 2);
    assert.equal(loadConfig({}).trustProxy, false);
  });
});

describe('REMESSA_PORT alone', () => {
  test('the default base URL names that port', () => {
    assert.equal(loadConfig({ REMESSA_PORT: '9191' }).baseUrl, 'http://localhost:9191/v1');
    assert.equal(loadConfig({}).baseUrl, 'http://localhost:8080/v1');
  });
});
