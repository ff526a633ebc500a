// Schema migrations, portable between SQLite and PostgreSQL (Kysely's schema builder).
// Append new migrations; never edit a released one.
import {
  type ColumnDefinitionBuilder,
  type Kysely,
  type Migration,
  type MigrationProvider,
  Migrator,
  sql,
} from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations run before the typed schema exists
type AnyDb = Kysely<any>;

export type Dialect = 'sqlite' | 'postgres';

function idColumn(dialect: Dialect) {
  // SQLite wants INTEGER PRIMARY KEY AUTOINCREMENT; PostgreSQL an identity column.
  return (col: ColumnDefinitionBuilder) =>
    dialect === 'postgres'
      ? col.primaryKey().generatedByDefaultAsIdentity()
      : col.primaryKey().autoIncrement();
}

const initial = (dialect: Dialect): Migration => ({
  async up(db: AnyDb) {
    const id = idColumn(dialect);
    const big = 'bigint' as const;
    await db.schema
      .createTable('users')
      .addColumn('id', 'integer', id)
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('name_key', 'text', (c) => c.notNull().unique())
      .addColumn('email', 'text')
      .addColumn('mobile', 'text')
      .addColumn('lang', 'text', (c) => c.notNull())
      .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
      .addColumn('first_access', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('password_hash', 'text')
      .addColumn('token_generation', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('failed_logins', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('locked_until', big, (c) => c.notNull().defaultTo(0))
      .addColumn('created_at', big, (c) => c.notNull())
      .addColumn('updated_at', big, (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('revoked_tokens')
      .addColumn('jti', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'integer', (c) => c.notNull())
      .addColumn('expires_at', big, (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('audit')
      .addColumn('id', 'integer', id)
      .addColumn('at', big, (c) => c.notNull())
      .addColumn('event', 'text', (c) => c.notNull())
      .addColumn('user_name', 'text')
      .addColumn('remote', 'text')
      .addColumn('file_id', 'integer')
      .addColumn('detail', 'text')
      .execute();
    await db.schema.createIndex('audit_at').on('audit').column('at').execute();
    await db.schema.createIndex('audit_user').on('audit').columns(['user_name', 'at']).execute();

    await db.schema
      .createTable('files')
      .addColumn('id', 'integer', id)
      .addColumn('owner_id', 'integer', (c) => c.notNull())
      .addColumn('uploader_id', 'integer', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('length', big, (c) => c.notNull())
      .addColumn('sha256', 'text', (c) => c.notNull())
      .addColumn('content_type', 'text', (c) => c.notNull())
      .addColumn('blob_key', 'text', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('created_at', big, (c) => c.notNull())
      .addColumn('expires_at', big, (c) => c.notNull())
      .addColumn('retired_at', big)
      .addColumn('purge_at', big)
      .addColumn('message', 'text')
      .execute();
    // One name per area: the partial unique index makes " (1)" de-duplication race-free.
    await db.schema
      .createIndex('files_area_name')
      .on('files')
      .columns(['owner_id', 'name'])
      .unique()
      .where(sql.ref('state'), '=', 'area')
      .execute();
    await db.schema
      .createIndex('files_owner_state')
      .on('files')
      .columns(['owner_id', 'state', 'id'])
      .execute();
    await db.schema.createIndex('files_expiry').on('files').columns(['state', 'expires_at']).execute();
    await db.schema.createIndex('files_purge').on('files').columns(['state', 'purge_at']).execute();

    await db.schema
      .createTable('links')
      .addColumn('id', 'integer', id)
      .addColumn('file_id', 'integer', (c) => c.notNull())
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .addColumn('token_sealed', 'text', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('recipient_email', 'text')
      .addColumn('recipient_mobile', 'text')
      .addColumn('pin_hash', 'text')
      .addColumn('pin_expires_at', big)
      .addColumn('pin_sent_at', big)
      .addColumn('pin_failures', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('locked_until', big, (c) => c.notNull().defaultTo(0))
      .addColumn('revoked', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('downloads', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('created_at', big, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('links_file').on('links').column('file_id').execute();

    await db.schema
      .createTable('outbox')
      .addColumn('id', 'integer', id)
      .addColumn('channel', 'text', (c) => c.notNull())
      .addColumn('recipient', 'text', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('next_attempt_at', big, (c) => c.notNull())
      .addColumn('claimed_until', big, (c) => c.notNull().defaultTo(0))
      .addColumn('last_error', 'text')
      .addColumn('file_id', 'integer')
      .addColumn('user_name', 'text')
      .addColumn('created_at', big, (c) => c.notNull())
      .addColumn('sent_at', big)
      .execute();
    await db.schema.createIndex('outbox_due').on('outbox').columns(['status', 'next_attempt_at']).execute();

    await db.schema
      .createTable('change_tokens')
      .addColumn('id', 'integer', id)
      .addColumn('user_id', 'integer', (c) => c.notNull())
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .addColumn('purpose', 'text', (c) => c.notNull())
      .addColumn('pin_hash', 'text')
      .addColumn('pin_expires_at', big)
      .addColumn('pin_sent_at', big)
      .addColumn('pin_failures', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('expires_at', big, (c) => c.notNull())
      .addColumn('used_at', big)
      .addColumn('created_at', big, (c) => c.notNull())
      .execute();
  },
});

// Password recovery looks up a user's open change links (rate limit, revoke on change).
const changeTokensByUser: Migration = {
  async up(db: AnyDb) {
    await db.schema
      .createIndex('change_tokens_user')
      .on('change_tokens')
      .columns(['user_id', 'created_at'])
      .execute();
  },
};

// What the blob looked like when written (size, mtime, inode): a download whose blob no longer
// matches is re-hashed before it is served (integrity checking, docs/decisions.md).
const filesBlobFingerprint: Migration = {
  async up(db: AnyDb) {
    await db.schema.alterTable('files').addColumn('blob_fingerprint', 'text').execute();
  },
};

// Write intents (src/platform/blobs/blob-writer.ts): a row per blob being written, committed before the
// blob can become visible and deleted in the transaction that records the file. What survives a
// crash names exactly the blobs that may be orphans, for any number of instances on one store.
const blobIntents: Migration = {
  async up(db: AnyDb) {
    const big = 'bigint' as const;
    await db.schema
      .createTable('blob_intents')
      .addColumn('blob_key', 'text', (c) => c.primaryKey())
      .addColumn('writer', 'text', (c) => c.notNull())
      .addColumn('started_at', big, (c) => c.notNull())
      .addColumn('touched_at', big, (c) => c.notNull())
      .execute();
    // Reconciliation asks which keys have a row.
    await db.schema.createIndex('files_blob_key').on('files').column('blob_key').execute();
  },
};

// Request rate limits counted in the database (src/platform/security/rate-counter.ts), so a limit holds for
// the whole cluster instead of once per instance.
const rateLimits: Migration = {
  async up(db: AnyDb) {
    await db.schema
      .createTable('rate_limits')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('count', 'integer', (c) => c.notNull())
      .addColumn('window_end', 'bigint', (c) => c.notNull())
      .execute();
  },
};
// Per-user webhook subscriptions; the outbox remembers its last attempt (delivery
// tracking) and is looked up by file (ordering per file, tracking); download audit rows are read
// by file for the sender's tracking view.
const webhooks = (dialect: Dialect): Migration => ({
  async up(db: AnyDb) {
    await db.schema
      .createTable('webhooks')
      .addColumn('id', 'integer', idColumn(dialect))
      .addColumn('user_id', 'integer', (c) => c.notNull())
      .addColumn('url', 'text', (c) => c.notNull())
      .addColumn('secret_sealed', 'text', (c) => c.notNull())
      .addColumn('events', 'text', (c) => c.notNull())
      .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
      .addColumn('disabled_reason', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('webhooks_user').on('webhooks').column('user_id').execute();
    await db.schema.alterTable('outbox').addColumn('last_attempt_at', 'bigint').execute();
    await db.schema.createIndex('outbox_file').on('outbox').columns(['file_id', 'id']).execute();
    await db.schema.createIndex('audit_file').on('audit').columns(['file_id', 'event']).execute();
  },
});

// Resumable (tus) uploads and the chunks they have received so far (src/uploads).
const uploads: Migration = {
  async up(db: AnyDb) {
    const big = 'bigint' as const;
    await db.schema
      .createTable('uploads')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('uploader_id', 'integer', (c) => c.notNull())
      .addColumn('owner_id', 'integer', (c) => c.notNull())
      .addColumn('filename', 'text', (c) => c.notNull())
      .addColumn('message', 'text')
      .addColumn('recipients', 'text', (c) => c.notNull())
      .addColumn('length', big, (c) => c.notNull())
      .addColumn('received', big, (c) => c.notNull())
      .addColumn('created_at', big, (c) => c.notNull())
      .addColumn('expires_at', big, (c) => c.notNull())
      .addColumn('lock_owner', 'text')
      .addColumn('lock_until', big)
      .addColumn('file_id', 'integer')
      .execute();
    // Quota of open uploads per user; the sweeper's expired ones.
    await db.schema
      .createIndex('uploads_uploader')
      .on('uploads')
      .columns(['uploader_id', 'file_id'])
      .execute();
    await db.schema.createIndex('uploads_expires').on('uploads').column('expires_at').execute();
    await db.schema
      .createTable('upload_chunks')
      .addColumn('upload_id', 'text', (c) => c.notNull())
      .addColumn('start', big, (c) => c.notNull())
      .addColumn('length', big, (c) => c.notNull())
      .addColumn('blob_key', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('upload_chunks_pk', ['upload_id', 'start'])
      .execute();
    await db.schema.createIndex('upload_chunks_blob').on('upload_chunks').column('blob_key').execute();
  },
};

// The per-address budget of failed credential checks counts an address's recent `login.failed`
// rows on every Basic-auth request; with only the index on `at` that read every row of the last
// minute (at 1,500 uploads/s, 90,000 rows a request).
const auditByAddress: Migration = {
  async up(db) {
    await db.schema.createIndex('audit_remote').on('audit').columns(['event', 'remote', 'at']).execute();
  },
};

// Small uploads' contents live in the database, committed in the transaction of their
// row (src/features/files/file-store.ts; docs/decisions.md, "Small files in the database").
const fileContents = (dialect: Dialect): Migration => ({
  async up(db: AnyDb) {
    await db.schema
      .createTable('file_contents')
      // The file's id: on SQLite the rowid itself, so rows are appended, not put in a second index.
      .addColumn('file_id', dialect === 'postgres' ? 'bigint' : 'integer', (c) => c.primaryKey())
      .addColumn('data', dialect === 'postgres' ? 'bytea' : 'blob', (c) => c.notNull())
      .execute();
    await db.schema
      .alterTable('files')
      .addColumn('contents_in_db', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
  },
});

// `remessa audit --user` matches user names case-insensitively, on `lower(user_name)`,
// which the index on `(user_name, at)` cannot serve: every such query read the whole trail. An
// index on the expression itself serves it (SQLite and PostgreSQL alike), and costs each audit
// row the same as the one it replaces, which no query used. SQLite runs a migration's statements
// outside a transaction: each is written so that a run cut short (killed, disk full while the
// index is built) can simply run again.
const auditByUserName: Migration = {
  async up(db) {
    await sql`create index if not exists audit_user_lower on audit (lower(user_name), at)`.execute(db);
    await db.schema.dropIndex('audit_user').ifExists().execute();
  },
};

/** db/commit-marks.ts: how a batch whose COMMIT went unanswered learns whether it committed. */
const commitMarks: Migration = {
  async up(db) {
    await db.schema
      .createTable('commit_marks')
      .ifNotExists()
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('commit_marks_at').ifNotExists().on('commit_marks').column('at').execute();
  },
};

// Two audit indexes serve one kind of row each: the per-address count of failed sign-ins
// (AuditLog.countFailedLogins) and `--user`, whose rows have a user name. Indexing every row in
// them cost each commit of downloads' and uploads' rows a page of each (WAL frames written,
// synced and checkpointed) for rows no query reads through them; now they index only their rows.
// Written to run again after a run cut short, as auditByUserName.
const auditPartialIndexes: Migration = {
  async up(db) {
    await sql`create index if not exists audit_failed_logins on audit (remote, at)
      where event = 'login.failed'`.execute(db);
    await db.schema.dropIndex('audit_remote').ifExists().execute();
    await db.schema.dropIndex('audit_user_lower').ifExists().execute();
    await sql`create index if not exists audit_user_lower on audit (lower(user_name), at)
      where user_name is not null`.execute(db);
  },
};

// Wrong password-recovery PINs counted per account across its change links, and the lock they
// lead to (src/features/recovery/recovery-lock.ts): in the database, so every instance sees one count.
const recoveryLockout: Migration = {
  async up(db) {
    const columns = [
      ['recovery_failures', 'integer'],
      ['recovery_window_end', 'bigint'],
      ['recovery_locked_until', 'bigint'],
      ['recovery_locks', 'integer'],
    ] as const;
    for (const [name, type] of columns) {
      await db.schema
        .alterTable('users')
        .addColumn(name, type, (c) => c.notNull().defaultTo(0))
        .execute();
    }
  },
};

/** Values an installation keeps once for all its instances (storage/store-identity.ts). */
const settings: Migration = {
  async up(db) {
    await db.schema
      .createTable('settings')
      .ifNotExists()
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('value', 'text', (c) => c.notNull())
      .execute();
  },
};

// Roles (user, auditor, admin), read from the account row on every request; the last sign-in
// (the last token issued); the acting account of an audit row when it is not the row's user (an
// admin's change to another account), and the indexes the admin's searches and statistics use.
const roles: Migration = {
  async up(db) {
    await db.schema
      .alterTable('users')
      .addColumn('role', 'text', (c) => c.notNull().defaultTo('user'))
      .execute();
    await db.schema.alterTable('users').addColumn('last_sign_in_at', 'bigint').execute();
    await db.schema.alterTable('audit').addColumn('actor', 'text').execute();
    await sql`create index if not exists audit_at on audit (at)`.execute(db);
    await sql`create index if not exists audit_actor_lower on audit (lower(actor), at)
      where actor is not null`.execute(db);
  },
};

// The admin's reports (docs/admin.md): the bytes an upload or download moved, in a column of its
// row (also in its detail), so the statistics sum them without parsing JSON; rows from before are
// filled from their detail. The statistics read their rows' time, event, user and bytes from one
// index holding only the events they count (a covering, indexed range scan on SQLite and
// PostgreSQL); the transfers list finds purged files through an index of their `file.purged` rows.
// Written to run again after a run cut short, as auditByUserName.
const adminReports = (dialect: Dialect): Migration => ({
  async up(db) {
    const audit = (await db.introspection.getTables()).find((t) => t.name === 'audit');
    if (!audit?.columns.some((c) => c.name === 'bytes'))
      await db.schema.alterTable('audit').addColumn('bytes', 'bigint').execute();
    // The detail's top-level "bytes" (PostgreSQL: read by pattern, so no row's text can fail a cast).
    const fromDetail =
      dialect === 'postgres'
        ? sql`substring(detail from '"bytes":([0-9]{1,18})[,}]')::bigint`
        : sql`json_extract(detail, '$.bytes')`;
    const isJson = dialect === 'postgres' ? sql`detail like '{%'` : sql`json_valid(detail)`;
    await sql`update audit set bytes = ${fromDetail}
      where event in ('upload', 'download') and bytes is null and ${isJson}`.execute(db);
    await sql`create index if not exists audit_stats on audit (at, event, user_name, bytes)
      where event in (${sql.raw(STATS_EVENTS_SQL)})`.execute(db);
    await sql`create index if not exists audit_purged on audit (file_id)
      where event = 'file.purged'`.execute(db);
  },
});

// API keys for integrations (src/features/keys): only a hash of each key is kept.
const apiKeys: Migration = {
  async up(db: AnyDb) {
    await db.schema
      .createTable('api_keys')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'integer', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('key_hash', 'text', (c) => c.notNull())
      .addColumn('scopes', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint')
      .addColumn('last_used_at', 'bigint')
      .addColumn('revoked_at', 'bigint')
      .execute();
    await db.schema.createIndex('api_keys_user').on('api_keys').column('user_id').execute();
  },
};

// Single sign-on (src/features/sso/): an account bound to its provider's subject (`sub`, one
// account per subject), the sign-ins under way (state → nonce and sealed PKCE verifier, consumed by
// one DELETE so a replayed state fails on every instance) and the one-time hand-off codes that
// carry a new bearer token from the callback to the portal (stored as a hash, the token sealed).
const sso: Migration = {
  async up(db) {
    await db.schema.alterTable('users').addColumn('sso_subject', 'text').execute();
    await sql`create unique index if not exists users_sso_subject on users (sso_subject)
      where sso_subject is not null`.execute(db);
    await db.schema
      .createTable('sso_pending')
      .ifNotExists()
      .addColumn('state', 'text', (c) => c.primaryKey())
      .addColumn('nonce', 'text', (c) => c.notNull())
      .addColumn('verifier', 'text', (c) => c.notNull())
      .addColumn('return_to', 'text', (c) => c.notNull())
      .addColumn('lang', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('sso_handoffs')
      .ifNotExists()
      .addColumn('code_hash', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'integer', (c) => c.notNull())
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .execute();
    await sql`create index if not exists sso_pending_created on sso_pending (created_at)`.execute(db);
    await sql`create index if not exists sso_handoffs_expires on sso_handoffs (expires_at)`.execute(db);
  },
};

// Control over sent links (src/features/links/link-control.ts): a recipient link's own expiry and
// a limit of complete downloads, after which it answers as an expired one.
const linkLimits: Migration = {
  async up(db: AnyDb) {
    await db.schema.alterTable('links').addColumn('expires_at', 'bigint').execute();
    await db.schema.alterTable('links').addColumn('max_downloads', 'integer').execute();
  },
};

// Quotas (docs/quotas.md): per-account limits and the usage counter, filled from the files held
// now; room held by POST /upload's bodies of known length while they arrive (tus uploads hold
// theirs in their own rows, found through uploads_owner).
const quotas: Migration = {
  async up(db: AnyDb) {
    await db.schema.alterTable('users').addColumn('quota_bytes', 'bigint').execute();
    await db.schema.alterTable('users').addColumn('max_file_bytes', 'bigint').execute();
    await db.schema
      .alterTable('users')
      .addColumn('usage_bytes', 'bigint', (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema
      .alterTable('users')
      .addColumn('quota_warned', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
    await sql`update users set usage_bytes =
      (select coalesce(sum(length), 0) from files where files.owner_id = users.id)`.execute(db);
    await db.schema
      .createTable('quota_reservations')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'integer', (c) => c.notNull())
      .addColumn('bytes', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .execute();
    await sql`create index if not exists quota_reservations_user on quota_reservations (user_id)`.execute(db);
    await sql`create index if not exists uploads_owner on uploads (owner_id) where file_id is null`.execute(
      db,
    );
  },
};

// Upload requests (src/features/requests/): a user asks people without an account for files.
// Each request's limits are reserved per upload at its creation (reserved_*: a conditional update
// in the transaction of the upload row, so concurrent creations on any instance cannot overfill);
// received_* count the files that arrived. Its links (one open link, or one per invited address
// with its PIN columns) and the batches its requester hears of once each; request_uploads ties a
// tus upload to its request, link and batch until it is stored or released. A file that arrived
// names its request and its sender (files.origin_*).
const uploadRequests = (dialect: Dialect): Migration => ({
  async up(db: AnyDb) {
    const big = 'bigint' as const;
    await db.schema
      .createTable('upload_requests')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'integer', (c) => c.notNull())
      .addColumn('owner_id', 'integer', (c) => c.notNull())
      .addColumn('title', 'text', (c) => c.notNull())
      .addColumn('message', 'text', (c) => c.notNull())
      .addColumn('max_files', 'integer', (c) => c.notNull())
      .addColumn('max_file_bytes', big, (c) => c.notNull())
      .addColumn('max_total_bytes', big, (c) => c.notNull())
      .addColumn('reusable', 'integer', (c) => c.notNull())
      .addColumn('created_at', big, (c) => c.notNull())
      .addColumn('expires_at', big, (c) => c.notNull())
      .addColumn('closed_at', big)
      .addColumn('closed_reason', 'text')
      .addColumn('reserved_files', 'integer', (c) => c.notNull())
      .addColumn('reserved_bytes', big, (c) => c.notNull())
      .addColumn('received_files', 'integer', (c) => c.notNull())
      .addColumn('received_bytes', big, (c) => c.notNull())
      .execute();
    await sql`create index if not exists upload_requests_user on upload_requests (user_id, created_at)`.execute(
      db,
    );
    await sql`create index if not exists upload_requests_created on upload_requests (created_at)`.execute(db);
    await db.schema
      .createTable('request_links')
      .addColumn('id', 'integer', idColumn(dialect))
      .addColumn('request_id', 'text', (c) => c.notNull())
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .addColumn('token_sealed', 'text', (c) => c.notNull())
      .addColumn('recipient_email', 'text')
      .addColumn('recipient_mobile', 'text')
      .addColumn('pin_hash', 'text')
      .addColumn('pin_expires_at', big)
      .addColumn('pin_sent_at', big)
      .addColumn('pin_failures', 'integer', (c) => c.notNull())
      .addColumn('locked_until', big, (c) => c.notNull())
      .addColumn('created_at', big, (c) => c.notNull())
      .execute();
    await sql`create index if not exists request_links_request on request_links (request_id)`.execute(db);
    await db.schema
      .createTable('request_batches')
      .addColumn('id', 'integer', idColumn(dialect))
      .addColumn('request_id', 'text', (c) => c.notNull())
      .addColumn('link_id', 'integer', (c) => c.notNull())
      .addColumn('pending', 'integer', (c) => c.notNull())
      .addColumn('files', 'integer', (c) => c.notNull())
      .addColumn('created_at', big, (c) => c.notNull())
      .addColumn('last_at', big, (c) => c.notNull())
      .addColumn('sealed_at', big)
      .execute();
    // One gathering batch per link: two instances opening one at once, the second joins the first.
    await sql`create unique index if not exists request_batches_open on request_batches (link_id)
      where sealed_at is null`.execute(db);
    await sql`create index if not exists request_batches_due on request_batches (last_at)
      where sealed_at is null`.execute(db);
    await db.schema
      .createTable('request_uploads')
      .addColumn('upload_id', 'text', (c) => c.primaryKey())
      .addColumn('request_id', 'text', (c) => c.notNull())
      .addColumn('link_id', 'integer', (c) => c.notNull())
      .addColumn('batch_id', 'integer', (c) => c.notNull())
      .addColumn('length', big, (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .execute();
    await db.schema.alterTable('files').addColumn('origin_request', 'text').execute();
    await db.schema.alterTable('files').addColumn('origin_from', 'text').execute();
    await sql`create index if not exists files_origin_request on files (origin_request)
      where origin_request is not null`.execute(db);
  },
});

/**
 * The events the statistics count, as the SQL list of the partial index audit_stats: a query
 * reads through that index only when its WHERE names the same list (src/features/admin/stats-store.ts).
 */
export const STATS_EVENTS = ['upload', 'download', 'login.failed', 'user.locked', 'notify.failed'] as const;
const STATS_EVENTS_SQL = STATS_EVENTS.map((e) => `'${e}'`).join(', ');

const migrations = (dialect: Dialect): Record<string, Migration> => ({
  '0001_initial': initial(dialect),
  '0002_change_tokens_user': changeTokensByUser,
  '0004_files_blob_fingerprint': filesBlobFingerprint,
  '0012_blob_intents': blobIntents,
  '0012_rate_limits': rateLimits,
  '0016_webhooks': webhooks(dialect),
  '0014_uploads': uploads,
  '0017_audit_by_address': auditByAddress,
  '0018_file_contents': fileContents(dialect),
  '0019_audit_by_user_name': auditByUserName,
  '0020_commit_marks': commitMarks,
  '0021_audit_partial_indexes': auditPartialIndexes,
  '0022_recovery_lockout': recoveryLockout,
  '0023_settings': settings,
  '0024_roles': roles,
  '0025_admin_reports': adminReports(dialect),
  '0026_api_keys': apiKeys,
  '0027_sso': sso,
  '0028_link_limits': linkLimits,
  '0029_quotas': quotas,
  '0030_upload_requests': uploadRequests(dialect),
});

class StaticProvider implements MigrationProvider {
  constructor(private readonly dialect: Dialect) {}
  async getMigrations() {
    return migrations(this.dialect);
  }
}

export async function migrate(db: AnyDb, dialect: Dialect): Promise<void> {
  const provider = new StaticProvider(dialect);
  const { error, results } = await new Migrator({
    db,
    provider,
    allowUnorderedMigrations: true,
  }).migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    throw new Error(
      `database migration failed${failed ? ` at ${failed.migrationName}` : ''}: ${String(error)}`,
      { cause: error },
    );
  }
}
