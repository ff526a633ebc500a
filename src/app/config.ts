// The one configuration module: every REMESSA_* setting is read, validated and defaulted here
// (config-reader.ts reads and checks each value). An optional JSON file (REMESSA_CONFIG) may hold
// the same keys; the environment wins over it.
import { isIP } from 'node:net';
import path from 'node:path';
import type { Role } from '../features/users/roles.js';
import { type LinkDefaultsConfig, linkSettings } from './config-links.js';
import { oidcSettings } from './config-oidc.js';
import { type QuotaConfig, quotaSettings } from './config-quotas.js';
import { ConfigError, loadFileSource, parseSize, Reader, type Source } from './config-reader.js';

export { ConfigError };

export type Lang = 'pt' | 'en' | 'es';
export const LANGS: readonly Lang[] = ['pt', 'en', 'es'];

export interface Config extends QuotaConfig, LinkDefaultsConfig {
  port: number;
  host: string;
  /** REMESSA_BASE_URL without trailing slash, e.g. http://localhost:8080/v1 */
  baseUrl: string;
  /** Path part of baseUrl where the API is mounted, e.g. /v1 ('' when the API is at the root). */
  apiPath: string;
  /** Parent of apiPath, where the browser portal lives; always ends with '/'. */
  portalPath: string;
  dataDir: string;
  lang: Lang;
  /** Explicit REMESSA_SECRET, or null to use/generate the one kept in the data dir. */
  secret: string | null;
  /**
   * REMESSA_PREVIOUS_SECRET: during a rotation, the secret being replaced; what it signed or
   * sealed is still accepted (docs/operations.md, "Rotating REMESSA_SECRET").
   */
  previousSecret: string | null;
  /** postgres://… for PostgreSQL; null for the embedded SQLite file in the data dir. */
  databaseUrl: string | null;
  /** Opening a connection to PostgreSQL or S3 (or waiting for a pooled one) fails after this long. */
  connectTimeoutSeconds: number;
  /**
   * A PostgreSQL query or S3 request that receives no byte for this long fails and its connection
   * is closed: a backend that stops answering costs a request this long, not the whole outage.
   */
  backendTimeoutSeconds: number;
  tokenSeconds: number;
  lockoutAttempts: number;
  lockoutSeconds: number;
  /** false: single sign-on only; a password is refused everywhere, a key is not (docs/api-keys.md). */
  passwordLogin: boolean;
  passwordMinLength: number;
  linkDays: number;
  backupDays: number;
  retireOnDownload: boolean;
  maxFileSize: number;
  /**
   * Uploads known (from Content-Length) to be at most this many bytes are kept in the database,
   * committed with their row: no file, no object, one shared sync (docs/decisions.md). 0: never.
   */
  inlineMaxBytes: number;
  /** 'changed': re-hash a blob before serving only when it changed on disk; 'always': hash every full download too */
  verifyDownloads: 'changed' | 'always';
  /** 'auto': downloads go out by sendfile(2) when the native module is built; 'off': always streamed */
  sendfile: 'auto' | 'off';
  /** 'auto': uploads are written with O_DIRECT where the native module and the filesystem allow; 'off': through the page cache */
  directIo: 'auto' | 'off';
  /** Where file contents live: the data dir, or an S3-compatible bucket (then `s3` is set). */
  storage: 'local' | 's3';
  s3: S3Config | null;
  /** A download whose client takes nothing for this long is cut off. */
  stallSeconds: number;
  sweepSeconds: number;
  /** tus uploads not finished within this many hours expire; the sweeper removes their bytes. */
  uploadExpiryHours: number;
  /** Unfinished tus uploads one user may hold at once. */
  uploadMaxOpen: number;
  recipientPin: boolean;
  pinSeconds: number;
  notifyRetrySeconds: number;
  /** Attempts of one e-mail or SMS before it is given up; 0: only notifyRetryHours bounds them. */
  notifyMaxAttempts: number;
  /** An e-mail or SMS not delivered this long after it was queued is given up. */
  notifyRetryHours: number;
  notifySender: boolean;
  smtpUrl: string | null;
  mailFrom: string;
  smsProvider: 'twilio' | 'webhook' | null;
  smsUrl: string | null;
  smsUser: string | null;
  smsPassword: string | null;
  smsFrom: string | null;
  templatesDir: string | null;
  /** Global webhook subscription (every event); null when not configured. */
  webhookUrl: string | null;
  webhookSecret: string | null;
  /** true: webhook URLs may point at loopback, link-local and private addresses (on-premise, tests) */
  webhookAllowPrivate: boolean;
  /** delivery attempts of one webhook event before it is given up (backoff as notifications) */
  webhookMaxAttempts: number;
  logLevel: string;
  /**
   * The reverse proxies whose X-Forwarded-For is believed (Fastify's trustProxy): their addresses
   * or ranges, or how many hops in front of Remessa; false: none. Never `true`, which would believe
   * whatever a client writes in the header.
   */
  trustProxy: false | number | string[];
  /** A request body that brings no byte for this long is answered 408 and its connection closed. */
  bodyTimeoutSeconds: number;
  /** Whole-body limit for routes that read a small body before authenticating (token, login…). */
  smallBodySeconds: number;
  /** Open connections one peer address may hold (0: no limit). */
  maxConnectionsPerAddress: number;
  /** Uploads one account may be sending at once, on this instance (0: no limit). */
  maxUploadsPerUser: number;
  /** Uploads one peer address may be sending at once, on this instance (0: no limit). */
  maxUploadsPerAddress: number;
  /** Port of the Prometheus listener (GET /metrics); null: no listener (the default). */
  metricsPort: number | null;
  /** Address the Prometheus listener binds; loopback unless the operator opens it on purpose. */
  metricsHost: string;
  /** Single sign-on with OpenID Connect (docs/sso.md); null when REMESSA_OIDC_ISSUER is unset. */
  oidc: OidcConfig | null;
}

