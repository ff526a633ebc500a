// Composition root: builds every domain service from the config, area by area
// (service-builders.ts). The CLI and the server share it.
import { type AdminReports, createAdminReports } from '../features/admin/reports.js';
import type { UserAdminService } from '../features/admin/user-admin-service.js';
import type { AuditLog } from '../features/audit/audit-log.js';
import type { AuthService } from '../features/auth/auth-service.js';
import type { FileService } from '../features/files/file-service.js';
import { FileSweeper } from '../features/files/lifecycle.js';
import type { KeyService } from '../features/keys/key-service.js';
import type { LinkControl } from '../features/links/link-control.js';
import type { RecipientNotifier } from '../features/links/recipients.js';
import type { SecureLinks } from '../features/links/secure-links.js';
import type { DeliveryTracker } from '../features/links/tracking.js';
import type { NotificationService } from '../features/notify/notification-service.js';
import type { Metrics } from '../features/ops/metrics.js';
import { Readiness } from '../features/ops/readiness.js';
import type { RecoveryService } from '../features/recovery/recovery-service.js';
import type { RequestIntake } from '../features/requests/request-intake.js';
import type { RequestService } from '../features/requests/request-service.js';
import type { SsoService } from '../features/sso/sign-in-service.js';
import type { UploadService } from '../features/uploads/upload-service.js';
import type { UserService } from '../features/users/user-service.js';
import type { WebhookService } from '../features/webhooks/webhook-service.js';
import type { BlobStore } from '../platform/blobs/blob-store.js';
import type { StorageReconciler } from '../platform/blobs/reconciler.js';
import { type Clock, systemClock } from '../platform/clock.js';
import { isUnavailable, unavailableFor } from '../platform/errors.js';
import { failureText } from '../platform/http/error-mapping.js';
import type { Logger } from '../platform/logger.js';
import type { Keys } from '../platform/security/keys.js';
import type { RateCounter } from '../platform/security/rate-counter.js';
import { type Db, type OpenDatabase, openDatabase, postgresAddress } from '../platform/sql/database.js';
import type { Dialect } from '../platform/sql/migrations.js';
import type { BackgroundJob } from '../platform/worker.js';
import type { Config } from './config.js';
import {
  type Accounts,
  buildAccounts,
  buildCore,
  buildMessaging,
  buildOutbox,
  buildRequests,
  buildSso,
  buildStorage,
  buildUploads,
  type Core,
  type Storage,
} from './service-builders.js';

/** How long shutdown waits for a last try at downloads' bookkeeping (FileService.retryBookkeeping). */
const SHUTDOWN_RETRY_MS = 5000;

export interface Services {
  config: Config;
  log: Logger;
  clock: Clock;
  db: Db;
  dialect: Dialect;
  keys: Keys;
  audit: AuditLog;
  users: UserService;
  /** The admin API's accounts: searches, usage, changes named by the acting admin. */
  userAdmin: UserAdminService;
  auth: AuthService;
  /** API keys: created, listed, revoked; verified for AuthService. */
  apiKeys: KeyService;
  /** Single sign-on with OpenID Connect; null when REMESSA_OIDC_ISSUER is unset. */
  sso: SsoService | null;
  /** Request rate limits, counted in the shared database. */
  rateCounter: RateCounter;
  blobs: BlobStore;
  /** Start-up recovery, the sweeper's storage pass and `remessa storage check`. */
  reconciler: StorageReconciler;
  files: FileService;
  /** Persistent outbox: e-mail and SMS with retries. */
  notify: NotificationService;
  /** Password recovery and first access. */
  recovery: RecoveryService;
  /** Recipient links: PIN gate, PIN sending, link info. */
  secureLinks: SecureLinks;
  /** Upload recipients: their links and messages, and sending one again. */
  recipients: RecipientNotifier;
  /** Delivery tracking: per recipient, message status and downloads. */
  tracking: DeliveryTracker;
  /** Taking back what was sent: delete a file, revoke a recipient's link, change expiry and limits. */
  linkControl: LinkControl;
  /** Webhook subscriptions; events are made from audit rows. */
  webhooks: WebhookService;
  /** What GET {base}/readyz checks: the database and the blob store answer. */
  readiness: Readiness;
  /** Prometheus series; served only when REMESSA_METRICS_PORT is set. */
  metrics: Metrics;
  /** Resumable (tus) uploads. */
  uploads: UploadService;
  /** Upload requests: the requester's side (and the admin API's). */
  requests: RequestService;
  /** Upload requests: the outsider's page, PIN and the gate of their uploads. */
  requestIntake: RequestIntake;
  /** The admin API's reports: audit search, transfers, outbox, statistics. */
  adminReports: AdminReports;
  /** Jobs `remessa serve` runs in the background (each domain adds its own). */
  jobs: BackgroundJob[];
  close(): Promise<void>;
}

export interface ServiceOptions {
  clock?: Clock;
  /** false: background jobs only run when a test calls runOnce() */
  startWorkers?: boolean;
  /** Tests: a blob store to use instead of the configured one (e.g. a failing memory store). */
  blobStore?: BlobStore;
}

export async function createServices(
  config: Config,
  log: Logger,
  opts: ServiceOptions = {},
): Promise<Services> {
  const database = await openPostgresOrSqlite(config, log);
  try {
    return await assemble(config, log, opts, database);
  } catch (err) {
    // No secret, a full disk at crash recovery…: nothing may stay open (a pool would keep the
    // process alive).
    await database.close();
    throw err;
  }
}

