// API keys on PostgreSQL with two instances: a key made on one works on the other, and revoking
// it (or disabling its owner) on one stops it on the other at the next request, with the tokens
// obtained with it on either instance.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { keyAuths, makeKey, uploadStatus } from './helpers/keys.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';
import { basic, call, closeAll, startTestServer, type TestServer } from './helpers/server.js';

const available = await postgresAvailable();
if (!available && PG_REQUIRED) throw new Error(PG_SKIP);

describe('API keys on PostgreSQL, two instances', { skip: available ? false : PG_SKIP }, () => {
  let database: Awaited<ReturnType<typeof createTempDatabase>>;
  let a: TestServer;
  let b: TestServer;
  const JOE = basic('joe', 'joe-password-1');

  before(async () => {
    database = await createTempDatabase();
    const env = { REMESSA_DATABASE_URL: database.url };
    a = await startTestServer({ env });
    b = await startTestServer({ env });
    await a.createUser('joe', 'joe-password-1');
  });
  after(async () => {
    await closeAll(a, b, () => database?.drop());
  });

  /** Upload statuses on each instance with each of its `auths` (tokens are each instance's own). */
  const everywhere = async (auths: Map<TestServer, Record<string, string | null>>) => {
    const out: string[] = [];
    for (const [t, ways] of auths)
      for (const [way, auth] of Object.entries(ways)) out.push(`${way}:${await uploadStatus(t, auth!)}`);
    return out;
  };
  const ways = ['basic', 'bearer', 'token'];

  test('revoked on one instance: refused on both at once, tokens included', async () => {
    const made = await makeKey(a, JOE);
    // Test instances differ in base URL, a token's issuer: each uses the tokens it issued.
    const auths = new Map([
      [a, await keyAuths(a, 'joe', made.key)],
      [b, await keyAuths(b, 'joe', made.key)],
    ]);
    assert.deepEqual(
      await everywhere(auths),
      [...ways, ...ways].map((w) => `${w}:200`),
    );
    const r = await call(`${b.base}/keys/${made.id}`, { method: 'DELETE', headers: { Authorization: JOE } });
    assert.equal(r.status, 200);
    assert.deepEqual(
      await everywhere(auths),
      [...ways, ...ways].map((w) => `${w}:401`),
    );
  });

  test('an owner disabled on one instance: the key stops on the other', async () => {
    const made = await makeKey(b, JOE);
    assert.equal(await uploadStatus(a, `Bearer ${made.key}`), 200);
    await b.server.services.users.setEnabled('joe', false);
    const both = { bearer: `Bearer ${made.key}`, basic: basic('joe', made.key) };
    assert.deepEqual(
      await everywhere(
        new Map([
          [a, both],
          [b, both],
        ]),
      ),
      ['bearer:401', 'basic:401', 'bearer:401', 'basic:401'],
    );
    await b.server.services.users.setEnabled('joe', true);
  });
});
