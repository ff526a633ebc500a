// Roles on the command line (docs/admin.md, "Roles"): `user add --role`, `user set --role`, the
// role in `user list` (table and JSON), an unknown role refused like any invalid value, and the
// last enabled admin kept, as the admin API keeps it.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { run } from './helpers/cli.js';

describe('remessa user … --role', () => {
  let dataDir: string;
  let env: Record<string, string>;
  const remessa = (args: string[], stdin?: string) =>
    run(process.execPath, ['bin/remessa.js', ...args], { env, stdin });
  const ok = async (args: string[], stdin?: string) => {
    const r = await remessa(args, stdin);
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    return r;
  };
  const refused = async (args: string[], message: RegExp) => {
    const r = await remessa(args);
    assert.equal(r.code, 1, `${args.join(' ')}: ${r.stdout}`);
    assert.match(r.stderr, /^remessa: /);
    assert.match(r.stderr, message);
    assert.equal(r.stdout, '');
  };
  const roles = async () => {
    const r = await ok(['user', 'list', '--json']);
    const rows = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { name: string; role: string });
    return Object.fromEntries(rows.map((u) => [u.name, u.role]));
  };

  before(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'remessa-cli-roles-'));
    env = { REMESSA_DATA_DIR: dataDir, REMESSA_SECRET: 'cli-roles-secret-cli-roles-secret' };
  });
  after(() => rm(dataDir, { recursive: true, force: true }));

  test('the first admin, an auditor and a user; list shows each role', async () => {
    const r = await ok(
      ['user', 'add', 'alice', '--role', 'admin', '--email', 'alice@example.com', '--password-stdin'],
      'alice-password-1\n',
    );
    assert.equal(r.stdout, 'created user alice\n');
    await ok(['user', 'add', 'bob', '--role', 'auditor', '--email', 'bob@example.com']);
    await ok(['user', 'add', 'carol', '--email', 'carol@example.com']);
    assert.deepEqual(await roles(), { alice: 'admin', bob: 'auditor', carol: 'user' });
    const table = (await ok(['user', 'list'])).stdout.trimEnd().split('\n');
    assert.match(table[0]!, /^NAME +E-MAIL +MOBILE +LANG +ROLE +STATE +CREATED$/);
    const at = table[0]!.indexOf('ROLE');
    assert.deepEqual(
      table.slice(1).map((l) => l.slice(at).split(/\s+/)[0]),
      ['admin', 'auditor', 'user'],
    );
  });

  test('an unknown role is refused like any invalid value, and changes nothing', async () => {
    await refused(
      ['user', 'add', 'dave', '--role', 'root', '--email', 'd@example.com'],
      /role must be user, auditor, admin, got "root"/,
    );
    await refused(
      ['user', 'set', 'carol', '--role', 'Admin'],
      /role must be user, auditor, admin, got "Admin"/,
    );
    assert.deepEqual(await roles(), { alice: 'admin', bob: 'auditor', carol: 'user' });
  });

  test('user set --role promotes and demotes; the last enabled admin stays one', async () => {
    await refused(
      ['user', 'set', 'alice', '--role', 'auditor'],
      /the last enabled admin cannot be removed, demoted or disabled/,
    );
    await refused(['user', 'disable', 'alice'], /last enabled admin/);
    await refused(['user', 'remove', 'alice'], /last enabled admin/);
    assert.deepEqual(await roles(), { alice: 'admin', bob: 'auditor', carol: 'user' });
    await ok(['user', 'set', 'bob', '--role', 'admin']);
    await ok(['user', 'set', 'ALICE', '--role', 'user']);
    assert.deepEqual(await roles(), { alice: 'user', bob: 'admin', carol: 'user' });
    await refused(['user', 'disable', 'bob'], /last enabled admin/);
    const audit = await ok(['audit', '--json', '--event', 'user.updated']);
    const rows = audit.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { user_name: string; detail: string; actor: string | null });
    assert.deepEqual(
      rows.map((x) => [x.user_name, x.detail, x.actor]),
      [
        ['bob', 'role=admin', null],
        ['alice', 'role=user', null],
      ],
    );
  });
});
