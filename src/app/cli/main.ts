// `remessa` command line: the operator's commands (serve, user management, audit, …, all on the
// same REMESSA_* config) and the people's client (login, send, get), in one program.
import { createRequire } from 'node:module';
import { Command } from 'commander';
import { StoreMismatch } from '../../platform/blobs/store-identity.js';
import { DomainError } from '../../platform/errors.js';
import { ConfigError, loadConfig } from '../config.js';
import { addAdminCommands } from './admin.js';
import { addClientCommands } from './client.js';
import { addKeyCommands } from './keys.js';
import { addLinkCommands } from './links.js';
import { addWebhookCommands } from './webhook.js';

const pkg = createRequire(import.meta.url)('../../../../package.json') as { version: string };

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

const program = new Command()
  .name('remessa')
  .description('Remessa managed file transfer. Configuration comes from REMESSA_* environment variables.')
  .version(pkg.version, '-V, --version', 'print the version')
  .helpOption('-h, --help', 'show help (with the data directory and configuration in effect)')
  .addHelpText('after', configHelp)
  .showHelpAfterError();

addAdminCommands(program);
addWebhookCommands(program);
addKeyCommands(program);
addLinkCommands(program);
addClientCommands(program);

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