/** Single sign-on through an OpenID provider (docs/sso.md). */
export interface OidcConfig {
  /** The issuer identifier, discovered at the first sign-in (…/.well-known/openid-configuration). */
  issuer: string;
  clientId: string;
  /** null: a public client (PKCE alone). */
  clientSecret: string | null;
  scopes: string;
  /** The sign-in button's label: "Sign in with <name>". */
  name: string;
  /** Claims holding the user name, tried in order. */
  usernameClaims: string[];
  /** null: single sign-on never changes roles. */
  roleClaim: string | null;
  /** Claim value → role (REMESSA_OIDC_ROLE_MAP). */
  roleMap: Map<string, Role>;
  /** Unknown people get an account at their first sign-in. */
  createUsers: boolean;
}

export interface S3Config {
  bucket: string;
  prefix: string;
  endpoint: string | null;
  region: string;
  forcePathStyle: boolean;
  accessKeyId: string | null;
  secretAccessKey: string | null;
}

function s3Config(r: Reader): S3Config {
  const bucket = r.optional('REMESSA_S3_BUCKET');
  if (!bucket) throw new ConfigError('REMESSA_STORAGE=s3 needs REMESSA_S3_BUCKET');
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket))
    throw new ConfigError(`REMESSA_S3_BUCKET is not a valid bucket name: "${bucket}"`);
  const endpoint = r.optional('REMESSA_S3_ENDPOINT');
  if (endpoint !== null && !/^https?:\/\/[^/?#]+\/?$/.test(endpoint))
    throw new ConfigError(
      `REMESSA_S3_ENDPOINT must be an http(s) URL such as http://127.0.0.1:9000, got "${endpoint}"`,
    );
  const accessKeyId = r.optional('REMESSA_S3_ACCESS_KEY_ID');
  const secretAccessKey = r.optional('REMESSA_S3_SECRET_ACCESS_KEY');
  if ((accessKeyId === null) !== (secretAccessKey === null))
    throw new ConfigError(
      'REMESSA_S3_ACCESS_KEY_ID and REMESSA_S3_SECRET_ACCESS_KEY go together (or neither, for the AWS default credentials)',
    );
  const region = r.str('REMESSA_S3_REGION', 'us-east-1');
  if (!/^[a-z0-9-]+$/.test(region))
    throw new ConfigError(`REMESSA_S3_REGION is not a region name: "${region}"`);
  return {
    bucket,
    prefix: r.str('REMESSA_S3_PREFIX', ''),
    endpoint: endpoint?.replace(/\/$/, '') ?? null,
    region,
    forcePathStyle: r.bool('REMESSA_S3_FORCE_PATH_STYLE', endpoint !== null),
    accessKeyId,
    secretAccessKey,
  };
}

function parseBaseUrl(raw: string): { baseUrl: string; apiPath: string; portalPath: string } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`REMESSA_BASE_URL must be an absolute http(s) URL, got "${raw}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(`REMESSA_BASE_URL must use http or https, got "${raw}"`);
  }
  if (url.search || url.hash) throw new ConfigError('REMESSA_BASE_URL must not have a query or fragment');
  const baseUrl = raw.replace(/\/+$/, '');
  const apiPath = url.pathname.replace(/\/+$/, '');
  const portalPath = apiPath.slice(0, apiPath.lastIndexOf('/') + 1) || '/';
  return { baseUrl, apiPath, portalPath };
}

/** Names proxy-addr knows for whole ranges of addresses. */
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * REMESSA_TRUST_PROXY: the proxies to trust, as addresses or CIDR ranges (comma-separated), or a
 * hop count. The client address is then the right-most address of X-Forwarded-For that is not a
 * trusted proxy's: what the nearest untrusted hop said, never what the client wrote.
 */
export function parseTrustProxy(raw: string | null): Config['trustProxy'] {
  const value = raw?.trim() ?? '';
  if (value === '' || value === 'false' || value === '0') return false;
  if (value === 'true')
    throw new ConfigError(
      "REMESSA_TRUST_PROXY=true would believe any client's X-Forwarded-For; set the addresses of your " +
        'load balancers instead (e.g. REMESSA_TRUST_PROXY=10.0.0.5 or 10.0.0.0/24,127.0.0.1), or how many ' +
        'proxies stand in front of Remessa (e.g. REMESSA_TRUST_PROXY=1)',
    );
  if (/^\d+$/.test(value)) return Number(value);
  const entries = value.split(',').map((e) => e.trim());
  for (const entry of entries) {
    const [address, prefix, ...rest] = entry.split('/');
    const family = isIP(address ?? '');
    const prefixOk =
      prefix === undefined || (/^\d+$/.test(prefix) && Number(prefix) <= (family === 6 ? 128 : 32));
    if (!PROXY_RANGE_NAMES.has(entry) && (family === 0 || !prefixOk || rest.length > 0))
      throw new ConfigError(
        `REMESSA_TRUST_PROXY must be proxy addresses or CIDR ranges (comma-separated) or a hop count, got "${entry}"`,
      );
  }
  return entries;
}

export function loadConfig(env: Source = process.env): Config {
  const src: Source = { ...loadFileSource(env), ...env };
  const r = new Reader(src);
  const port = r.int('REMESSA_PORT', 8080, 0, 65535);
  // Links and the start-up line name the port the server listens on unless told otherwise.
  const { baseUrl, apiPath, portalPath } = parseBaseUrl(
    r.str('REMESSA_BASE_URL', `http://localhost:${port}/v1`),
  );
  const checked = checkedSettings(r);
  return {
    port,
    host: r.str('REMESSA_HOST', '0.0.0.0'),
    baseUrl,
    apiPath,
    portalPath,
    dataDir: path.resolve(r.str('REMESSA_DATA_DIR', './data')),
    lang: r.oneOf('REMESSA_LANG', LANGS, 'pt'),
    secret: checked.secret,
    previousSecret: checked.previousSecret,
    databaseUrl: checked.databaseUrl,
    connectTimeoutSeconds: r.int('REMESSA_CONNECT_TIMEOUT_SECONDS', 5, 1, 3600),
    backendTimeoutSeconds: r.int('REMESSA_BACKEND_TIMEOUT_SECONDS', 30, 1, 3600),
    tokenSeconds: r.int('REMESSA_TOKEN_SECONDS', 3600, 1),
    lockoutAttempts: r.int('REMESSA_LOCKOUT_ATTEMPTS', 5, 1),
    lockoutSeconds: r.int('REMESSA_LOCKOUT_SECONDS', 900, 1),
    passwordLogin: r.bool('REMESSA_PASSWORD_LOGIN', true),
    passwordMinLength: r.int('REMESSA_PASSWORD_MIN_LENGTH', 8, 1, 1024),
    linkDays: r.int('REMESSA_LINK_DAYS', 7, 1),
    backupDays: r.int('REMESSA_BACKUP_DAYS', 30, 0),
    retireOnDownload: r.bool('REMESSA_RETIRE_ON_DOWNLOAD', false),
    ...storageSettings(r, checked),
    ...notifySettings(r, checked),
    ...limitSettings(r, checked.trustProxy),
    oidc: oidcSettings(r),
    ...quotaSettings(r),
    ...linkSettings(r),
  };
}

