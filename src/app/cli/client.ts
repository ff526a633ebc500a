// The people's commands (login, logout, send, get): they talk to a server over HTTP, never to a
// database (src/app/client/).
import { type Command, Option } from 'commander';
import { invalid, unauthorized } from '../../platform/errors.js';
import { readStdin } from './io.js';

const serverOption = () => new Option('--server <url>', 'server API base URL (default: REMESSA_SERVER)');

/** Adds the people's commands to `program`, in the order --help lists them. */
export function addClientCommands(program: Command): void {
  session(program);
  transfers(program);
}

/** login, logout */
function session(program: Command): void {
  program
    .command('login')
    .description('sign in to a server and keep the token in the config directory (mode 0600)')
    .addOption(serverOption())
    .option('--user <name>', 'user name (default: REMESSA_USER)')
    .option('--password-stdin', 'read the password from stdin (default: REMESSA_PASSWORD)')
    .action(async (o: { server?: string; user?: string; passwordStdin?: boolean }) => {
      const { serverUrl, saveToken, configDir } = await import('../client/session.js');
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
      const { serverUrl, forgetToken } = await import('../client/session.js');
      const server = serverUrl(o.server);
      const saved = forgetToken(server);
      if (!saved) return console.log(`not signed in to ${server}`);
      await fetch(`${server}/auth/logout`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${saved.token}` },
      }).catch(() => {});
      console.log(`signed out of ${server}`);
    });
}

/** send, get */
function transfers(program: Command): void {
  program
    .command('send')
    .description(
      'upload files (resumable: run again to continue an interrupted upload) and print their links',
    )
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
        o: {
          server?: string;
          to?: string;
          email?: string;
          mobile?: string;
          message?: string;
          json?: boolean;
        },
      ) => {
        const { serverUrl } = await import('../client/session.js');
        const { send } = await import('../client/send.js');
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
      const { get } = await import('../client/get.js');
      const got = await get(link, { out: o.output, pin: o.pin, json: Boolean(o.json) });
      if (o.json) console.log(JSON.stringify(got));
      else console.log(got.path);
      process.exit(0); // idle keep-alive sockets would hold the process a while
    });
}
