// The `remessa` command line, run as a user runs it (`node bin/remessa.js …`, `npx remessa`), with
// a real server sharing the same data dir to prove that what the CLI does is what the API sees.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { UserRow } from '../src/platform/sql/schema.js';
import { ROOT, run } from './helpers/cli.js';
import { uploadFile } from './helpers/files.js';
import { basic, call, closeAll, startTestServer, type TestServer } from './helpers/server.js';

// dist/test/cli.test.js → the repository root.
const SECRET = 'cli-test-secret-cli-test-secret';

describe('remessa CLI', () => {
  let dataDir: string;
  let t: TestServer;
  let env: Record<string, string>;

  const remessa = (args: string[], stdin?: string) =>
    run(process.execPath, ['bin/remessa.js', ...args], { env, stdin });

  const token = (username: string, password: string) =>
    call(`${t.base}/oauth2/token`, {
      method: 'POST',
      headers: { Content_type: 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'password', username, password }).toString(),
    });

  const logout = (bearer: string) =>
    call(`${t.base}/auth/logout`, { method: 'POST', headers: { Authorization: `Bearer ${bearer}` } });

  async function listUsers(): Promise<Record<string, unknown>[]> {
    const r = await remessa(['user', 'list', '--json']);
    assert.equal(r.code, 0, r.stderr);
    // JSON lines: one user a line.
    return r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  /** The stored row, read by the running server from the data dir the CLI writes to. */
  async function userNamed(name: string): Promise<UserRow | undefined> {
    const row = await t.server.services.users.find(name);
    return row?.name === name ? row : undefined;
  }

  async function addUser(name: string, password: string, ...extra: string[]): Promise<void> {
    const r = await remessa(['user', 'add', name, ...extra, '--password-stdin'], `${password}\n`);
    assert.equal(r.code, 0, r.stderr);
  }

  before(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'remessa-cli-'));
    env = { REMESSA_DATA_DIR: dataDir, REMESSA_SECRET: SECRET };
    // The CLI creates the database first; the server then opens the same file.
    const r = await remessa(
      ['user', 'add', 'USER1', '--email', 'u1@example.com', '--password-stdin'],
      'first-password\n',
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'created user USER1\n');
    t = await startTestServer({ dataDir, env: { REMESSA_SECRET: SECRET } });
  });
  after(async () => {
    await closeAll(t, () => rm(dataDir, { recursive: true, force: true }));
  });

  test('a user added by the CLI gets a token over HTTP with the password piped on stdin', async () => {
    const r = await token('USER1', 'first-password');
    assert.equal(r.status, 200);
    assert.equal(r.body['token_type'], 'Bearer');
    const wrong = await token('USER1', 'first-password\n');
    assert.equal(wrong.status, 401, 'the newline ending stdin is not part of the password');
  });

  test('user list --json shows exactly the documented fields', async () => {
    const users = await listUsers();
    const u1 = users.find((u) => u['name'] === 'USER1');
    assert.ok(u1);
    assert.deepEqual(Object.keys(u1), [
      'name',
      'email',
      'mobile',
      'lang',
      'role',
      'enabled',
      'firstAccess',
      'locked',
      'created',
    ]);
    assert.deepEqual(
      { ...u1, created: undefined },
      {
        name: 'USER1',
        email: 'u1@example.com',
        mobile: null,
        lang: 'pt',
        role: 'user',
        enabled: true,
        firstAccess: false,
        locked: false,
        created: undefined,
      },
    );
    assert.match(String(u1['created']), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  test('user list without --json prints an aligned table', async () => {
    const r = await remessa(['user', 'list']);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^NAME +E-MAIL +MOBILE +LANG +ROLE +STATE +CREATED$/);
    const row = lines.find((l) => l.startsWith('USER1 '))!;
    assert.match(row, /^USER1 +u1@example\.com +- +pt +user +enabled +\d{4}-/);
    // Every column starts where its header does.
    for (const header of ['E-MAIL', 'LANG', 'ROLE', 'CREATED']) {
      const at = lines[0]!.indexOf(header);
      for (const l of lines.slice(1)) assert.notEqual(l[at - 1], undefined, l);
      for (const l of lines.slice(1)) assert.equal(l[at - 1], ' ', `${header} in ${l}`);
    }
  });

  test('user list --json prints JSON lines, like audit and outbox', async () => {
    const r = await remessa(['user', 'list', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    assert.ok(lines.length >= 1);
    for (const l of lines) assert.equal(typeof (JSON.parse(l) as { name: string }).name, 'string');
  });

  test('user set changes e-mail, mobile and language', async () => {
    await addUser('setme', 'setme-password', '--email', 'old@example.com');
    const r = await remessa([
      'user',
      'set',
      'setme',
      '--email',
      'new@example.com',
      '--mobile',
      '+55 (11) 98765-4321',
      '--lang',
      'en',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'updated user setme\n');
    const u = await userNamed('setme');
    assert.equal(u?.email, 'new@example.com');
    assert.equal(u?.mobile, '+5511987654321');
    assert.equal(u?.lang, 'en');

    const cleared = await remessa(['user', 'set', 'SETME', '--mobile', '']);
    assert.equal(cleared.code, 0, cleared.stderr);
    assert.equal((await userNamed('setme'))?.mobile, null);
  });

  const badSets: [string, string[], RegExp][] = [
    ['bad e-mail', ['--email', 'not-an-email'], /invalid e-mail address "not-an-email"/],
    ['bad mobile', ['--mobile', '12ab'], /invalid mobile number "12ab"/],
    ['bad language', ['--lang', 'fr'], /language must be pt, en or es, got "fr"/],
    ['bad role', ['--role', 'root'], /role must be user, auditor, admin, got "root"/],
    ['nothing to set', [], /nothing to set/],
  ];
  for (const [name, args, message] of badSets) {
    test(`user set rejects a ${name}: exit ≠ 0, message on stderr, nothing changed`, async () => {
      const before = await userNamed('USER1');
      // The e-mail is valid so a partial update would show; the bad value must reject the whole set.
      const r = await remessa([
        'user',
        'set',
        'USER1',
        ...(args.length > 0 ? ['--email', 'changed@example.com', ...args] : []),
      ]);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /^remessa: /);
      assert.match(r.stderr, message);
      assert.equal(r.stdout, '');
      assert.deepEqual(await userNamed('USER1'), before);
    });
  }

  test('user set on an unknown user fails', async () => {
    const r = await remessa(['user', 'set', 'nobody', '--lang', 'en']);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, 'remessa: no user "nobody"\n');
  });

  test('user passwd revokes earlier bearer tokens and the new password works', async () => {
    await addUser('pw', 'pw-password-1');
    const before = await token('pw', 'pw-password-1');
    assert.equal(before.status, 200);
    const r = await remessa(['user', 'passwd', 'pw'], 'pw-password-2\n');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'password changed for pw\n');
    assert.equal((await logout(String(before.body['access_token']))).status, 401);
    assert.equal((await token('pw', 'pw-password-1')).status, 401);
    const fresh = await token('pw', 'pw-password-2');
    assert.equal(fresh.status, 200);
    assert.equal((await logout(String(fresh.body['access_token']))).status, 200);
  });

  test('user passwd refuses a password below the policy and keeps the old one', async () => {
    await addUser('shorty', 'shorty-password');
    const r = await remessa(['user', 'passwd', 'shorty'], 'short\n');
    assert.equal(r.code, 1);
    assert.equal(r.stderr, 'remessa: password must have at least 8 characters\n');
    assert.equal((await token('shorty', 'shorty-password')).status, 200);
  });

  test('user disable → token endpoint 401 and earlier tokens revoked; enable → 200', async () => {
    await addUser('dis', 'dis-password');
    const earlier = String((await token('dis', 'dis-password')).body['access_token']);
    const off = await remessa(['user', 'disable', 'dis']);
    assert.equal(off.code, 0, off.stderr);
    assert.equal(off.stdout, 'disabled user dis\n');
    assert.equal((await userNamed('dis'))?.enabled, 0);
    const refused = await token('dis', 'dis-password');
    assert.equal(refused.status, 401);
    assert.deepEqual(refused.body, { error: 401, error_description: 'Unauthorized', error_uri: t.base });
    assert.equal((await logout(earlier)).status, 401);

    const on = await remessa(['user', 'enable', 'dis']);
    assert.equal(on.code, 0, on.stderr);
    assert.equal(on.stdout, 'enabled user dis\n');
    assert.equal((await token('dis', 'dis-password')).status, 200);
    assert.equal((await logout(earlier)).status, 401, 'enabling does not resurrect old tokens');
  });

  test('user remove deletes the account and its tokens', async () => {
    await addUser('rm-me', 'rm-me-password');
    const earlier = String((await token('rm-me', 'rm-me-password')).body['access_token']);
    const r = await remessa(['user', 'remove', 'rm-me']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stdout,
      'removed user rm-me; 0 file(s) of theirs unreachable now, purged within a sweep\n',
    );
    assert.equal(await userNamed('rm-me'), undefined);
    assert.equal((await token('rm-me', 'rm-me-password')).status, 401);
    assert.equal((await logout(earlier)).status, 401);
    const again = await remessa(['user', 'remove', 'rm-me']);
    assert.equal(again.code, 1);
    assert.equal(again.stderr, 'remessa: no user "rm-me"\n');
  });

  test('user remove: links to files in their area stop at once and the contents are purged; files they sent to others stay', async () => {
    await addUser('leaver', 'leaver-password');
    await addUser('stayer', 'stayer-password');
    const auth = basic('leaver', 'leaver-password');
    const send = (query: Record<string, string>) =>
      uploadFile(t, auth, 'f.bin', Buffer.alloc(2000, 1), query);
    const own = await send({ m: 'someone@example.com' });
    const retired = await send({});
    const sent = await send({ d: 'stayer' });
    const { db, blobs } = t.server.services;
    const recipientLinks = await db.selectFrom('links').select('id').where('file_id', '=', own.id).execute();
    assert.ok(recipientLinks.length >= 1);
    // One of theirs already in backup: it goes too.
    await db
      .updateTable('files')
      .set({ state: 'backup', retired_at: 1, purge_at: 9e15 })
      .where('id', '=', retired.id)
      .execute();
    const keys = await db
      .selectFrom('files')
      .select('blob_key')
      .where('id', 'in', [own.id, retired.id])
      .execute();
    assert.equal((await fetch(own.linkURL)).status, 200);

    const r = await remessa(['user', 'remove', 'leaver']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^removed user leaver; 2 file\(s\) of theirs unreachable now/);
    const gone = await fetch(own.linkURL);
    assert.notEqual(gone.status, 200, 'the owner link stops at once');
    assert.ok(gone.status >= 400 && gone.status < 500);
    assert.equal((await fetch(sent.linkURL)).status, 200, "a file sent into another area is that user's");

    await t.server.workers.get('file-sweeper')!.runOnce();
    assert.deepEqual(
      await db.selectFrom('files').select('id').where('id', 'in', [own.id, retired.id]).execute(),
      [],
    );
    for (const { blob_key } of keys) assert.equal(await blobs.stat(blob_key), null, 'contents purged');
    const removed = await db
      .selectFrom('audit')
      .select('detail')
      .where('event', '=', 'user.removed')
      .execute();
    assert.match(String(removed.at(-1)?.detail), /"filesPurged":2/);
  });

  test('user add without --password-stdin creates a first-access user who cannot log in', async () => {
    const r = await remessa(['user', 'add', 'newbie', '--email', 'newbie@example.com', '--lang', 'es']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'created user newbie (first access: no password yet)\n');
    const u = await userNamed('newbie');
    assert.equal(u?.first_access, 1);
    assert.equal(u?.password_hash, null);
    assert.equal(u?.lang, 'es');
    assert.equal(u?.enabled, 1);
    for (const pw of ['', 'anything-at-all']) {
      const login = await call(`${t.base}/auth/login`, {
        method: 'POST',
        headers: { Authorization: basic('newbie', pw), Content_type: 'application/json' },
      });
      assert.equal(login.status, 401, JSON.stringify(pw));
    }
    assert.equal((await token('newbie', 'anything-at-all')).status, 401);
  });

  test('user add refuses a duplicate name, case-insensitively', async () => {
    for (const name of ['USER1', 'user1']) {
      const r = await remessa(['user', 'add', name, '--password-stdin'], 'another-password\n');
      assert.equal(r.code, 1);
      assert.equal(r.stderr, `remessa: user "${name}" already exists\n`);
    }
    // The original account and its password are untouched.
    assert.equal((await token('USER1', 'first-password')).status, 200);
    assert.equal((await token('USER1', 'another-password')).status, 401);
  });

  const badAdds: [string, string[], RegExp][] = [
    ['a/b', [], /user name must be 1-64 characters/],
    ['x'.repeat(65), [], /user name must be 1-64 characters/],
    ['has space', [], /user name must be 1-64 characters/],
    ['okname', ['--email', 'nope'], /invalid e-mail address "nope"/],
    ['okname', ['--lang', 'de'], /language must be pt, en or es/],
  ];
  for (const [name, extra, message] of badAdds) {
    test(`user add refuses ${JSON.stringify(name.length > 20 ? `${name.slice(0, 5)}…` : name)} ${extra.join(' ')}`, async () => {
      const r = await remessa(['user', 'add', name, ...extra, '--password-stdin'], 'valid-password\n');
      assert.equal(r.code, 1);
      assert.match(r.stderr, /^remessa: /);
      assert.match(r.stderr, message);
      assert.equal(await userNamed(name), undefined);
    });
  }

  test('user add refuses a password below the policy', async () => {
    const r = await remessa(['user', 'add', 'weak', '--password-stdin'], 'short\n');
    assert.equal(r.code, 1);
    assert.equal(r.stderr, 'remessa: password must have at least 8 characters\n');
    assert.equal(await userNamed('weak'), undefined);
  });

  test('audit --json --user X --event login filters, one JSON object a line', async () => {
    await addUser('auditee', 'auditee-password');
    await addUser('other', 'other-password');
    const login = (name: string, pw: string) =>
      call(`${t.base}/auth/login`, { method: 'POST', headers: { Authorization: basic(name, pw) } });
    assert.equal((await login('auditee', 'auditee-password')).status, 200);
    assert.equal((await login('auditee', 'wrong-password')).status, 401);
    assert.equal((await login('other', 'other-password')).status, 200);
    assert.equal((await token('auditee', 'auditee-password')).status, 200);

    const r = await remessa(['audit', '--json', '--user', 'auditee', '--event', 'login']);
    assert.equal(r.code, 0, r.stderr);
    const rows = r.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    // "login" matches login and its sub-events (login.failed), never token.issued or other users.
    assert.deepEqual(
      rows.map((e) => [e['event'], e['user_name'], e['detail']]),
      [
        ['login', 'auditee', null],
        ['login.failed', 'auditee', 'wrong password'],
      ],
    );
    for (const e of rows) {
      assert.deepEqual(Object.keys(e), [
        'id',
        'at',
        'event',
        'user_name',
        'remote',
        'file_id',
        'detail',
        'actor',
        'bytes',
        'time',
      ]);
      assert.equal(e['remote'], '127.0.0.1');
      assert.equal(e['file_id'], null);
      assert.equal(e['time'], new Date(Number(e['at'])).toISOString());
    }

    const exact = await remessa(['audit', '--json', '--user', 'auditee', '--event', 'login.failed']);
    assert.equal(exact.stdout.trim().split('\n').length, 1);

    const created = await remessa(['audit', '--json', '--event', 'user.created', '--user', 'AUDITEE']);
    assert.equal(created.code, 0, created.stderr);
    const createdRows = created.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    assert.deepEqual(
      createdRows.map((e) => [e['event'], e['user_name']]),
      [['user.created', 'auditee']],
      'the user filter matches names case-insensitively, like every other name',
    );

    const none = await remessa(['audit', '--json', '--user', 'auditee', '--until', '1000']);
    assert.equal(none.code, 0, none.stderr);
    assert.equal(none.stdout, '');
    const badTime = await remessa(['audit', '--since', 'yesterday-ish']);
    assert.equal(badTime.code, 1);
    assert.match(badTime.stderr, /not a time: "yesterday-ish"/);
  });

  test('audit without --json prints one readable line per event', async () => {
    const r = await remessa(['audit', '--user', 'USER1', '--event', 'user.created']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /^TIME +EVENT +USER +REMOTE +FILE +DETAIL\n\d{4}-\d{2}-\d{2}T\S+Z {2}user\.created {2}USER1 {2}- {7}- {5}cli\n$/,
    );
  });

  test('passwords never appear in the CLI output or the server log', async () => {
    const all = t.logs.join('\n');
    for (const secret of ['first-password', 'pw-password-1', 'pw-password-2', 'auditee-password'])
      assert.ok(!all.includes(secret), secret);
  });
});

