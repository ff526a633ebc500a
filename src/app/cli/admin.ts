// The operator's commands (serve, audit, outbox …, storage check, secret reseal; user … in
// ./users.ts, webhook … in ./webhook.ts), all on this installation's REMESSA_* config, database
// and store.
import { type Command, Option } from 'commander';
import { invalid, notFound } from '../../platform/errors.js';
import { createLogger } from '../../platform/logger.js';
import { Resealer } from '../../platform/security/reseal.js';
import { loadConfig } from '../config.js';
import { startServer } from '../server.js';
import { withServices } from './context.js';
import { printTable } from './io.js';
import { addUserCommands } from './users.js';

function parseTime(value: string): number {
  const t = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (Number.isNaN(t)) throw invalid(`not a time: "${value}" (use ISO 8601 or epoch ms)`);
  return t;
}

/** Adds the operator's commands but webhook … (./webhook.ts) to `program`, in --help's order. */
export function addAdminCommands(program: Command): void {
  serve(program);
  addUserCommands(program);
  audit(program);
  outbox(program);
  storage(program);
  secret(program);
}

function serve(program: Command): void {
  program
    .command('serve')
    .description('serve the API, the portal and the background workers')
    .action(async () => {
      const cfg = loadConfig();
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
}

function audit(program: Command): void {
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
}

function outbox(program: Command): void {
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
}

function storage(program: Command): void {
  program
    .command('storage')
    .description('file contents in the blob store')
    .command('check')
    .option('--fix', 'remove orphans (objects no file owns) older than an hour; set usage counters right')
    .option('--json', 'machine-readable output')
    .description(
      "verify every file has its object, report orphans and compare each user's usage counter with " +
        'its files; exit 1 when an object is missing or a counter differs (and --fix was not given)',
    )
    .action(async (o: { fix?: boolean; json?: boolean }) => {
      await withServices(async (s) => {
        const r = await s.reconciler.check(Boolean(o.fix));
        const usage = await s.files.quotas.check(Boolean(o.fix));
        const differing = usage.filter((u) => u.counted !== u.recomputed);
        if (o.json) console.log(JSON.stringify({ ...r, usage }));
        else {
          console.log(`storage: ${s.blobs.description}`);
          console.log(`files: ${r.rows}  objects: ${r.objects}`);
          for (const m of r.missing) console.log(`missing: ${m.key} (${m.problem})`);
          for (const x of r.orphans)
            console.log(`orphan: ${x.key} (written ${new Date(x.modifiedAt).toISOString()})`);
          for (const u of differing)
            console.log(
              `usage: ${u.user} counted ${u.counted} bytes, files hold ${u.recomputed}${o.fix ? ' (fixed)' : ''}`,
            );
          console.log(
            `missing: ${r.missing.length}  orphans: ${r.orphans.length}  removed: ${r.removed}` +
              `  crashed uploads cleared: ${r.intents}  partial writes removed: ${r.partial}` +
              `  usage differences: ${differing.length}`,
          );
        }
        if (r.missing.length > 0 || (differing.length > 0 && !o.fix)) process.exitCode = 1;
      });
    });
}

function secret(program: Command): void {
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
            console.log(
              `${r.name}: ${r.resealed} resealed, ${r.current} current, ${r.unreadable} unreadable`,
            );
        if (reports.some((r) => r.unreadable > 0)) process.exitCode = 1;
      });
    });
}
