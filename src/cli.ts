// `remessa` command line: serve, user management and audit, all on the same REMESSA_* config.
import { createRequire } from 'node:module';
import { Command, Option } from 'commander';
import { type Config, ConfigError, loadConfig } from './config.js';
import type { UserRow } from './db/schema.js';
import { DomainError, invalid, notFound, unauthorized } from './errors.js';
import { createLogger } from './logger.js';
import { Resealer } from './security/reseal.js';
import { startServer } from './server.js';
import { createServices, type Services } from './services.js';
import { StoreMismatch } from './storage/store-identity.js';

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('Password: ');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  // Only the line ending is stripped: spaces may be part of a password.
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

function config(): Config {
  return loadConfig();
}

const pkg = createRequire(import.meta.url)('../../package.json') as { version: string };

/** What --help says about the configuration in effect: which file and data directory a command uses. */
function configHelp(): string {
  const file = process.env['REMESSA_CONFIG'];
  const lines = [
    '',
    'Configuration: REMESSA_* environment variables (README, "Configuration")',
    `  config file (REMESSA_CONFIG): ${file ? file : '(none)'}`,
  ];
  try {
    const c = loadConfig();
    lines.push(
      `  data directory (REMESSA_DATA_DIR): ${c.dataDir}`,
      `  database: ${c.databaseUrl ? 'PostgreSQL (REMESSA_DATABASE_URL)' : `SQLite ${c.dataDir}/remessa.db`}`,
      `  base URL (REMESSA_BASE_URL): ${c.baseUrl}`,
    );
  } catch (err) {
    lines.push(`  configuration error: ${(err as Error).message}`);
  }
  return `${lines.join('\n')}\n`;
}

/** Rows as aligned columns (every column but the last padded to its widest cell). */
function printTable(header: string[], rows: string[][]): void {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  for (const r of all) {
    console.log(
      r
        .map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    );
  }
}

/** Runs a command against the services (CLI logs go to stderr), always closing the database. */
async function withServices<T>(fn: (s: Services) => Promise<T>): Promise<T> {
  const services = await createServices(config(), createLogger('warn', process.stderr));
  try {
    return await fn(services);
  } finally {
    await services.close();
  }
}

function describeUser(u: UserRow): Record<string, unknown> {
  return {
    name: u.name,
    email: u.email,
    mobile: u.mobile,
    lang: u.lang,
    enabled: Boolean(u.enabled),
    firstAccess: Boolean(u.first_access),
    locked: u.locked_until > Date.now(),
    created: new Date(u.created_at).toISOString(),
  };
}

function parseTime(value: string): number {
  const t = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (Number.isNaN(t)) throw invalid(`not a time: "${value}" (use ISO 8601 or epoch ms)`);
  return t;
}

const program = new Command()
  .name('remessa')
  .description('Remessa managed file transfer. Configuration comes from REMESSA_* environment variables.')
  .version(pkg.version, '-V, --version', 'print the version')
  .helpOption('-h, --help', 'show help (with the data directory and configuration in effect)')
  .addHelpText('after', configHelp)
  .showHelpAfterError();

