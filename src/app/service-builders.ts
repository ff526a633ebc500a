// The areas the composition root (services.ts) builds, in the order it builds them: each takes what
// the areas before it made.

import { UserAdminService } from '../features/admin/user-admin-service.js';
import { AuditLog } from '../features/audit/audit-log.js';
import { AuthService } from '../features/auth/auth-service.js';
import { RevokedTokenStore } from '../features/auth/revoked-token-store.js';
import { FileService } from '../features/files/file-service.js';
import { FileStore } from '../features/files/file-store.js';
import { QuotaWarnings } from '../features/files/quota-warnings.js';
import { KeyService } from '../features/keys/key-service.js';
import { KeyStore } from '../features/keys/key-store.js';
import { LinkControl } from '../features/links/link-control.js';
import { LinkStore } from '../features/links/link-store.js';
import { RecipientNotifier } from '../features/links/recipients.js';
import { SecureLinks } from '../features/links/secure-links.js';
import { DeliveryTracker } from '../features/links/tracking.js';
import { NotificationService } from '../features/notify/notification-service.js';
import { OutboxStore } from '../features/notify/outbox-store.js';
import { Templates } from '../features/notify/templates.js';
import { transportsFrom } from '../features/notify/transports.js';
import { Metrics } from '../features/ops/metrics.js';
import { ChangeTokenStore } from '../features/recovery/change-token-store.js';
import { RecoveryService } from '../features/recovery/recovery-service.js';
import { RequestBatches } from '../features/requests/request-batches.js';
import { RequestIntake } from '../features/requests/request-intake.js';
import { RequestService } from '../features/requests/request-service.js';
import { RequestStore } from '../features/requests/request-store.js';
import { SsoFlowStore } from '../features/sso/flow-store.js';
import { OidcClient } from '../features/sso/oidc-client.js';
import { SsoService } from '../features/sso/sign-in-service.js';
import type { RequestGate } from '../features/uploads/request-gate.js';
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
import type { Clock } from '../platform/clock.js';
import type { Logger } from '../platform/logger.js';
import { Keys, loadOrCreateSecret } from '../platform/security/keys.js';
import { RateCounter } from '../platform/security/rate-counter.js';
import type { Db, OpenDatabase } from '../platform/sql/database.js';
import type { Config } from './config.js';

/** What every area is built on: the database, the clock, the server secret and the audit trail. */
export interface Core {
  config: Config;
  log: Logger;
  clock: Clock;
  database: OpenDatabase;
  db: Db;
  keys: Keys;
  audit: AuditLog;
  /** Counts what the audit trail records, from the start. */
  metrics: Metrics;
}

export function buildCore(config: Config, log: Logger, clock: Clock, database: OpenDatabase): Core {
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
  return { config, log, clock, database, db, keys, audit, metrics };
}

export type Accounts = ReturnType<typeof buildAccounts>;

/** Users, sign-in tokens and request rate limits. */
export function buildAccounts({ config, database, db, keys, clock, audit }: Core) {
  const userStore = new UserStore(db, database.dialect);
  const users = new UserService(userStore, audit, clock, {
    defaultLang: config.lang,
    passwordMinLength: config.passwordMinLength,
  });
  const apiKeys = new KeyService({
    store: new KeyStore(db),
    users: userStore,
    audit,
    clock,
    commits: database.commits,
  });
  const auth = new AuthService({
    users: userStore,
    revoked: new RevokedTokenStore(db),
    audit,
    keys,
    apiKeys,
    clock,
    commits: database.commits,
    opts: config,
  });
  const rateCounter = new RateCounter(db, clock);
  return { userStore, users, auth, apiKeys, rateCounter };
}

/** Single sign-on, when an OpenID provider is configured (nothing is asked of it until a sign-in). */
export function buildSso(
  { config, db, keys, clock, audit }: Core,
  { users, auth }: Accounts,
): SsoService | null {
  if (!config.oidc) return null;
  return new SsoService({
    settings: config.oidc,
    client: new OidcClient(config.oidc, `${config.baseUrl}/auth/oidc/callback`),
    store: new SsoFlowStore(db),
    users,
    auth,
    audit,
    keys,
    clock,
    defaultLang: config.lang,
    portalUrl: `${new URL(config.baseUrl).origin}${config.portalPath}`,
  });
}

export type Storage = Awaited<ReturnType<typeof buildStorage>>;

/** The blob store (opened, then reconciled with the database) and the files and links kept in it. */
export async function buildStorage(
  core: Core,
  { users }: Accounts,
  blobStore: BlobStore | undefined,
  describeFailure: (err: unknown) => string,
) {
  const { config, log, clock, database, db, keys, audit } = core;
  const blobs = blobStore ?? (await createBlobStore(config));
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
    describeFailure,
  });
  return { blobs, storeIdentity, fileStore, linkStore, intents, uploadStore, writer, reconciler, files };
}

export type Outbox = ReturnType<typeof buildOutbox>;

/** The outbox: e-mail and SMS through their transports, webhook events through theirs. */
export function buildOutbox({ config, log, clock, db, keys, audit }: Core, autoKick: boolean) {
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
      autoKick,
    },
  });
  return { webhookStore, outbox, notify };
}

/** What sends messages through the outbox: recovery, recipients' links and PINs, webhook events. */
export function buildMessaging(core: Core, accounts: Accounts, storage: Storage, outboxes: Outbox) {
  const { config, clock, db, keys, audit } = core;
  const { users, userStore, rateCounter } = accounts;
  const { files, fileStore, linkStore } = storage;
  const { webhookStore, outbox, notify } = outboxes;
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
  // Quota warnings: an e-mail and an audit row (its webhook event) with the upload that crossed.
  new QuotaWarnings({ quotas: files.quotas, notify, audit }).register();
  const tracking = new DeliveryTracker(db, fileStore, linkStore, outbox);
  const linkControl = new LinkControl({ links: linkStore, files, users, audit, clock });
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
  const userAdmin = new UserAdminService({ users, files: fileStore, quotas: files.quotas, recovery, clock });
  return { recovery, secureLinks, recipients, tracking, linkControl, webhooks, userAdmin };
}

export type Requests = ReturnType<typeof buildRequests>;

/** Upload requests: the requester's side, the outsider's (the gate of tus uploads) and the batches. */
export function buildRequests(core: Core, accounts: Accounts, storage: Storage, { notify }: Outbox) {
  const { config, log, clock, db, keys, audit } = core;
  const { users, rateCounter } = accounts;
  const store = new RequestStore(db);
  const requests = new RequestService({
    db,
    store,
    files: storage.files,
    users,
    notify,
    audit,
    keys,
    clock,
    config,
  });
  const requestIntake = new RequestIntake({
    store,
    requests,
    users,
    notify,
    audit,
    rates: rateCounter,
    keys,
    clock,
    db,
    config,
  });
  const requestBatches = new RequestBatches({ db, store, requests, users, notify, clock, log, config });
  return { requests, requestIntake, requestBatches };
}

/** Resumable (tus) uploads, whose chunks the blob writer keeps as it keeps files' blobs. */
export function buildUploads(
  { config, log, clock, db, keys }: Core,
  { users }: Accounts,
  storage: Storage,
  requests?: RequestGate,
) {
  const { uploadStore, files, fileStore, writer, blobs, intents } = storage;
  return new UploadService({
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
    ...(requests ? { requests } : {}),
  });
}
