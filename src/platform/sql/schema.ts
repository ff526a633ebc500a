// Table types for Kysely. Times are integer milliseconds since the epoch; booleans are 0/1 integers,
// so the same SQL runs on SQLite and PostgreSQL.
import type { Generated, Insertable, Selectable, Updateable } from 'kysely';

export interface UsersTable {
  id: Generated<number>;
  name: string;
  /** lower-cased name: names match case-insensitively */
  name_key: string;
  email: string | null;
  mobile: string | null;
  lang: string;
  enabled: number;
  first_access: number;
  password_hash: string | null;
  /** Bumped to revoke every bearer token issued before (password change, disable, removal). */
  token_generation: number;
  /** 'user' | 'auditor' | 'admin' (features/users/roles.ts) */
  role: Generated<string>;
  /** When the last token was issued to the account (token endpoint or login); null before. */
  last_sign_in_at: number | null;
  failed_logins: number;
  locked_until: number;
  created_at: number;
  updated_at: number;
  /** Wrong password-recovery PINs in the window ending at recovery_window_end (any link). */
  recovery_failures: Generated<number>;
  recovery_window_end: Generated<number>;
  /** Password recovery refused until then (too many wrong PINs). */
  recovery_locked_until: Generated<number>;
  /** Locks since the last password change or unlock: each lasts twice the one before. */
  recovery_locks: Generated<number>;
  /** The OpenID provider's `sub` this account signs in as (single sign-on); null: none yet. */
  sso_subject: Generated<string | null>;
  /** Bytes this account may hold in its area and backup; null: REMESSA_QUOTA_DEFAULT (docs/quotas.md). */
  quota_bytes: Generated<number | null>;
  /** Its largest file; null: REMESSA_MAX_FILE_SIZE (never more). */
  max_file_bytes: Generated<number | null>;
  /** Bytes of its files' rows, changed in the transaction that adds or removes one. */
  usage_bytes: Generated<number>;
  /** The highest warning threshold (percent) told since usage last fell below it; 0: none. */
  quota_warned: Generated<number>;
}

export interface RevokedTokensTable {
  jti: string;
  user_id: number;
  expires_at: number;
}

export interface AuditTable {
  id: Generated<number>;
  at: number;
  event: string;
  user_name: string | null;
  remote: string | null;
  file_id: number | null;
  detail: string | null;
  /** The account that acted when it is not user_name's (an admin changing another account). */
  actor: Generated<string | null>;
  /** The bytes an upload or download moved (also in its detail); null for other events. */
  bytes: Generated<number | null>;
}

export interface FilesTable {
  id: Generated<number>;
  /** whose area (or backup area) holds the file */
  owner_id: number;
  uploader_id: number;
  name: string;
  length: number;
  sha256: string;
  content_type: string;
  blob_key: string;
  /** size-mtime-inode of the blob when written; null for rows from before it was recorded */
  blob_fingerprint: string | null;
  /** 1: the contents are in file_contents (under this id), not in the blob store */
  contents_in_db: Generated<number>;
  /** 'area' | 'backup' */
  state: string;
  created_at: number;
  /** end of link validity: the sweeper retires the file to backup then */
  expires_at: number;
  retired_at: number | null;
  /** when a backup file is purged */
  purge_at: number | null;
  message: string | null;
  /** (ext) The upload request the file arrived through, or null. */
  origin_request: Generated<string | null>;
  /** (ext) Who sent it through that request: the invited e-mail or mobile; null for an open link. */
  origin_from: Generated<string | null>;
}

/** Small files' contents, kept with their row (files.contents_in_db = 1). */
export interface FileContentsTable {
  file_id: number;
  data: Buffer;
}

export interface LinksTable {
  id: Generated<number>;
  file_id: number;
  /** sha256(token), the lookup key: a database dump alone yields no working link */
  token_hash: string;
  /** the token sealed with the server secret (AES-GCM), so lists can show the link again */
  token_sealed: string;
  /** 'owner' | 'recipient' */
  kind: string;
  recipient_email: string | null;
  recipient_mobile: string | null;
  pin_hash: string | null;
  pin_expires_at: number | null;
  pin_sent_at: number | null;
  pin_failures: number;
  locked_until: number;
  revoked: number;
  downloads: number;
  created_at: number;
  /** A recipient link's own end (ms), before its file's; null: the file's. */
  expires_at: number | null;
  /** Complete downloads after which a recipient link answers as expired; null: no limit. */
  max_downloads: number | null;
}