describe('remessa launcher', () => {
  test('serve with REMESSA_PORT=abc exits 2 naming REMESSA_PORT', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'remessa-cli-'));
    try {
      const r = await run(process.execPath, ['bin/remessa.js', 'serve'], {
        env: { REMESSA_PORT: 'abc', REMESSA_DATA_DIR: dir },
      });
      assert.equal(r.code, 2);
      assert.equal(
        r.stderr,
        'remessa: configuration error: REMESSA_PORT must be a whole number, got "abc"\n',
      );
      assert.equal(r.stdout, '');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('a bad setting is reported the same way by user commands', async () => {
    const r = await run(process.execPath, ['bin/remessa.js', 'user', 'list'], {
      env: { REMESSA_LANG: 'fr', REMESSA_DATA_DIR: path.join(tmpdir(), 'remessa-never-created') },
    });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^remessa: configuration error: REMESSA_LANG must be one of pt, en, es/);
  });

  test('--version prints the package version; --help names the data directory and config', async () => {
    const pkg = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const v = await run(process.execPath, ['bin/remessa.js', '--version'], { env: {} });
    assert.equal(v.code, 0);
    assert.equal(v.stdout, `${pkg.version}\n`);
    const dir = path.join(tmpdir(), 'remessa-help-dir');
    const h = await run(process.execPath, ['bin/remessa.js', '--help'], {
      env: { REMESSA_DATA_DIR: dir, REMESSA_CONFIG: '' },
    });
    assert.equal(h.code, 0, h.stderr);
    assert.match(h.stdout, new RegExp(`data directory \\(REMESSA_DATA_DIR\\): ${dir}\n`));
    assert.match(h.stdout, /config file \(REMESSA_CONFIG\): \(none\)\n/);
    assert.match(h.stdout, new RegExp(`database: SQLite ${dir}/remessa\\.db\n`));
    // Every option of every command says what it does.
    for (const cmd of [['user', 'add'], ['user', 'set'], ['audit'], ['outbox', 'list'], ['webhook', 'add']]) {
      const help = await run(process.execPath, ['bin/remessa.js', ...cmd, '--help'], { env: {} });
      for (const line of help.stdout.split('\n').filter((l) => /^ {2}-/.test(l)))
        assert.match(line, /^ {2}\S.*\S {2,}\S/, `${cmd.join(' ')}: "${line}" has no description`);
    }
  });

  test('an unknown command fails with help', async () => {
    const r = await run(process.execPath, ['bin/remessa.js', 'frobnicate'], { env: {} });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /unknown command 'frobnicate'/);
  });

  test('npx remessa --help lists the commands, without rebuilding dist/', async () => {
    // --no: never install anything; npx resolves the project's own bin. An empty npm cache makes
    // every run the first npx on a fresh machine, where npm links this project into its npx cache
    // and runs `prepare`; that must not rebuild (and so clear) the dist/ a server runs from.
    const npx = process.platform === 'win32' ? 'npx.cmd' : 'npx';
    const cache = await mkdtemp(path.join(tmpdir(), 'remessa-npm-cache-'));
    const built = (await stat(path.join(ROOT, 'dist/src/app/cli/main.js'))).mtimeMs;
    const r = await run(npx, ['--no', '--', 'remessa', '--help'], {
      env: { npm_config_cache: cache, npm_config_offline: 'true' },
    }).finally(() => rm(cache, { recursive: true, force: true }));
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      (await stat(path.join(ROOT, 'dist/src/app/cli/main.js'))).mtimeMs,
      built,
      'npx rebuilt dist/',
    );
    assert.match(r.stdout, /^Usage: remessa \[options\] \[command\]/);
    for (const cmd of ['serve', 'user', 'audit']) assert.match(r.stdout, new RegExp(`^ {2}${cmd}\\b`, 'm'));
    const user = await run(process.execPath, ['bin/remessa.js', 'user', '--help'], { env: {} });
    assert.equal(user.code, 0);
    for (const cmd of ['add', 'list', 'set', 'passwd', 'disable', 'enable', 'remove'])
      assert.match(user.stdout, new RegExp(`^ {2}${cmd}\\b`, 'm'));
  });
});
