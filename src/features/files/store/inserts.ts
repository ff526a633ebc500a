// What an upload writes: its file under the first free name of its area, small contents with it,
// and its links. Compiled once, as every upload runs them.
import { sql } from 'kysely';
import { compiledQuery, type Param } from '../../../platform/sql/compiled.js';
import type { Db } from '../../../platform/sql/database.js';
import { type LockKey, takeLock } from '../../../platform/sql/locks.js';
import type { Dialect } from '../../../platform/sql/migrations.js';
import type { FileRow, LinkRow } from '../../../platform/sql/schema.js';
import { numberedName } from '../names.js';

export interface NewFile {
  ownerId: number;
  uploaderId: number;
  name: string;
  length: number;
  sha256: string;
  contentType: string;
  blobKey: string;
  blobFingerprint: string;
  createdAt: number;
  expiresAt: number;
  message: string | null;
  /** Small files: the contents themselves, committed with the row instead of a blob. */
  contents?: Buffer;
}

export interface NewLink {
  fileId: number;
  tokenHash: string;
  tokenSealed: string;
  kind: 'owner' | 'recipient';
  recipientEmail?: string | null;
  recipientMobile?: string | null;
  createdAt: number;
  /** A recipient link's download limit; null: none. */
  maxDownloads?: number | null;
}

/** Names tried by exact lookup before scanning the area: "a.txt" to "a (15).txt". */
const NAME_CANDIDATES = 16;

/** First key of the area advisory locks (the second is the owner id). */
const AREA_LOCK = 0x52454d; // 'REM'

/** The advisory lock that serialises name choice in an area (lockArea), as a group commit takes it. */
export function areaLock(ownerId: number): LockKey {
  return [AREA_LOCK, ownerId];
}

export class FileInserts {
  private readonly insertContents;
  private readonly insertFileQuery;
  private readonly takenNames;
  private readonly nameTaken;
  private readonly insertLinkQuery;

  constructor(
    db: Db,
    private readonly dialect: Dialect,
  ) {
    this.insertContents = compiledQuery(db, (param: Param<{ fileId: number; data: Buffer }>) =>
      db.insertInto('file_contents').values({ file_id: param('fileId'), data: param('data') }),
    );
    this.insertFileQuery = compileInsertFile(db);
    // Which of `count` names an area holds, by exact lookups in its unique (partial) name index.
    const takenAmong = (count: number) =>
      compiledQuery(db, (param: Param<{ ownerId: number; names: string[] }>) =>
        db
          .selectFrom('files')
          .select('name')
          .where('owner_id', '=', param('ownerId'))
          .where('state', '=', sql.lit('area'))
          .where('name', 'in', param.list('names', count)),
      );
    this.nameTaken = takenAmong(1);
    this.takenNames = takenAmong(NAME_CANDIDATES);
    this.insertLinkQuery = compileInsertLink(db);
  }

  /**
   * Serialises name choice within one area until the transaction ends. SQLite already runs one
   * writer at a time; on PostgreSQL concurrent uploads of the same name (from any instance) would
   * otherwise all pick the same free name and all but one fail on the unique index.
   */
  async lockArea(trx: Db, ownerId: number): Promise<void> {
    await takeLock(trx, this.dialect, areaLock(ownerId));
  }

  /**
   * Inserts the file under the first free name of its area: "a.txt", "a (1).txt", "a (2).txt"…
   * Must run inside a transaction; a concurrent insert of the same name surfaces as a unique
   * violation and the caller retries the transaction.
   */
  async insertFile(trx: Db, f: NewFile): Promise<FileRow> {
    // Most names are new to their area: one probe of the name index, then the wider searches.
    const taken = await this.nameTaken.first({ ownerId: f.ownerId, names: [f.name] }, trx);
    const n = !taken ? 0 : ((await this.freeNumberAmong(trx, f)) ?? (await this.freeNumberByScan(trx, f)));
    const row = await this.insertFileQuery.first(
      {
        ownerId: f.ownerId,
        uploaderId: f.uploaderId,
        name: numberedName(f.name, n),
        length: f.length,
        sha256: f.sha256,
        contentType: f.contentType,
        blobKey: f.blobKey,
        blobFingerprint: f.blobFingerprint,
        contentsInDb: f.contents ? 1 : 0,
        createdAt: f.createdAt,
        expiresAt: f.expiresAt,
        message: f.message,
      },
      trx,
    );
    if (!row) throw new Error('insert into files returned no row');
    if (f.contents) await this.insertContents.all({ fileId: row.id, data: f.contents }, trx);
    return row;
  }

