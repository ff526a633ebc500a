// The operator's webhook commands: users' subscriptions to signed event deliveries.
import type { Command } from 'commander';
import { invalid, notFound } from '../../platform/errors.js';
import { withServices } from './context.js';
import { printTable } from './io.js';

/** webhook add, list, remove */
export function addWebhookCommands(program: Command): void {
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
}
