// Persistence of files and their links. Every state change is a conditional UPDATE whose affected
// row count says whether this caller won, so several instances can sweep at once.
import { type Compilable, sql } from 'kysely';
import { prepare, rowOfValues } from '../db/compiled.js';
import type { Db } from '../db/database.js';
import { type LockKey, takeLock } from '../db/locks.js';
import type { Dialect } from '../db/migrations.js';
import type { FileRow, LinkRow } from '../db/schema.js';
import { inTransaction } from '../db/transaction.js';
import { type BlobCatalog, keysIn } from '../storage/reconciler.js';
import { numberedName } from './names.js';

export type FileState = 'area' | 'backup' | 'purging';

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
}

export interface FileWithLink {
  file: FileRow;
  link: LinkRow;
}

export const PAGE_SIZE = 100;

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

/** Contents by file id, least recently read first; drops the oldest past `maxBytes`. */
class RecentContents {
  private readonly entries = new Map<number, Buffer>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  get(id: number): Buffer | undefined {
    const data = this.entries.get(id);
    if (data) {
      this.entries.delete(id);
      this.entries.set(id, data);
    }
    return data;
  }

  set(id: number, data: Buffer): void {
    if (data.length > this.maxBytes) return;
    this.delete(id);
    this.entries.set(id, data);
    this.bytes += data.length;
    for (const [oldest, old] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= old.length;
    }
  }

  delete(id: number): void {
    const data = this.entries.get(id);
    if (!data) return;
    this.entries.delete(id);
    this.bytes -= data.length;
  }
}

/** Names tried by exact lookup before scanning the area: "a.txt" to "a (15).txt". */
const NAME_CANDIDATES = 16;

/** First key of the area advisory locks (the second is the owner id). */
const AREA_LOCK = 0x52454d; // 'REM'

/** The advisory lock that serialises name choice in an area (lockArea), as a group commit takes it. */
export function areaLock(ownerId: number): LockKey {
  return [AREA_LOCK, ownerId];
}

export class FileStore implements BlobCatalog {
  private readonly fileById;
  // Every download runs these: compiled once.
  private readonly linkWithFile;
  private readonly countDownloadQuery;
  private readonly contentsByFile;
  private readonly recentContents = new RecentContents(RECENT_CONTENTS_BYTES);
  // And every upload these.
  private readonly insertContents;
  private readonly insertFileQuery;
  private readonly takenNames;
  private readonly nameTaken;
  private readonly insertLinkQuery;

  constructor(
    private readonly db: Db,
    private readonly dialect: Dialect,
  ) {
    // The link and its file in one statement (every download starts with it), read as values.
    this.linkWithFile = prepare<[string], unknown>(
      db,
      1,
      (p) =>
        db
          .selectFrom('links')
          .innerJoin('files', 'files.id', 'links.file_id')
          .select(LINK_COLUMNS.map((c) => `links.${c}` as const))
          .select((eb) => FILE_COLUMNS.map((c) => eb.ref(`files.${c}`).as(`f_${c}`)))
          .where('links.token_hash', '=', p<string>(0)) as unknown as Compilable<unknown>,
    );
    this.fileById = prepare<[number], FileRow>(db, 1, (p) =>
      db.selectFrom('files').selectAll().where('id', '=', p<number>(0)),
    );
    this.countDownloadQuery = prepare<[number, number], { downloads: number }>(db, 2, (p) =>
      db
        .updateTable('links')
        .set((eb) => ({ downloads: eb('downloads', '+', p<number>(1)) }))
        .where('id', '=', p<number>(0))
        .returning('downloads'),
    );
    this.contentsByFile = prepare<[number], { data: Buffer }>(db, 1, (p) =>
      db.selectFrom('file_contents').select('data').where('file_id', '=', p<number>(0)),
    );
    this.insertContents = prepare<[number, Buffer], never>(db, 2, (p) =>
      db.insertInto('file_contents').values({ file_id: p<number>(0), data: p<Buffer>(1) }),
    );
    type FileArgs = [
      number,
      number,
      string,
      number,
      string,
      string,
      string,
      string,
      number,
      number,
      number,
      string | null,
    ];
    this.insertFileQuery = prepare<FileArgs, FileRow>(db, 12, (p) =>
      db
        .insertInto('files')
        .values({
          owner_id: p(0),
          uploader_id: p(1),
          name: p(2),
          length: p(3),
          sha256: p(4),
          content_type: p(5),
          blob_key: p(6),
          blob_fingerprint: p(7),
          contents_in_db: p(8),
          state: 'area',
          created_at: p(9),
          expires_at: p(10),
          retired_at: null,
          purge_at: null,
          message: p(11),
        })
        .returningAll(),
    );
    // Which of `count` names an area holds, by exact lookups in its unique (partial) name index.
    const takenAmong = (count: number) =>
      prepare<[number, ...string[]], { name: string }>(db, 1 + count, (p) =>
        db
          .selectFrom('files')
          .select('name')
          .where('owner_id', '=', p<number>(0))
          .where('state', '=', sql.lit('area'))
          .where(
            'name',
            'in',
            Array.from({ length: count }, (_, i) => p<string>(i + 1)),
          ),
      );
    this.nameTaken = takenAmong(1);
    this.takenNames = takenAmong(NAME_CANDIDATES);
    type LinkArgs = [number, string, string, string, string | null, string | null, number];
    this.insertLinkQuery = prepare<LinkArgs, LinkRow>(db, 7, (p) =>
      db
        .insertInto('links')
        .values({
          file_id: p(0),
          token_hash: p(1),
          token_sealed: p(2),
          kind: p(3),
          recipient_email: p(4),
          recipient_mobile: p(5),
          pin_hash: null,
          pin_expires_at: null,
          pin_sent_at: null,
          pin_failures: 0,
          locked_until: 0,
          revoked: 0,
          downloads: 0,
          created_at: p(6),
        })
        .returningAll(),
    );
  }