  /**
   * The first free " (n)" among the first NAME_CANDIDATES names, by exact lookups in the area's unique
   * (partial) name index; undefined if all are taken.
   */
  private async freeNumberAmong(trx: Db, f: NewFile): Promise<number | undefined> {
    const candidates = Array.from({ length: NAME_CANDIDATES }, (_, n) => numberedName(f.name, n));
    const rows = await this.takenNames.all({ ownerId: f.ownerId, names: candidates }, trx);
    const taken = new Set(rows.map((r) => r.name));
    const n = candidates.findIndex((c) => !taken.has(c));
    return n < 0 ? undefined : n;
  }

  /** The first free " (n)" when the first few are all taken: every "stem (…" name of the area. */
  private async freeNumberByScan(trx: Db, f: NewFile): Promise<number> {
    const taken = new Set(
      (
        await trx
          .selectFrom('files')
          .select('name')
          .where('owner_id', '=', f.ownerId)
          .where('state', '=', 'area')
          .where((eb) => {
            // Names "stem (…" — substr/length count characters in both SQLite and PostgreSQL.
            const prefix = `${stemOf(f.name)} (`;
            return eb.or([
              eb('name', '=', f.name),
              eb(sql<string>`substr(name, 1, ${[...prefix].length})`, '=', prefix),
            ]);
          })
          .execute()
      ).map((r) => r.name),
    );
    let n = 0;
    while (taken.has(numberedName(f.name, n))) n++;
    return n;
  }

  async insertLink(trx: Db, l: NewLink): Promise<LinkRow> {
    const row = await this.insertLinkQuery.first(
      {
        fileId: l.fileId,
        tokenHash: l.tokenHash,
        tokenSealed: l.tokenSealed,
        kind: l.kind,
        recipientEmail: l.recipientEmail ?? null,
        recipientMobile: l.recipientMobile ?? null,
        createdAt: l.createdAt,
        maxDownloads: l.maxDownloads ?? null,
      },
      trx,
    );
    if (!row) throw new Error('insert into links returned no row');
    return row;
  }
}

function stemOf(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot > 0 ? name.slice(0, dot) : name;
}

/** The INSERT of a file's row, compiled once (every upload runs it). */
function compileInsertFile(db: Db) {
  type FileParams = Required<Omit<NewFile, 'contents'>> & { contentsInDb: 0 | 1 };
  return compiledQuery(db, (param: Param<FileParams>) =>
    db
      .insertInto('files')
      .values({
        owner_id: param('ownerId'),
        uploader_id: param('uploaderId'),
        name: param('name'),
        length: param('length'),
        sha256: param('sha256'),
        content_type: param('contentType'),
        blob_key: param('blobKey'),
        blob_fingerprint: param('blobFingerprint'),
        contents_in_db: param('contentsInDb'),
        state: 'area',
        created_at: param('createdAt'),
        expires_at: param('expiresAt'),
        retired_at: null,
        purge_at: null,
        message: param('message'),
      })
      .returningAll(),
  );
}

/** The INSERT of a link's row, compiled once (every upload runs it). */
function compileInsertLink(db: Db) {
  type LinkParams = Required<NewLink>;
  return compiledQuery(db, (param: Param<LinkParams>) =>
    db
      .insertInto('links')
      .values({
        file_id: param('fileId'),
        token_hash: param('tokenHash'),
        token_sealed: param('tokenSealed'),
        kind: param('kind'),
        recipient_email: param('recipientEmail'),
        recipient_mobile: param('recipientMobile'),
        pin_hash: null,
        pin_expires_at: null,
        pin_sent_at: null,
        pin_failures: 0,
        locked_until: 0,
        revoked: 0,
        downloads: 0,
        created_at: param('createdAt'),
        expires_at: null,
        max_downloads: param('maxDownloads'),
      })
      .returningAll(),
  );
}