/** The database, saying which PostgreSQL it waits for and, if it gives up, why (bounded: config.ts). */
async function openPostgresOrSqlite(config: Config, log: Logger): Promise<OpenDatabase> {
  const at = config.databaseUrl ? postgresAddress(config.databaseUrl) : null;
  if (at) log.info({ database: at }, `waiting for PostgreSQL at ${at}`);
  try {
    return await openDatabase(config, (err) => log.warn({ err }, 'PostgreSQL connection lost; reconnecting'));
  } catch (err) {
    // The first query is the migrations', which report the driver's error as their cause.
    const why = isUnavailable(err) ? err : (err as Error | null)?.cause;
    if (!at || !isUnavailable(why)) throw err;
    throw unavailableFor(
      `PostgreSQL at ${at} is not reachable (REMESSA_CONNECT_TIMEOUT_SECONDS=${config.connectTimeoutSeconds}, REMESSA_BACKEND_TIMEOUT_SECONDS=${config.backendTimeoutSeconds}): ${(why as Error).message}`,
    );
  }
}

async function assemble(
  config: Config,
  log: Logger,
  opts: ServiceOptions,
  database: OpenDatabase,
): Promise<Services> {
  const core = buildCore(config, log, opts.clock ?? systemClock, database);
  const accounts = buildAccounts(core);
  // The audit log has always named a failed upload by its HTTP answer ("413 file larger …").
  const storage = await buildStorage(core, accounts, opts.blobStore, failureText);
  const outbox = buildOutbox(core, opts.startWorkers !== false);
  const messaging = buildMessaging(core, accounts, storage, outbox);
  const { requests, requestIntake, requestBatches } = buildRequests(core, accounts, storage, outbox);
  const uploads = buildUploads(core, accounts, storage, requestIntake);
  const sso = buildSso(core, accounts);
  const jobs = [
    ...backgroundJobs(core, accounts, storage, outbox.notify, uploads, sso),
    core.metrics.instrument(requestBatches.job()),
  ];
  const { clock, db, keys, audit, metrics } = core;
  const { users, auth, apiKeys, rateCounter } = accounts;
  const { blobs, reconciler, files } = storage;
  const { notify } = outbox;
  return {
    config,
    log,
    clock,
    db,
    dialect: database.dialect,
    keys,
    audit,
    users,
    auth,
    apiKeys,
    sso,
    rateCounter,
    blobs,
    reconciler,
    files,
    notify,
    ...messaging,
    readiness: new Readiness({ db, blobs, clock, storeIdentity: storage.storeIdentity }),
    metrics,
    uploads,
    requests,
    requestIntake,
    adminReports: createAdminReports({
      db,
      dialect: database.dialect,
      clock,
      audit,
      outbox: outbox.outbox,
      notify,
    }),
    jobs,
    close: () => shutDown(core, files, notify, blobs),
  };
}

/** The jobs `remessa serve` runs, each counted by the metrics. */
function backgroundJobs(
  { config, log, clock, audit, metrics }: Core,
  { auth, rateCounter }: Accounts,
  { files, fileStore, blobs, reconciler }: Storage,
  notify: NotificationService,
  uploads: UploadService,
  sso: SsoService | null,
): BackgroundJob[] {
  return [
    {
      name: 'upload-sweeper',
      intervalMs: config.sweepSeconds * 1000,
      run: async () => {
        const n = await uploads.sweep();
        if (n) log.info({ expired: n }, 'expired tus uploads removed');
      },
    },
    {
      name: 'download-bookkeeping',
      intervalMs: 5000,
      run: async () => {
        const waiting = await files.retryBookkeeping();
        if (waiting) log.warn({ waiting }, 'downloads whose bookkeeping waits for the database');
        logDroppedBookkeeping(files, log);
      },
    },
    { name: 'prune-revoked-tokens', intervalMs: 60 * 60 * 1000, run: () => auth.pruneRevoked() },
    { name: 'prune-rate-limits', intervalMs: 60 * 60 * 1000, run: () => rateCounter.prune() },
    ...(sso ? [{ name: 'prune-sso-sign-ins', intervalMs: 10 * 60 * 1000, run: () => sso.prune() }] : []),
    new FileSweeper({
      files,
      store: fileStore,
      blobs,
      reconciler,
      audit,
      clock,
      log,
      intervalMs: config.sweepSeconds * 1000,
    }),
    ...notify.jobs(),
  ].map((job) => metrics.instrument(job));
}

function logDroppedBookkeeping(files: FileService, log: Logger): void {
  const dropped = files.takeDropped();
  if (dropped)
    log.error(
      { dropped },
      'downloads whose bookkeeping is given up (their audit rows keep saying outcome unknown)',
    );
}

/** Services.close(): the last bookkeeping, then the outbox, the blob store and the database. */
async function shutDown(
  core: Core,
  files: FileService,
  notify: NotificationService,
  blobs: BlobStore,
): Promise<void> {
  const { log, database } = core;
  // A last try for downloads whose bookkeeping waited for the database (what is still out of
  // reach now stays as its audit row says: outcome unknown), for a few seconds at most: a
  // database that accepts connections and never answers would hold the shutdown for ever.
  let giveUp: NodeJS.Timeout | undefined;
  const left = await Promise.race([
    files.retryBookkeeping({ force: true }).catch(() => null),
    new Promise<null>((resolve) => {
      giveUp = setTimeout(() => resolve(null), SHUTDOWN_RETRY_MS);
    }),
  ]);
  clearTimeout(giveUp);
  logDroppedBookkeeping(files, log);
  if (left !== 0)
    log.error(
      { left: left ?? 'unknown' },
      'shutdown: downloads whose bookkeeping is given up (their audit rows keep saying outcome unknown)',
    );
  await notify.stop();
  blobs.close?.();
  await database.close();
}
