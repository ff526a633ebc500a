// The lookups every download runs (the link and its file, small files' contents, the count of
// complete downloads): compiled once, read as values, contents kept for a while after a read.
import { type Compilable, sql } from 'kysely';
import { compiledQuery, type Param, rowOfValues } from '../../../platform/sql/compiled.js';
import type { Db } from '../../../platform/sql/database.js';
import type { Dialect } from '../../../platform/sql/migrations.js';
import type { FileRow, LinkRow } from '../../../platform/sql/schema.js';
import { RecentContents } from './recent-contents.js';

export interface FileWithLink {
  file: FileRow;
  link: LinkRow;
}

/** Every column of links (byTokenHash makes its rows from their values in this order). */
const LINK_COLUMNS = [
  'id',
  'file_id',
  'token_hash',
  'token_sealed',
  'kind',
  'recipient_email',
  'recipient_mobile',
  'pin_hash',
  'pin_expires_at',
  'pin_sent_at',
  'pin_failures',
  'locked_until',
  'revoked',
  'downloads',
  'created_at',
  'expires_at',
  'max_downloads',
] as const satisfies readonly (keyof LinkRow)[];

/** Every column of files, selected after a link's as `f_<column>` (byTokenHash). */
const FILE_COLUMNS = [
  'id',
  'owner_id',
  'uploader_id',
  'name',
  'length',
  'sha256',
  'content_type',
  'blob_key',
  'blob_fingerprint',
  'contents_in_db',
  'state',
  'created_at',
  'expires_at',
  'retired_at',
  'purge_at',
  'message',
  'origin_request',
  'origin_from',
] as const satisfies readonly (keyof FileRow)[];
// A column added to links or files and not listed above fails to compile here.
const everyColumn: [
  Exclude<keyof LinkRow, (typeof LINK_COLUMNS)[number]>,
  Exclude<keyof FileRow, (typeof FILE_COLUMNS)[number]>,
] extends [never, never]
  ? true
  : never = true;
void everyColumn;

const linkOfValues = rowOfValues<LinkRow>(LINK_COLUMNS);
const fileOfValues = rowOfValues<FileRow>(FILE_COLUMNS, LINK_COLUMNS.length);

/**
 * Bytes of small files' contents kept in memory after a read. Reading a 4 KiB blob out of SQLite
 * cost 7-16 µs (the copy into a new Buffer), most of a small download's database time; ids are
 * never reused, and contents never change under their id, so a copy stays right until the purge.
 */
const RECENT_CONTENTS_BYTES = 8 * 1024 * 1024;

export class FileLookups {
  private readonly fileById;
  private readonly linkWithFile;
  private readonly countDownloadQuery;
  private readonly contentsByFile;
  private readonly recentContents = new RecentContents(RECENT_CONTENTS_BYTES);

  constructor(
    private readonly db: Db,
    private readonly dialect: Dialect,
  ) {
    // The link and its file in one statement (every download starts with it), read as values.
    this.linkWithFile = compiledQuery(
      db,
      (param: Param<{ tokenHash: string }>) =>
        db
          .selectFrom('links')
          .innerJoin('files', 'files.id', 'links.file_id')
          .select(LINK_COLUMNS.map((c) => `links.${c}` as const))
          .select((eb) => FILE_COLUMNS.map((c) => eb.ref(`files.${c}`).as(`f_${c}`)))
          .where('links.token_hash', '=', param('tokenHash')) as unknown as Compilable<unknown>,
    );
    this.fileById = compiledQuery(db, (param: Param<{ id: number }>) =>
      db.selectFrom('files').selectAll().where('id', '=', param('id')),
    );
    this.countDownloadQuery = compiledQuery(db, (param: Param<{ id: number; count: number }>) =>
      db
        .updateTable('links')
        .set((eb) => ({ downloads: eb('downloads', '+', param('count')) }))
        .where('id', '=', param('id'))
        .returning('downloads'),
    );
    this.contentsByFile = compiledQuery(db, (param: Param<{ fileId: number }>) =>
      db.selectFrom('file_contents').select('data').where('file_id', '=', param('fileId')),
    );
  }

  /**
   * The contents of a file kept in the database (files.contents_in_db), or undefined. `cached`:
   * may come from the copies of recently read ones (a file's contents never change under its id).
   */
  async contents(fileId: number, { cached = true } = {}): Promise<Buffer | undefined> {
    const hit = cached ? this.recentContents.get(fileId) : undefined;
    if (hit) return hit;
    const data = (await this.contentsByFile.first({ fileId }))?.data;
    if (data && cached) this.recentContents.set(fileId, data);
    return data;
  }

  async byTokenHash(tokenHash: string): Promise<FileWithLink | undefined> {
    const values = await this.linkWithFile.firstValues({ tokenHash });
    return values && { link: linkOfValues(values), file: fileOfValues(values) };
  }

  byId(id: number, db: Db = this.db): Promise<FileRow | undefined> {
    return this.fileById.first({ id }, db);
  }

  /** A file with its owner link (a finished tus upload's answer). */
  async withOwnerLink(fileId: number): Promise<FileWithLink | undefined> {
    const file = await this.byId(fileId);
    if (!file) return undefined;
    const link = await this.db
      .selectFrom('links')
      .selectAll()
      .where('file_id', '=', fileId)
      .where('kind', '=', 'owner')
      .executeTakeFirst();
    return link ? { file, link } : undefined;
  }

  /**
   * Adds complete downloads to links' counts (link id → downloads); on PostgreSQL in one statement.
   * Returns each link's count before (0: these include its first complete download).
   */
  async countDownloads(counts: Map<number, number>, db: Db = this.db): Promise<Map<number, number>> {
    // In id order, as any writer of several links must lock them (no deadlock between two).
    const rows = [...counts].sort(([a], [b]) => a - b);
    const before = new Map<number, number>();
    if (this.dialect === 'postgres' && rows.length > 1) {
      // An UPDATE … FROM locks rows in its plan's order, not the list's: lock them in order first.
      const ids = rows.map(([id]) => id);
      await sql`select id from links where id in (${sql.join(ids)}) order by id for update`.execute(db);
      const values = sql.join(rows.map(([id, n]) => sql`(${id}::integer, ${n}::integer)`));
      const updated = await sql<{ id: number; downloads: number }>`update links
        set downloads = links.downloads + v.n from (values ${values}) as v(id, n)
        where links.id = v.id returning links.id, links.downloads`.execute(db);
      for (const { id, downloads } of updated.rows) before.set(id, Number(downloads) - counts.get(id)!);
      return before;
    }
    for (const [id, n] of rows) {
      const [row] = await this.countDownloadQuery.all({ id, count: n }, db);
      if (row) before.set(id, Number(row.downloads) - n);
    }
    return before;
  }

  /** Drops the copy of a file's contents (its file was deleted). */
  forget(fileId: number): void {
    this.recentContents.delete(fileId);
  }
}