/** The settings checked against each other, or with a rule of their own, before the rest are read. */
interface Checked
  extends Pick<
    Config,
    | 'smsProvider'
    | 'smsUrl'
    | 'smtpUrl'
    | 'databaseUrl'
    | 'secret'
    | 'previousSecret'
    | 'webhookUrl'
    | 'webhookSecret'
    | 'trustProxy'
    | 'storage'
  > {
  maxFileSizeRaw: string | null;
}

function checkedSettings(r: Reader): Checked {
  const smsProvider = r.optional('REMESSA_SMS_PROVIDER');
  if (smsProvider !== null && smsProvider !== 'twilio' && smsProvider !== 'webhook') {
    throw new ConfigError(`REMESSA_SMS_PROVIDER must be twilio or webhook, got "${smsProvider}"`);
  }
  const smsUrl = r.optional('REMESSA_SMS_URL');
  if (smsProvider && !smsUrl) throw new ConfigError('REMESSA_SMS_PROVIDER needs REMESSA_SMS_URL');
  const smtpUrl = r.optional('REMESSA_SMTP_URL');
  if (smtpUrl && !/^smtps?:\/\//.test(smtpUrl)) {
    throw new ConfigError('REMESSA_SMTP_URL must start with smtp:// or smtps://');
  }
  const databaseUrl = r.optional('REMESSA_DATABASE_URL');
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('REMESSA_DATABASE_URL must be a postgres:// URL (leave it unset for SQLite)');
  }
  const secret = r.optional('REMESSA_SECRET');
  if (secret !== null && secret.length < 16)
    throw new ConfigError('REMESSA_SECRET must be at least 16 characters');
  const previousSecret = r.optional('REMESSA_PREVIOUS_SECRET');
  if (previousSecret !== null && previousSecret.length < 16)
    throw new ConfigError('REMESSA_PREVIOUS_SECRET must be at least 16 characters');
  const maxFileSizeRaw = r.optional('REMESSA_MAX_FILE_SIZE');
  const webhookUrl = r.optional('REMESSA_WEBHOOK_URL');
  const webhookSecret = r.optional('REMESSA_WEBHOOK_SECRET');
  if (webhookUrl && (webhookSecret === null || webhookSecret.length < 16)) {
    // Unsigned deliveries could be forged by anyone who learns the URL: refuse to start instead.
    throw new ConfigError('REMESSA_WEBHOOK_URL needs REMESSA_WEBHOOK_SECRET (at least 16 characters)');
  }
  const trustProxy = parseTrustProxy(r.optional('REMESSA_TRUST_PROXY'));
  const storage = r.oneOf('REMESSA_STORAGE', ['local', 's3'] as const, 'local');
  return {
    smsProvider,
    smsUrl,
    smtpUrl,
    databaseUrl,
    secret,
    previousSecret,
    maxFileSizeRaw,
    webhookUrl,
    webhookSecret,
    trustProxy,
    storage,
  };
}