program
  .command('serve')
  .description('serve the API, the portal and the background workers')
  .action(async () => {
    const cfg = config();
    const log = createLogger(cfg.logLevel);
    const server = await startServer(cfg, log);
    const stop = (signal: string) => {
      log.info({ signal }, 'shutting down');
      server.close().then(
        () => process.exit(0),
        (err) => {
          log.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });

const user = program.command('user').description('manage user accounts');

user
  .command('add')
  .argument('<name>', 'user name: 1-64 characters of A-Z a-z 0-9 . _ @ -, matched case-insensitively')
  .option('--email <email>', 'e-mail address (receives PINs and password links)')
  .option('--mobile <mobile>', 'mobile number in international form, e.g. +5511987654321')
  .option('--lang <lang>', 'pt, en or es (default REMESSA_LANG)')
  .option('--password-stdin', 'read the password from standard input (else the user starts in first access)')
  .description('create a user')
  .action(
    async (name: string, o: { email?: string; mobile?: string; lang?: string; passwordStdin?: boolean }) => {
      const password = o.passwordStdin ? await readStdin() : null;
      await withServices(async (s) => {
        const u = await s.users.create(name, { email: o.email, mobile: o.mobile, lang: o.lang }, password);
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
        ['NAME', 'E-MAIL', 'MOBILE', 'LANG', 'STATE', 'CREATED'],
        rows.map((r) => [
          String(r['name']),
          String(r['email'] ?? '-'),
          String(r['mobile'] ?? '-'),
          String(r['lang']),
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

user
  .command('set')
  .argument('<name>', 'user name')
  .option('--email <email>', 'e-mail address ("" to clear)')
  .option('--mobile <mobile>', 'mobile number ("" to clear)')
  .option('--lang <lang>', 'pt, en or es')
  .description("change a user's e-mail, mobile or language")
  .action(async (name: string, o: { email?: string; mobile?: string; lang?: string }) => {
    if (o.email === undefined && o.mobile === undefined && o.lang === undefined) {
      throw invalid('nothing to set: give --email, --mobile or --lang');
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

program
  .command('audit')
  .description('show audit events, oldest first')
  .option('--user <name>', 'only events of this user name (or recipient address)')
  .option('--event <event>', 'e.g. login (with its sub-events such as login.failed), upload')
  .option('--since <time>', 'ISO 8601 time or epoch ms')
  .option('--until <time>', 'ISO 8601 time or epoch ms')
  .addOption(
    new Option('--limit <n>', 'newest N events').default('1000').argParser((v) => Number.parseInt(v, 10)),
  )
  .option('--json', 'one JSON object per line')
  .action(
    async (o: {
      user?: string;
      event?: string;
      since?: string;
      until?: string;
      limit: number;
      json?: boolean;
    }) => {
      await withServices(async (s) => {
        const rows = await s.audit.query({
          user: o.user,
          event: o.event,
          since: o.since ? parseTime(o.since) : undefined,
          until: o.until ? parseTime(o.until) : undefined,
          limit: o.limit,
        });
        if (o.json) {
          for (const r of rows) console.log(JSON.stringify({ ...r, time: new Date(r.at).toISOString() }));
          return;
        }
        if (rows.length === 0) return console.log('no audit events');
        printTable(
          ['TIME', 'EVENT', 'USER', 'REMOTE', 'FILE', 'DETAIL'],
          rows.map((r) => [
            new Date(r.at).toISOString(),
            r.event,
            r.user_name ?? '-',
            r.remote ?? '-',
            r.file_id === null ? '-' : String(r.file_id),
            r.detail ?? '',
          ]),
        );
      });
    },
  );

const outbox = program
  .command('outbox')
  .description('notifications waiting, sent, failed or only logged (no SMTP / SMS configured)');

outbox
  .command('list')
  .option('--status <status>', 'pending, sent, failed or logged')
  .addOption(
    new Option('--limit <n>', 'newest N messages').default('100').argParser((v) => Number.parseInt(v, 10)),
  )
  .option('--json', 'one JSON object per line')
  .description('list outbox messages, oldest first (no message text: see `outbox show`)')
  .action(async (o: { status?: string; limit: number; json?: boolean }) => {
    await withServices(async (s) => {
      const rows = await s.notify.list({ status: o.status, limit: o.limit });
      if (o.json) {
        for (const r of rows) console.log(JSON.stringify(r));
        return;
      }
      if (rows.length === 0) return console.log('outbox is empty');
      printTable(
        ['ID', 'CREATED', 'STATUS', 'CHANNEL', 'KIND', 'TO', 'ATTEMPTS', 'USER', 'FILE', 'ERROR'],
        rows.map((r) => [
          String(r.id),
          new Date(r.createdAt).toISOString(),
          r.status,
          r.channel,
          r.kind,
          r.recipient,
          String(r.attempts),
          r.userName ?? '-',
          r.fileId === null ? '-' : String(r.fileId),
          r.lastError ?? '',
        ]),
      );
    });
  });

outbox
  .command('show')
  .argument('<id>', 'message id, from `outbox list`')
  .option('--json', 'machine-readable output')
  .description('print one message in full, PIN and link included (for a machine without SMTP/SMS)')
  .action(async (id: string, o: { json?: boolean }) => {
    if (!/^\d+$/.test(id)) throw invalid(`not a message id: "${id}"`);
    await withServices(async (s) => {
      const m = await s.notify.show(Number(id));
      if (!m) throw notFound(`no outbox message ${id}`);
      if (o.json) return console.log(JSON.stringify(m, null, 2));
      console.log(`Message:  ${m.id} (${m.status}, ${m.attempts} attempt(s))`);
      console.log(`Channel:  ${m.channel}`);
      console.log(`To:       ${m.recipient}`);
      console.log(`Kind:     ${m.kind} (${m.lang})`);
      console.log(`Created:  ${new Date(m.createdAt).toISOString()}`);
      if (m.lastError) console.log(`Error:    ${m.lastError}`);
      if (m.subject) console.log(`Subject:  ${m.subject}`);
      console.log('');
      console.log(m.text);
    });
  });

program
  .command('storage')
  .description('file contents in the blob store')
  .command('check')
  .option('--fix', 'remove orphans (objects no file owns) older than an hour')
  .option('--json', 'machine-readable output')
  .description('verify every file has its object and report orphans; exit 1 when an object is missing')
  .action(async (o: { fix?: boolean; json?: boolean }) => {
    await withServices(async (s) => {
      const r = await s.reconciler.check(Boolean(o.fix));
      if (o.json) console.log(JSON.stringify(r));
      else {
        console.log(`storage: ${s.blobs.description}`);
        console.log(`files: ${r.rows}  objects: ${r.objects}`);
        for (const m of r.missing) console.log(`missing: ${m.key} (${m.problem})`);
        for (const x of r.orphans)
          console.log(`orphan: ${x.key} (written ${new Date(x.modifiedAt).toISOString()})`);
        console.log(
          `missing: ${r.missing.length}  orphans: ${r.orphans.length}  removed: ${r.removed}` +
            `  crashed uploads cleared: ${r.intents}  partial writes removed: ${r.partial}`,
        );
      }
      if (r.missing.length > 0) process.exitCode = 1;
    });
  });

program
  .command('secret')
  .description('the server secret (REMESSA_SECRET): rotation, docs/operations.md')
  .command('reseal')
  .option('--json', 'machine-readable output')
  .description(
    'seal every stored sealed value (link tokens, messages, webhook secrets) with the current secret; ' +
      'run during a rotation, with REMESSA_PREVIOUS_SECRET set; exit 1 if some could not be opened',
  )
  .action(async (o: { json?: boolean }) => {
    await withServices(async (s) => {
      const reports = await new Resealer({ db: s.db, keys: s.keys }).resealAll();
      if (o.json) console.log(JSON.stringify(reports));
      else
        for (const r of reports)
          console.log(`${r.name}: ${r.resealed} resealed, ${r.current} current, ${r.unreadable} unreadable`);
      if (reports.some((r) => r.unreadable > 0)) process.exitCode = 1;
    });
  });

const webhook = program
  .command('webhook')
  .description("users' webhook subscriptions (signed event deliveries, docs/webhooks.md)");

webhook
  .command('add')
  .argument('<user>', 'user whose files the events are about')
  .argument('<url>', 'https URL that receives the signed events')
  .option('--events <list>', 'comma-separated event types (default: all)')
  .option('--json', 'machine-readable output')
  .description("subscribe URL to events about USER's files; prints the signing secret once")
  .action(async (name: string, url: string, o: { events?: string; json?: boolean }) => {
    await withServices(async (s) => {
      const owner = await s.users.find(name);
      if (!owner) throw notFound(`no user ${name}`);
      const { webhook: w, secret } = await s.webhooks.add(owner, url, o.events);
      if (o.json) return console.log(JSON.stringify({ ...w, user: owner.name, secret }));
      console.log(`webhook ${w.id} for ${owner.name}: ${w.url}`);
      console.log(`events: ${w.events.join(',')}`);
      console.log(`secret: ${secret}   (shown only now; receivers verify Remessa-Signature with it)`);
    });
  });

webhook
  .command('list')
  .argument('[user]', "only this user's subscriptions")
  .option('--json', 'one JSON object per line')
  .description("list subscriptions (of USER, or everyone's), never their secrets")
  .action(async (name: string | undefined, o: { json?: boolean }) => {
    await withServices(async (s) => {
      const owner = name === undefined ? undefined : await s.users.find(name);
      if (name !== undefined && !owner) throw notFound(`no user ${name}`);
      const list = await s.webhooks.list(owner);
      if (!o.json && list.length === 0) return console.log('no webhooks');
      const rows: string[][] = [];
      for (const { userId, ...w } of list) {
        const user = (await s.users.byId(userId))?.name ?? `#${userId}`;
        if (o.json) console.log(JSON.stringify({ ...w, user }));
        else {
          const state = w.enabled ? 'enabled' : `disabled (${w.disabledReason ?? ''})`;
          rows.push([String(w.id), user, w.url, w.events.join(','), state]);
        }
      }
      if (!o.json) printTable(['ID', 'USER', 'URL', 'EVENTS', 'STATE'], rows);
    });
  });

webhook
  .command('remove')
  .argument('<id>', 'subscription id, from `webhook list`')
  .description('delete a subscription; events not yet delivered to it are dropped')
  .action(async (id: string) => {
    if (!/^\d+$/.test(id)) throw invalid(`not a webhook id: "${id}"`);
    await withServices(async (s) => {
      await s.webhooks.remove(Number(id));
      console.log(`removed webhook ${id}`);
    });
  });

// The client side: talks to a server over HTTP, never to a database.
const serverOption = () => new Option('--server <url>', 'server API base URL (default: REMESSA_SERVER)');

program
  .command('login')
  .description('sign in to a server and keep the token in the config directory (mode 0600)')
  .addOption(serverOption())
  .option('--user <name>', 'user name (default: REMESSA_USER)')
  .option('--password-stdin', 'read the password from stdin (default: REMESSA_PASSWORD)')
  .action(async (o: { server?: string; user?: string; passwordStdin?: boolean }) => {
    const { serverUrl, saveToken, configDir } = await import('./client/session.js');
    const server = serverUrl(o.server);
    const name = o.user ?? process.env['REMESSA_USER'];
    if (!name) throw invalid('no user: give --user or set REMESSA_USER');
    const password = o.passwordStdin ? await readStdin() : process.env['REMESSA_PASSWORD'];
    if (!password) throw invalid('no password: use --password-stdin or set REMESSA_PASSWORD');
    const res = await fetch(`${server}/oauth2/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'password', username: name, password }).toString(),
    });
    const body = (await res.json().catch(() => ({}))) as { access_token?: string; expires_in?: number };
    if (!res.ok || !body.access_token) throw unauthorized(`sign-in refused (${res.status})`);
    saveToken(server, {
      token: body.access_token,
      user: name,
      expires: Date.now() + (body.expires_in ?? 3600) * 1000,
    });
    console.log(`signed in to ${server} as ${name} (token in ${configDir()})`);
  });

program
  .command('logout')
  .description('revoke the saved token and forget it')
  .addOption(serverOption())
  .action(async (o: { server?: string }) => {
    const { serverUrl, forgetToken } = await import('./client/session.js');
    const server = serverUrl(o.server);
    const saved = forgetToken(server);
    if (!saved) return console.log(`not signed in to ${server}`);
    await fetch(`${server}/auth/logout`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${saved.token}` },
    }).catch(() => {});
    console.log(`signed out of ${server}`);
  });

program
  .command('send')
  .description('upload files (resumable: run again to continue an interrupted upload) and print their links')
  .argument('<files...>')
  .addOption(serverOption())
  .option('--to <user>', "upload into this user's area")
  .option('--email <list>', 'announce to these e-mail addresses (comma-separated)')
  .option('--mobile <list>', 'announce to these mobile numbers by SMS (comma-separated)')
  .option('--message <text>', 'message for the recipients')
  .option('--json', 'print the file entries as JSON')
  .action(
    async (
      files: string[],
      o: { server?: string; to?: string; email?: string; mobile?: string; message?: string; json?: boolean },
    ) => {
      const { serverUrl } = await import('./client/session.js');
      const { send } = await import('./client/send.js');
      const sent = await send(files, { ...o, server: serverUrl(o.server), json: Boolean(o.json) });
      if (o.json) console.log(JSON.stringify(sent));
      else for (const e of sent) console.log(`${e.name}  ${e.linkURL}`);
      // tus-js-client's URL storage (file locks) and idle keep-alive sockets would hold the
      // process for half a minute after the work is done.
      process.exit(0);
    },
  );

program
  .command('get')
  .description('download a link (resumable), check its SHA-256, and save it')
  .argument('<link>')
  .option('-o, --output <path>', 'where to save it (default: the file name, in this directory)')
  .option('--pin <pin>', 'PIN of a secure link (otherwise one is requested and asked for)')
  .option('--json', 'print {path, length, sha256} as JSON')
  .action(async (link: string, o: { output?: string; pin?: string; json?: boolean }) => {
    const { get } = await import('./client/get.js');
    const got = await get(link, { out: o.output, pin: o.pin, json: Boolean(o.json) });
    if (o.json) console.log(JSON.stringify(got));
    else console.log(got.path);
    process.exit(0); // idle keep-alive sockets would hold the process a while
  });

program.parseAsync(process.argv).catch((err: unknown) => {
  if (err instanceof ConfigError) {
    console.error(`remessa: configuration error: ${err.message}`);
    process.exit(2);
  }
  if (err instanceof DomainError) {
    console.error(`remessa: ${err.detail ?? err.message}`);
    process.exit(1);
  }
  if (err instanceof StoreMismatch) {
    console.error(`remessa: ${err.message}`);
    process.exit(1);
  }
  console.error('remessa:', err);
  process.exit(1);
});
