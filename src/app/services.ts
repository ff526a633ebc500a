// Composition root: builds every domain service from the config. The CLI and the server share it.
import { UserAdminService } from '../features/admin/user-admin-service.js';
import { AuditLog } from '../features/audit/audit-log.js';
import { AuthService } from '../features/auth/auth-service.js';
import { RevokedTokenStore } from '../features/auth/revoked-token-store.js';
import { FileService } from '../features/files/file-service.js';
import { FileStore } from '../features/files/file-store.js';
import { FileSweeper } from '../features/files/lifecycle.js';
import { LinkStore } from '../features/links/link-store.js';
import { RecipientNotifier } from '../features/links/recipients.js';
import { SecureLinks } from '../features/links/secure-links.js';
import { DeliveryTracker } from '../features/links/tracking.js';
import { NotificationService } from '../features/notify/notification-service.js';
import { OutboxStore } from '../features/notify/outbox-store.js';
import { Templates } from '../features/notify/templates.js';
import { transportsFrom } from '../features/notify/transports.js';
import { Metrics } from '../features/ops/metrics.js';
import { Readiness } from '../features/ops/readiness.js';
import { ChangeTokenStore } from '../features/recovery/change-token-store.js';
import { RecoveryService } from '../features/recovery/recovery-service.js';
import { UploadService } from '../features/uploads/upload-service.js';
import { catalogOf, UploadStore } from '../features/uploads/upload-store.js';
import { UserService } from '../features/users/user-service.js';
import { UserStore } from '../features/users/user-store.js';
import { WebhookService } from '../features/webhooks/webhook-service.js';
import { WebhookStore } from '../features/webhooks/webhook-store.js';
import { WebhookTransport } from '../features/webhooks/webhook-transport.js';
import type { BlobStore } from '../platform/blobs/blob-store.js';
import { createBlobStore } from '../platform/blobs/blob-stores.js';
import { BlobWriter } from '../platform/blobs/blob-writer.js';
import { IntentStore } from '../platform/blobs/intent-store.js';
import { StorageReconciler } from '../platform/blobs/reconciler.js';
import { ensureStoreIdentity } from '../platform/blobs/store-identity.js';
import { type Clock, systemClock } from '../platform/clock.js';
import { isUnavailable, unavailableFor } from '../platform/errors.js';
import { failureText } from '../platform/http/error-mapping.js';
import type { Logger } from '../platform/logger.js';
import { Keys, loadOrCreateSecret } from '../platform/security/keys.js';
import { RateCounter } from '../platform/security/rate-counter.js';
import { type Db, type OpenDatabase, openDatabase, postgresAddress } from '../platform/sql/database.js';
import type { Dialect } from '../platform/sql/migrations.js';
import type { BackgroundJob } from '../platform/worker.js';
import type { Config } from './config.js';

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
  /** Webhook subscriptions; events are made from audit rows. */
  webhooks: WebhookService;
  /** What GET {base}/readyz checks: the database and the blob store answer. */
  readiness: Readiness;
  /** Prometheus series; served only when REMESSA_METRICS_PORT is set. */
  metrics: Metrics;
  /** Resumable (tus) uploads. */
  uploads: UploadService;
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
  const clock = opts.clock ?? systemClock;
  const { db } = database;
  const keys = new Keys(loadOrCreateSecret(config.dataDir, config.secret), config.previousSecret);
  const audit = new AuditLog({
    db,
    dialect: database.dialect,
    clock,
    commits: database.commits,
    appends: database.appends,
  });
  const metrics = new Metrics({ db, clock, poolStats: database.poolStats });
  audit.observe((entry) => metrics.onAudit(entry));
  const userStore = new UserStore(db, database.dialect);
  const users = new UserService(userStore, audit, clock, {
    defaultLang: config.lang,
    passwordMinLength: config.passwordMinLength,
  });
  const auth = new AuthService({
    users: userStore,
    revoked: new RevokedTokenStore(db),
    audit,
    keys,
    clock,
    commits: database.commits,
    opts: config,
  });
  const rateCounter = new RateCounter(db, clock);
  const blobs = opts.blobStore ?? (await createBlobStore(config));
  log.info({ storage: blobs.description }, `checking the file store: ${blobs.description}`);
  await blobs.open();
  const storeIdentity = await ensureStoreIdentity(db, blobs);
  const fileStore = new FileStore(db, database.dialect);
  const linkStore = new LinkStore(db);
  const intents = new IntentStore(db, database.commits);
  const uploadStore = new UploadStore(db);
  // tus uploads' chunks are owned by their rows as files' blobs are by theirs.
  const writer = new BlobWriter(blobs, intents, clock, config.inlineMaxBytes);
  const reconciler = new StorageReconciler({
    store: blobs,
    intents,
    catalog: catalogOf(fileStore, uploadStore),
    clock,
    log,
    writer,
  });
  await reconciler.reconcile();
  const files = new FileService({
    db,
    store: fileStore,
    writer,
    audit,
    users,
    keys,
    clock,
    config,
    commits: database.commits,
    // The audit log has always named a failed upload by its HTTP answer ("413 file larger …").
    describeFailure: failureText,
  });
  const webhookStore = new WebhookStore(db);
  const webhookTransport = new WebhookTransport(webhookStore, keys, clock, {
    global:
      config.webhookUrl && config.webhookSecret
        ? { url: config.webhookUrl, secret: config.webhookSecret }
        : null,
    allowPrivate: config.webhookAllowPrivate,
  });
  const outbox = new OutboxStore(db);
  const notify = new NotificationService({
    db,
    store: outbox,
    keys,
    clock,
    audit,
    log,
    templates: new Templates(config.templatesDir),
    transports: { ...transportsFrom(config), webhook: webhookTransport },
    opts: {
      retry: {
        retrySeconds: config.notifyRetrySeconds,
        maxAttempts: config.notifyMaxAttempts,
        retryHours: config.notifyRetryHours,
        webhookMaxAttempts: config.webhookMaxAttempts,
      },
      autoKick: opts.startWorkers !== false,
    },
  });
  const recovery = new RecoveryService({
    db,
    tokens: new ChangeTokenStore(db),
    users,
    userStore,
    rateCounter,
    audit,
    keys,
    clock,
    notify,
    opts: { baseUrl: config.baseUrl, defaultLang: config.lang, pinSeconds: config.pinSeconds },
  });
  const userAdmin = new UserAdminService({ users, files: fileStore, recovery, clock });
  // Upload recipients (links + 'file-link' messages) and the sender's download confirmation.
  const recipients = new RecipientNotifier({
    db,
    files,
    store: fileStore,
    links: linkStore,
    outbox,
    notify,
    users,
    audit,
    clock,
    keys,
    config,
  });
  recipients.register();
  const tracking = new DeliveryTracker(db, fileStore, linkStore, outbox);
  const webhooks = new WebhookService({ store: webhookStore, notify, keys, clock, config, links: linkStore });
  audit.tap((trx, entry, at) => webhooks.onAudit(trx, entry, at));
  const secureLinks = new SecureLinks({
    db,
    links: linkStore,
    files,
    users,
    notify,
    audit,
    keys,
    clock,
    config,
  });
  const uploads = new UploadService({
    db,
    store: uploadStore,
    files,
    fileStore,
    writer,
    blobs,
    intents,
    users,
    keys,
    clock,
    log,
    config,
  });
  const logDroppedBookkeeping = () => {
    const dropped = files.takeDropped();
    if (dropped)
      log.error(
        { dropped },
        'downloads whose bookkeeping is given up (their audit rows keep saying outcome unknown)',
      );
  };
  const jobs: BackgroundJob[] = [
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
        logDroppedBookkeeping();
      },
    },
    { name: 'prune-revoked-tokens', intervalMs: 60 * 60 * 1000, run: () => auth.pruneRevoked() },
    { name: 'prune-rate-limits', intervalMs: 60 * 60 * 1000, run: () => rateCounter.prune() },
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
  return {
    config,
    log,
    clock,
    db,
    dialect: database.dialect,
    keys,
    audit,
    users,
    userAdmin,
    auth,
    rateCounter,
    blobs,
    reconciler,
    files,
    notify,
    recovery,
    secureLinks,
    recipients,
    tracking,
    webhooks,
    readiness: new Readiness({ db, blobs, clock, storeIdentity }),
    metrics,
    uploads,
    jobs,
    async close() {
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
      logDroppedBookkeeping();
      if (left !== 0)
        log.error(
          { left: left ?? 'unknown' },
          'shutdown: downloads whose bookkeeping is given up (their audit rows keep saying outcome unknown)',
        );
      await notify.stop();
      blobs.close?.();
      await database.close();
    },
  };
}