/** Where files live, how they are checked and served, and how long they and tus uploads last. */
function storageSettings(r: Reader, { maxFileSizeRaw, storage }: Checked) {
  return {
    maxFileSize: maxFileSizeRaw ? parseSize('REMESSA_MAX_FILE_SIZE', maxFileSizeRaw) : 1024 ** 3,
    inlineMaxBytes: parseSize(
      'REMESSA_INLINE_MAX_SIZE',
      r.str('REMESSA_INLINE_MAX_SIZE', '64KiB'),
      0,
      1024 ** 2,
    ),
    verifyDownloads: r.oneOf('REMESSA_VERIFY_DOWNLOADS', ['changed', 'always'] as const, 'changed'),
    sendfile: r.oneOf('REMESSA_SENDFILE', ['auto', 'off'] as const, 'auto'),
    directIo: r.oneOf('REMESSA_DIRECT_IO', ['auto', 'off'] as const, 'auto'),
    storage,
    s3: storage === 's3' ? s3Config(r) : null,
    stallSeconds: r.int('REMESSA_STALL_SECONDS', 120, 1),
    sweepSeconds: r.int('REMESSA_SWEEP_SECONDS', 60, 1),
    uploadExpiryHours: r.int('REMESSA_UPLOAD_EXPIRY_HOURS', 24, 1),
    uploadMaxOpen: r.int('REMESSA_UPLOAD_MAX_OPEN', 20, 1),
  };
}