export interface OutboxTable {
  id: Generated<number>;
  /** 'email' | 'sms' | 'webhook' */
  channel: string;
  recipient: string;
  /** message kind, e.g. 'file-link', 'download-pin', 'password-pin' */
  kind: string;
  /** JSON of the rendered message, sealed with the server secret (it may carry a PIN) */
  payload: string;
  /** 'pending' | 'sent' | 'failed' | 'logged' */
  status: string;
  attempts: number;
  next_attempt_at: number;
  /** lease: an instance that claims a message owns it until then */
  claimed_until: number;
  last_error: string | null;
  file_id: number | null;
  user_name: string | null;
  created_at: number;
  sent_at: number | null;
  /** when the last delivery attempt ended (null before the first, and for rows from before it existed) */
  last_attempt_at: number | null;
}

export interface WebhooksTable {
  id: Generated<number>;
  /** the subscriber: gets only events about files they own or uploaded, and about themselves */
  user_id: number;
  url: string;
  /** signing secret, sealed with the server secret (it must be read back to sign) */
  secret_sealed: string;
  /** comma-separated event types, or '*' for all */
  events: string;
  enabled: number;
  /** why it stopped, e.g. 'receiver answered 410 Gone' */
  disabled_reason: string | null;
  created_at: number;
}

export interface ChangeTokensTable {
  id: Generated<number>;
  user_id: number;
  token_hash: string;
  /** 'forget' | 'firstaccess' */
  purpose: string;
  pin_hash: string | null;
  pin_expires_at: number | null;
  pin_sent_at: number | null;
  pin_failures: number;
  expires_at: number;
  used_at: number | null;
  created_at: number;
}

export interface BlobIntentsTable {
  blob_key: string;
  /** host/pid/nonce of the writing process (src/platform/blobs/blob-writer.ts) */
  writer: string;
  started_at: number;
  touched_at: number;
}

export interface RateLimitsTable {
  /** route + client address */
  key: string;
  count: number;
  window_end: number;
}

/** A tus upload (src/uploads): what it will become, how far it got, who is writing to it now. */
export interface UploadsTable {
  /** random, URL-safe; the last segment of the upload URL */
  id: string;
  uploader_id: number;
  /** the area the file goes to (metadata `d`) */
  owner_id: number;
  filename: string;
  /** metadata `i` */
  message: string | null;
  /** metadata `m` / `c`, normalised: JSON {"emails": [...], "mobiles": [...]} */
  recipients: string;
  length: number;
  /** bytes received and durable: the tus Upload-Offset */
  received: number;
  created_at: number;
  expires_at: number;
  /** host/pid/nonce of the process holding the upload (a PATCH in progress, the final commit) */
  lock_owner: string | null;
  lock_until: number | null;
  /** the file it became; null while incomplete */
  file_id: number | null;
}

/** The bytes of a tus upload so far: one blob per stretch a PATCH delivered, in offset order. */
export interface UploadChunksTable {
  upload_id: string;
  start: number;
  length: number;
  blob_key: string;
}

/** db/commit-marks.ts */
export interface CommitMarksTable {
  id: string;
  /** ms since the epoch: marks older than a few minutes are cleared */
  at: number;
}

/** features/keys: an API key, of which only the SHA-256 of its secret part is kept. */
export interface ApiKeysTable {
  /** the key's public id, also its first part (features/keys/api-keys.ts) */
  id: string;
  user_id: number;
  name: string;
  /** hex SHA-256 of the whole key */
  key_hash: string;
  /** comma-separated scopes; null: the owner's rights */
  scopes: string | null;
  created_at: number;
  expires_at: number | null;
  /** written at most once a minute per key and instance */
  last_used_at: number | null;
  revoked_at: number | null;
}

/** One value per key, shared by every instance of the installation. */
export interface SettingsTable {
  key: string;
  value: string;
}

/** A single sign-on under way: what its callback must match (src/features/sso/flow-store.ts). */
export interface SsoPendingTable {
  state: string;
  nonce: string;
  /** The PKCE code verifier, sealed (Keys.seal). */
  verifier: string;
  /** 'portal' | 'admin': where the person lands. */
  return_to: string;
  lang: string | null;
  created_at: number;
}

