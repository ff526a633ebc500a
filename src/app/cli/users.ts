// The operator's `user …` commands: accounts, their roles, passwords and state, on this
// installation's database (through UserService, as the admin API's changes are).
import type { Command } from 'commander';
import { ROLES, roleOf } from '../../features/users/roles.js';
import { checkRole } from '../../features/users/user-service.js';
import { invalid } from '../../platform/errors.js';
import type { UserRow } from '../../platform/sql/schema.js';
import { withServices } from './context.js';
import { printTable, readStdin } from './io.js';

/** `user …`: add, list, set, passwd, disable, enable, remove. */
export function addUserCommands(program: Command): void {
  const user = program.command('user').description('manage user accounts and their roles');
  userAccounts(user);
  userChanges(user);
}

function describeUser(u: UserRow): Record<string, unknown> {
  return {
    name: u.name,
    email: u.email,
    mobile: u.mobile,
    lang: u.lang,
    role: roleOf(u),
    enabled: Boolean(u.enabled),
    firstAccess: Boolean(u.first_access),
    locked: u.locked_until > Date.now(),
    created: new Date(u.created_at).toISOString(),
  };
}

/** user add, user list */
function userAccounts(user: Command): void {
  user
    .command('add')
    .argument('<name>', 'user name: 1-64 characters of A-Z a-z 0-9 . _ @ -, matched case-insensitively')
    .option('--email <email>', 'e-mail address (receives PINs and password links)')
    .option('--mobile <mobile>', 'mobile number in international form, e.g. +5511987654321')
    .option('--lang <lang>', 'pt, en or es (default REMESSA_LANG)')
    .option(
      '--role <role>',
      `${ROLES.join(', ')} (default user): what the account may do beyond its own files`,
    )
    .option(
      '--password-stdin',
      'read the password from standard input (else the user starts in first access)',
    )
    .description('create a user')
    .action(
      async (
        name: string,
        o: { email?: string; mobile?: string; lang?: string; role?: string; passwordStdin?: boolean },
      ) => {
        // An unknown role is refused before a password is asked for.
        if (o.role !== undefined) checkRole(o.role);
        const password = o.passwordStdin ? await readStdin() : null;
        await withServices(async (s) => {
          const fields = { email: o.email, mobile: o.mobile, lang: o.lang, role: o.role };
          const u = await s.users.create(name, fields, password);
          console.log(`created user ${u.name}${u.first_access ? ' (first access: no password yet)' : ''}`);
        });
      },
    );

  user
    .command('list')
    .option('--json', 'one JSON object per line')
    .description('list users')
    .action(async (o: { json?: boolean }) => {
      await withServices(async (s) => {
        const rows = (await s.users.list()).map(describeUser);
        // JSON lines, like `audit --json` and `outbox list --json`.
        if (o.json) {
          for (const r of rows) console.log(JSON.stringify(r));
          return;
        }
        if (rows.length === 0) return console.log('no users');
        const flag = (on: unknown, text: string) => (on ? text : '');
        printTable(
          ['NAME', 'E-MAIL', 'MOBILE', 'LANG', 'ROLE', 'STATE', 'CREATED'],
          rows.map((r) => [
            String(r['name']),
            String(r['email'] ?? '-'),
            String(r['mobile'] ?? '-'),
            String(r['lang']),
            String(r['role']),
            [
              r['enabled'] ? 'enabled' : 'disabled',
              flag(r['firstAccess'], 'first-access'),
              flag(r['locked'], 'locked'),
            ]
              .filter(Boolean)
              .join(','),
            String(r['created']),
          ]),
        );
      });
    });
}

interface UserSetOptions {
  email?: string;
  mobile?: string;
  lang?: string;
  role?: string;
  quota?: string;
  maxFileSize?: string;
}

/** user set, passwd, disable, enable, remove */
function userChanges(user: Command): void {
  user
    .command('set')
    .argument('<name>', 'user name')
    .option('--email <email>', 'e-mail address ("" to clear)')
    .option('--mobile <mobile>', 'mobile number ("" to clear)')
    .option('--lang <lang>', 'pt, en or es')
    .option('--role <role>', `${ROLES.join(', ')} (the last enabled admin keeps admin)`)
    .option('--quota <size>', 'bytes the user may hold in area and backup, e.g. 10GiB ("default" to clear)')
    .option('--max-file-size <size>', 'the user\'s largest file, e.g. 1GiB ("default" to clear)')
    .description("change a user's e-mail, mobile, language, role, quota or largest file")
    .action(async (name: string, o: UserSetOptions) => {
      if (Object.values(o).every((v) => v === undefined)) {
        throw invalid('nothing to set: give --email, --mobile, --lang, --role, --quota or --max-file-size');
      }
      await withServices(async (s) => {
        const u = await s.users.update(name, o);
        console.log(`updated user ${u.name}`);
      });
    });

  user
    .command('passwd')
    .argument('<name>', 'user name')
    .description('set a password, read from standard input; revokes the user’s tokens')
    .action(async (name: string) => {
      const password = await readStdin();
      await withServices(async (s) => {
        await s.users.setPassword(await s.users.get(name), password, 'cli');
        console.log(`password changed for ${name}`);
      });
    });

  for (const [cmd, enabled] of [
    ['disable', false],
    ['enable', true],
  ] as const) {
    user
      .command(cmd)
      .argument('<name>', 'user name')
      .description(enabled ? 'allow a user to sign in again' : 'stop a user signing in; revokes their tokens')
      .action(async (name: string) => {
        await withServices(async (s) => {
          await s.users.setEnabled(name, enabled);
          console.log(`${cmd}d user ${name}`);
        });
      });
  }

  user
    .command('remove')
    .argument('<name>', 'user name')
    .description(
      'delete a user: revokes their tokens and the links to the files in their area and backup, whose contents are purged (files they sent into other areas stay there)',
    )
    .action(async (name: string) => {
      await withServices(async (s) => {
        const { filesPurged } = await s.users.remove(name);
        console.log(
          `removed user ${name}; ${filesPurged} file(s) of theirs unreachable now, purged within a sweep`,
        );
      });
    });
}