/** Notifications (e-mail, SMS) and webhooks. */
function notifySettings(r: Reader, { smtpUrl, smsProvider, smsUrl, webhookUrl, webhookSecret }: Checked) {
  return {
    recipientPin: r.bool('REMESSA_RECIPIENT_PIN', true),
    pinSeconds: r.int('REMESSA_PIN_SECONDS', 180, 10),
    notifyRetrySeconds: r.int('REMESSA_NOTIFY_RETRY_SECONDS', 5, 0),
    notifyMaxAttempts: r.int('REMESSA_NOTIFY_MAX_ATTEMPTS', 0, 0),
    notifyRetryHours: r.int('REMESSA_NOTIFY_RETRY_HOURS', 24, 1, 24 * 30),
    notifySender: r.bool('REMESSA_NOTIFY_SENDER', false),
    smtpUrl,
    mailFrom: r.str('REMESSA_MAIL_FROM', 'Remessa <remessa@localhost>'),
    smsProvider,
    smsUrl,
    smsUser: r.optional('REMESSA_SMS_USER'),
    smsPassword: r.optional('REMESSA_SMS_PASSWORD'),
    smsFrom: r.optional('REMESSA_SMS_FROM'),
    templatesDir: r.optional('REMESSA_TEMPLATES_DIR'),
    webhookUrl,
    webhookSecret,
    webhookAllowPrivate: r.bool('REMESSA_WEBHOOK_ALLOW_PRIVATE', false),
    webhookMaxAttempts: r.int('REMESSA_WEBHOOK_MAX_ATTEMPTS', 15, 1, 100),
  };
}

/** Logging, proxies, time and concurrency limits of requests, and the metrics listener. */
function limitSettings(r: Reader, trustProxy: Config['trustProxy']) {
  return {
    logLevel: r.oneOf(
      'REMESSA_LOG_LEVEL',
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const,
      'info',
    ),
    trustProxy,
    bodyTimeoutSeconds: r.int('REMESSA_BODY_TIMEOUT_SECONDS', 30, 1, 3600),
    smallBodySeconds: r.int('REMESSA_SMALL_BODY_SECONDS', 30, 1, 3600),
    // Behind a trusted proxy every connection comes from the proxy: no per-address limit by default.
    maxConnectionsPerAddress: r.int('REMESSA_MAX_CONNECTIONS_PER_ADDRESS', trustProxy !== false ? 0 : 256, 0),
    maxUploadsPerUser: r.int('REMESSA_MAX_UPLOADS_PER_USER', 64, 0),
    // Behind a proxy the address is the client's (X-Forwarded-For), so the limit holds there too.
    maxUploadsPerAddress: r.int('REMESSA_MAX_UPLOADS_PER_ADDRESS', 256, 0),
    metricsPort:
      r.optional('REMESSA_METRICS_PORT') === null ? null : r.int('REMESSA_METRICS_PORT', 0, 0, 65535),
    metricsHost: r.str('REMESSA_METRICS_HOST', '127.0.0.1'),
  };
}