/** One-time codes the portal trades for the bearer token a single sign-on issued. */
export interface SsoHandoffsTable {
  /** HMAC of the code (Keys.hmac): the code itself is never stored. */
  code_hash: string;
  user_id: number;
  /** The bearer token and the provider's logout URL, sealed (Keys.seal). */
  payload: string;
  expires_at: number;
}

/** Room an upload of known length holds in its area's quota while its bytes arrive. */
export interface QuotaReservationsTable {
  id: string;
  user_id: number;
  bytes: number;
  /** A lease renewed while the upload runs: past it (a crashed instance) it holds nothing. */
  expires_at: number;
}

/** An upload request (src/features/requests/): people without an account send files to an area. */
export interface UploadRequestsTable {
  id: string;
  /** The requester. */
  user_id: number;
  /** The area the files land in (the requester's, or that of `d`). */
  owner_id: number;
  title: string;
  message: string;
  max_files: number;
  max_file_bytes: number;
  max_total_bytes: number;
  reusable: number;
  created_at: number;
  expires_at: number;
  closed_at: number | null;
  /** 'closed' (its requester), 'admin', 'batch' (a one-use request's first batch), 'full'. */
  closed_reason: string | null;
  /** Files and bytes of the uploads created under the request (finished or not, not released). */
  reserved_files: number;
  reserved_bytes: number;
  received_files: number;
  received_bytes: number;
}

/** A request's link: its open link (no recipient) or an invited address's, with its PIN. */
export interface RequestLinksTable {
  id: Generated<number>;
  request_id: string;
  token_hash: string;
  token_sealed: string;
  recipient_email: string | null;
  recipient_mobile: string | null;
  pin_hash: string | null;
  pin_expires_at: number | null;
  pin_sent_at: number | null;
  pin_failures: number;
  locked_until: number;
  created_at: number;
}

/** The files of one visit through a link, of which the requester hears once. */
export interface RequestBatchesTable {
  id: Generated<number>;
  request_id: string;
  link_id: number;
  /** Uploads of the batch neither stored nor released yet. */
  pending: number;
  /** Files of the batch stored. */
  files: number;
  created_at: number;
  last_at: number;
  /** When the batch was closed and its message queued (once, by one instance). */
  sealed_at: number | null;
}

/** A tus upload made under a request, until it is stored ('done') or released ('released'). */
export interface RequestUploadsTable {
  upload_id: string;
  request_id: string;
  link_id: number;
  batch_id: number;
  length: number;
  state: string;
}

export interface Database {
  quota_reservations: QuotaReservationsTable;
  users: UsersTable;
  revoked_tokens: RevokedTokensTable;
  audit: AuditTable;
  files: FilesTable;
  file_contents: FileContentsTable;
  links: LinksTable;
  outbox: OutboxTable;
  change_tokens: ChangeTokensTable;
  blob_intents: BlobIntentsTable;
  rate_limits: RateLimitsTable;
  webhooks: WebhooksTable;
  uploads: UploadsTable;
  upload_chunks: UploadChunksTable;
  commit_marks: CommitMarksTable;
  settings: SettingsTable;
  api_keys: ApiKeysTable;
  sso_pending: SsoPendingTable;
  sso_handoffs: SsoHandoffsTable;
  upload_requests: UploadRequestsTable;
  request_links: RequestLinksTable;
  request_batches: RequestBatchesTable;
  request_uploads: RequestUploadsTable;
}

export type UserRow = Selectable<UsersTable>;
export type NewUser = Insertable<UsersTable>;
export type UserUpdate = Updateable<UsersTable>;
export type FileRow = Selectable<FilesTable>;
export type LinkRow = Selectable<LinksTable>;
export type OutboxRow = Selectable<OutboxTable>;
export type NewOutboxRow = Insertable<OutboxTable>;
export type OutboxUpdate = Updateable<OutboxTable>;
export type ChangeTokenRow = Selectable<ChangeTokensTable>;
export type AuditRow = Selectable<AuditTable>;
export type BlobIntentRow = Selectable<BlobIntentsTable>;
export type WebhookRow = Selectable<WebhooksTable>;
export type UploadRow = Selectable<UploadsTable>;
export type UploadChunkRow = Selectable<UploadChunksTable>;
export type ApiKeyRow = Selectable<ApiKeysTable>;
export type UploadRequestRow = Selectable<UploadRequestsTable>;
export type RequestLinkRow = Selectable<RequestLinksTable>;
export type RequestBatchRow = Selectable<RequestBatchesTable>;
export type RequestUploadRow = Selectable<RequestUploadsTable>;
