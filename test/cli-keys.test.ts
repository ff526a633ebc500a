// `remessa key create|list|revoke` (docs/api-keys.md): the key printed once (JSON {id, name, key}),
// listed without it, refused values, and a revoked key refused by a running server at once.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { run } from './helpers/cli.js';
import { uploadStatus } from './helpers/keys.js';
import { basic, startTestServer, type TestServer } from './helpers/server.js';

describe('remessa key …', () => {
  let t: TestServer;
  let env: Record<string, string>;
  const remessa = (args: string[]) => run(process.execPath, ['bin/remessa.js', ...args], { env });
  const ok = async (args: string[]) => {
    const r = await remessa(args);
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };

  before(async () => {
    t = await startTestServer();
    env = t.env;
    await t.createUser('alice', 'alice-password-1');
    await t.createUser('bob', 'bob-password-1');
  });
  after(() => t.close());

  test('create prints the key once; it works over HTTP; list never shows it', async () => {
    const made = JSON.parse(
      await ok([
        'key',
        'create',
        'alice',
        'nightly export',
        '--scope',
        'upload',
        '--expires',
        '30d',
        '--json',
      ]),
    );
    assert.deepEqual(Object.keys(made), ['id', 'name', 'key']);
    assert.equal(made.name, 'nightly export');
    assert.equal(await uploadStatus(t, basic('alice', made.key)), 200);
    const human = await ok(['key', 'create', 'bob', 'ci']);
    assert.match(
      human,
      /^key [0-9a-f]{16} "ci" for bob\nscopes: the owner's rights; expires: never\nkey: rmk_/,
    );
    const lines = (await ok(['key', 'list', '--json']))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.deepEqual(lines.map((k) => k.user).sort(), ['alice', 'bob']);
    assert.equal(JSON.stringify(lines).includes(made.key.slice(21)), false);
    const alices = (await ok(['key', 'list', 'alice', '--json']))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      alices.map((k) => [k.id, k.scopes]),
      [[made.id, ['upload']]],
    );
    const table = (await ok(['key', 'list', 'alice'])).split('\n');
    assert.match(table[0]!, /^ID +USER +NAME +SCOPES +CREATED +EXPIRES +LAST USED +STATE$/);
    assert.match(table[1]!, /active$/);
  });

  test('revoke stops the key in the running server at once', async () => {
    const made = JSON.parse(await ok(['key', 'create', 'alice', 'to revoke', '--json']));
    assert.equal(await uploadStatus(t, `Bearer ${made.key}`), 200);
    assert.equal(await ok(['key', 'revoke', made.id]), `revoked key ${made.id} "to revoke" of alice\n`);
    assert.equal(await uploadStatus(t, `Bearer ${made.key}`), 401);
    const listed = (await ok(['key', 'list', 'alice'])).split('\n').find((l) => l.startsWith(made.id));
    assert.match(listed!, /revoked$/);
  });

  test('refusals: unknown user, scope, expiry, key id', async () => {
    for (const [args, message] of [
      [['key', 'create', 'nobody', 'x'], /no user nobody/],
      [['key', 'create', 'alice', 'x', '--scope', 'root'], /unknown scope "root"/],
      [['key', 'create', 'alice', 'x', '--expires', 'soon'], /expiry must be/],
      [['key', 'create', 'alice', 'x', '--expires', '2000-01-01'], /expiry must be in the future/],
      [['key', 'revoke', 'zz'], /no API key zz/],
      [['key', 'list', 'nobody'], /no user nobody/],
    ] as const) {
      const r = await remessa([...args]);
      assert.equal(r.code, 1, args.join(' '));
      assert.match(r.stderr, message);
    }
  });
});
