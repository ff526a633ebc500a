// Hostile input to single sign-on: query strings of every shape on the callback, bodies of every
// shape on the session route, odd parameters on start. Each gets a clear 4xx (a page or an
// envelope), nothing is created, nothing is logged as an error, and a real sign-in still works.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import {
  type FakeProvider,
  fakeProviderEnv,
  signInThroughFake,
  startFakeProvider,
} from './helpers/oidc-provider.js';
import { closeAll, startTestServer, type TestServer } from './helpers/server.js';
import { trade, userNames } from './helpers/sso.js';

const SEED = Number(process.env['REMESSA_FUZZ_SEED'] ?? 20261123);

const nasty = fc.oneof(
  fc.string({ maxLength: 60 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.constantFrom(
    '',
    '%',
    '%zz',
    '\u0000',
    'A'.repeat(5000),
    '../../etc/passwd',
    '<script>',
    '"',
    'null',
    '[]',
  ),
);
const PARAMS = ['state', 'code', 'error', 'iss', 'session_state', 'error_description', 'state[]'];

describe(`single sign-on under hostile input (seed ${SEED})`, () => {
  let t: TestServer;
  let fake: FakeProvider;
  before(async () => {
    fake = await startFakeProvider();
    t = await startTestServer({ env: fakeProviderEnv(fake) });
  });
  after(() => closeAll(t, fake));

  test('callback: any query string, with or without a cookie, is a 400 or 403 page', async () => {
    const users = await userNames(t);
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.constantFrom(...PARAMS), nasty), { maxLength: 6 }),
        fc.option(nasty),
        async (pairs, cookie) => {
          // Past the per-address limit's window now and then: every run reaches the handler.
          t.clock.advance(1_100);
          const query = pairs.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&');
          const res = await fetch(`${t.base}/auth/oidc/callback?${query}`, {
            redirect: 'manual',
            headers: cookie === null ? {} : { cookie: `remessa_sso=${encodeURIComponent(cookie)}` },
          });
          await res.arrayBuffer();
          assert.ok([400, 403].includes(res.status), `${res.status} for ?${query}`);
        },
      ),
      { seed: SEED, numRuns: 120 },
    );
    assert.deepEqual(await userNames(t), users);
  });

  test('session: any body is a 4xx envelope and signs nobody in', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          nasty,
          fc.json(),
          nasty.map((code) => JSON.stringify({ code })),
          nasty.map((code) => JSON.stringify({ code, extra: 1 })),
        ),
        async (body) => {
          const res = await fetch(`${t.base}/auth/oidc/session`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body,
          });
          const answer = (await res.json()) as Record<string, unknown>;
          assert.ok([400, 401, 415, 429].includes(res.status), `${res.status} for ${body.slice(0, 80)}`);
          assert.equal(answer['status'], res.status);
          assert.equal(answer['bearer'], undefined);
        },
      ),
      { seed: SEED, numRuns: 25 },
    );
  });

  test('start: odd parameters are refused or ignored, never a failure of the server', async () => {
    await fc.assert(
      fc.asyncProperty(nasty, nasty, async (to, lang) => {
        t.clock.advance(1_100);
        const q = `to=${encodeURIComponent(to)}&lang=${encodeURIComponent(lang)}`;
        const res = await fetch(`${t.base}/auth/oidc/start?${q}`, { redirect: 'manual' });
        await res.arrayBuffer();
        assert.ok([302, 400].includes(res.status), `${res.status} for ?${q}`);
        if (res.status === 302)
          assert.match(res.headers.get('location')!, new RegExp(`^${fake.issuer}/authorize\\?`));
      }),
      { seed: SEED, numRuns: 60 },
    );
  });

  test('start is limited per address: each stores a pending sign-in', async () => {
    t.clock.advance(61_000);
    const statuses: number[] = [];
    for (let i = 0; i < 61; i++) {
      const res = await fetch(`${t.base}/auth/oidc/start`, { redirect: 'manual' });
      await res.arrayBuffer();
      statuses.push(res.status);
    }
    assert.deepEqual([statuses.slice(0, 60).every((s) => s === 302), statuses[60]], [true, 429]);
  });

  test('afterwards: a real sign-in works and no error was logged', async () => {
    t.clock.advance(61_000);
    fake.mode = 'good';
    fake.claims = { sub: 'fuzz-1', preferred_username: 'fuzzed' };
    const res = await signInThroughFake(t.base);
    assert.equal(res.status, 302);
    assert.equal((await trade(t, res.headers.get('location')!)).body['user'], 'fuzzed');
    assert.deepEqual(
      t.logs.filter((l) => /"level":(50|60)/.test(l)),
      [],
    );
  });
});