  /**
   * The contents of a file kept in the database (files.contents_in_db), or undefined. `cached`:
   * may come from the copies of recently read ones (a file's contents never change under its id).
   */
  async contents(fileId: number, { cached = true } = {}): Promise<Buffer | undefined> {
    const hit = cached ? this.recentContents.get(fileId) : undefined;
    if (hit) return hit;
    const data = (await this.contentsByFile.first([fileId]))?.data;
    if (data && cached) this.recentContents.set(fileId, data);
    return data;
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
    const taken = await this.nameTaken.first([f.ownerId, f.name], trx);
    const n = !taken ? 0 : ((await this.freeNumberAmong(trx, f)) ?? (await this.freeNumberByScan(trx, f)));
    const row = await this.insertFileQuery.first(
      [
        f.ownerId,
        f.uploaderId,
        numberedName(f.name, n),
        f.length,
        f.sha256,
        f.contentType,
        f.blobKey,
        f.blobFingerprint,
        f.contents ? 1 : 0,
        f.createdAt,
        f.expiresAt,
        f.message,
      ],
      trx,
    );
    if (!row) throw new Error('insert into files returned no row');
    if (f.contents) await this.insertContents.all([row.id, f.contents], trx);
    return row;
  }

  /**
   * The first free " (n)" among the first NAME_CANDIDATES names, by exact lookups in the area's unique
   * (partial) name index; undefined if all are taken.
   */
  private async freeNumberAmong(trx: Db, f: NewFile): Promise<number | undefined> {
    const candidates = Array.from({ length: NAME_CANDIDATES }, (_, n) => numberedName(f.name, n));
    const rows = await this.takenNames.all([f.ownerId, ...candidates], trx);
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
      [
        l.fileId,
        l.tokenHash,
        l.tokenSealed,
        l.kind,
        l.recipientEmail ?? null,
        l.recipientMobile ?? null,
        l.createdAt,
      ],
      trx,
    );
    if (!row) throw new Error('insert into links returned no row');
    return row;
  }

  async byTokenHash(tokenHash: string): Promise<FileWithLink | undefined> {
    const values = await this.linkWithFile.firstValues([tokenHash]);
    return values && { link: linkOfValues(values), file: fileOfValues(values) };
  }

  byId(id: number, db: Db = this.db): Promise<FileRow | undefined> {
    return this.fileById.first([id], db);
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

  /** One page (1-based) of an area or backup area, oldest first, each with its owner link. */
  async listPage(ownerId: number, state: 'area' | 'backup', page: number): Promise<FileWithLink[]> {
    const files = await this.db
      .selectFrom('files')
      .selectAll()
      .where('owner_id', '=', ownerId)
      .where('state', '=', state)
      .orderBy('id')
      .limit(PAGE_SIZE)
      .offset((page - 1) * PAGE_SIZE)
      .execute();
    if (files.length === 0) return [];
    const links = await this.db
      .selectFrom('links')
      .selectAll()
      .where(
        'file_id',
        'in',
        files.map((f) => f.id),
      )
      .where('kind', '=', 'owner')
      .execute();
    const byFile = new Map(links.map((l) => [l.file_id, l]));
    return files.flatMap((file) => {
      const link = byFile.get(file.id);
      return link ? [{ file, link }] : [];
    });
  }

  /** area → backup; false when another caller already moved it. `db` may be a transaction. */
  async retire(fileId: number, now: number, purgeAt: number, db: Db = this.db): Promise<boolean> {
    const res = await db
      .updateTable('files')
      .set({ state: 'backup', retired_at: now, purge_at: purgeAt })
      .where('id', '=', fileId)
      .where('state', '=', 'area')
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  dueForRetirement(now: number, limit: number): Promise<FileRow[]> {
    return this.db
      .selectFrom('files')
      .selectAll()
      .where('state', '=', 'area')
      .where('expires_at', '<=', now)
      .orderBy('expires_at')
      .limit(limit)
      .execute();
  }

  /**
   * Backup files whose time is up, plus 'purging' ones a crashed sweeper left behind
   * (their purge_at is the claim time, so they are picked up again after `staleMs`).
   */
  dueForPurge(now: number, staleMs: number, limit: number): Promise<FileRow[]> {
    return this.db
      .selectFrom('files')
      .selectAll()
      .where((eb) =>
        eb.or([
          eb.and([eb('state', '=', 'backup'), eb('purge_at', '<=', now)]),
          eb.and([eb('state', '=', 'purging'), eb('purge_at', '<=', now - staleMs)]),
        ]),
      )
      .orderBy('purge_at')
      .limit(limit)
      .execute();
  }

  /** Claims a file for purging; only one caller gets true. */
  async claimPurge(file: FileRow, now: number): Promise<boolean> {
    const res = await this.db
      .updateTable('files')
      .set({ state: 'purging', purge_at: now })
      .where('id', '=', file.id)
      .where('state', '=', file.state)
      .where('purge_at', '=', file.purge_at)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /**
   * Deletes a file claimed for purging at `claimedAt` (claimPurge), its links and contents; `before`
   * runs first in the same transaction (its audit row, whose webhook event reads the file). False,
   * with nothing written, when the claim is no longer this caller's: a sweeper stalled past
   * STALE_CLAIM_MS whose file another one took over.
   */
  async deleteFile(fileId: number, claimedAt: number, before?: (trx: Db) => Promise<void>): Promise<boolean> {
    const deleted = await inTransaction(this.db, async (trx) => {
      // In id order, as a batch of download counts locks them (countDownloads): no deadlock.
      if (this.dialect === 'postgres')
        await sql`select id from links where file_id = ${fileId} order by id for update`.execute(trx);
      // Locked on PostgreSQL (SQLite has one writer): the claim cannot change before the commit.
      const held = await trx
        .selectFrom('files')
        .select('id')
        .where('id', '=', fileId)
        .where('state', '=', 'purging')
        .where('purge_at', '=', claimedAt)
        .$if(this.dialect === 'postgres', (q) => q.forUpdate())
        .executeTakeFirst();
      if (!held) return false;
      await before?.(trx);
      await trx.deleteFrom('links').where('file_id', '=', fileId).execute();
      await trx.deleteFrom('file_contents').where('file_id', '=', fileId).execute();
      await trx.deleteFrom('files').where('id', '=', fileId).execute();
      return true;
    });
    this.recentContents.delete(fileId);
    return deleted;
  }

  /** Files whose owner account was removed go to backup with an immediate purge. */
  async orphansToPurge(now: number): Promise<number> {
    const res = await this.db
      .updateTable('files')
      .set({ state: 'backup', retired_at: now, purge_at: now })
      .where('state', '=', 'area')
      .where((eb) =>
        eb.not(
          eb.exists(eb.selectFrom('users').select('users.id').whereRef('users.id', '=', 'files.owner_id')),
        ),
      )
      .executeTakeFirst();
    return Number(res.numUpdatedRows);
  }

  async setFingerprint(fileId: number, fingerprint: string): Promise<void> {
    await this.db
      .updateTable('files')
      .set({ blob_fingerprint: fingerprint })
      .where('id', '=', fileId)
      .execute();
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
      const [row] = await this.countDownloadQuery.all([id, n], db);
      if (row) before.set(id, Number(row.downloads) - n);
    }
    return before;
  }

  owned(keys: string[]): Promise<Set<string>> {
    return keysIn(this.db, 'files', keys);
  }

  /** Every file's blob, a page at a time (storage check). */
  async *owners(): AsyncIterable<{ key: string; length: number; createdAt: number }> {
    let after = 0;
    for (;;) {
      const rows = await this.db
        .selectFrom('files')
        .select(['id', 'blob_key', 'length', 'created_at'])
        .where('id', '>', after)
        .where('contents_in_db', '=', 0)
        .orderBy('id')
        .limit(1000)
        .execute();
      for (const r of rows) yield { key: r.blob_key, length: r.length, createdAt: r.created_at };
      if (rows.length < 1000) return;
      after = rows[rows.length - 1]!.id;
    }
  }
}

function stemOf(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot > 0 ? name.slice(0, dot) : name;
}
