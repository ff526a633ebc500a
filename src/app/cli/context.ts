// What an operator's command runs against: this installation's REMESSA_* config, database and store.
import { createLogger } from '../../platform/logger.js';
import { loadConfig } from '../config.js';
import { createServices, type Services } from '../services.js';

/** Runs a command against the services (CLI logs go to stderr), always closing the database. */
export async function withServices<T>(fn: (s: Services) => Promise<T>): Promise<T> {
  const services = await createServices(loadConfig(), createLogger('warn', process.stderr));
  try {
    return await fn(services);
  } finally {
    await services.close();
  }
}
