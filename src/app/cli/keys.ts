// The operator's `key …` commands: API keys for integrations (docs/api-keys.md).
import type { Command } from 'commander';
import { SCOPES } from '../../features/keys/api-keys.js';
import { keySpec } from '../../features/keys/key-service.js';
import { notFound } from '../../platform/errors.js';
import { withServices } from './context.js';
import { printTable } from './io.js';

const BY_CLI = { via: 'cli' } as const;

/** key create, list, revoke */
export function addKeyCommands(program: Command): void {
  const key = program
    .command('key')
    .description('API keys: what integrations sign in with instead of a password');

  key
    .command('create')
    .argument('<user>', 'the account the key acts for')
    .argument('<name>', 'what the key is for, e.g. "erp nightly export"')
    .option('--expires <when>', 'ISO 8601 date or time, or a count like 90d or 12h (default: never)')
    .option('--scope <list>', `comma-separated scopes: ${SCOPES.join(', ')} (default: the owner's rights)`)
    .option('--json', 'print {id, name, key} as JSON')
    .description('make a key for USER; prints the key once (only its hash is kept)')
    .action(
      async (name: string, keyName: string, o: { expires?: string; scope?: string; json?: boolean }) => {
        await withServices(async (s) => {
          const owner = await s.users.find(name);
          if (!owner) throw notFound(`no user ${name}`);
          const spec = keySpec({ name: keyName, expires: o.expires, scopes: o.scope }, s.clock.now());
          const { key: made, secret } = await s.apiKeys.create(owner, spec, BY_CLI);
          if (o.json) return console.log(JSON.stringify({ id: made.id, name: made.name, key: secret }));
          console.log(`key ${made.id} "${made.name}" for ${made.user}`);
          console.log(
            `scopes: ${made.scopes?.join(',') ?? "the owner's rights"}; expires: ${made.expires ?? 'never'}`,
          );
          console.log(`key: ${secret}   (shown only now: use it as the password, or as a Bearer token)`);
        });
      },
    );

  key
    .command('list')
    .argument('[user]', "only this account's keys")
    .option('--json', 'one JSON object per line')
    .description("list keys (of USER, or everyone's), never the keys themselves")
    .action(async (name: string | undefined, o: { json?: boolean }) => {
      await withServices(async (s) => {
        const owner = name === undefined ? undefined : await s.users.find(name);
        if (name !== undefined && !owner) throw notFound(`no user ${name}`);
        const keys = await s.apiKeys.list(owner);
        if (o.json) {
          for (const k of keys) console.log(JSON.stringify(k));
          return;
        }
        if (keys.length === 0) return console.log('no keys');
        printTable(
          ['ID', 'USER', 'NAME', 'SCOPES', 'CREATED', 'EXPIRES', 'LAST USED', 'STATE'],
          keys.map((k) => [
            k.id,
            k.user,
            k.name,
            k.scopes?.join(',') ?? '-',
            k.created.slice(0, 16),
            k.expires?.slice(0, 16) ?? '-',
            k.lastUsed?.slice(0, 16) ?? '-',
            k.revoked
              ? 'revoked'
              : k.expires && Date.parse(k.expires) <= s.clock.now()
                ? 'expired'
                : 'active',
          ]),
        );
      });
    });

  key
    .command('revoke')
    .argument('<id>', 'key id, from `key list`')
    .description('revoke a key, and the bearer tokens obtained with it, at once on every instance')
    .action(async (id: string) => {
      await withServices(async (s) => {
        const revoked = await s.apiKeys.revoke(id, BY_CLI);
        console.log(`revoked key ${revoked.id} "${revoked.name}" of ${revoked.user}`);
      });
    });
}
