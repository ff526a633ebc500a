// What the transfers report reads (docs/admin.md, "Transfers"), only reads: files still held from
// their rows, and purged ones from the audit trail. Purging a file deletes its row and its links
// (src/features/files/store/lifecycle-claims.ts) but its audit rows stay: its `upload` row (sender,
// area, name, size, SHA-256, time), `file.retired` and `file.purged` rows, and the rows and outbox
// messages of its recipients, which are what a purged file is listed and told from.
import { type RawBuilder, type SqlBool, sql } from 'kysely';
import type { Db } from '../../platform/sql/database.js';
import type { Dialect } from '../../platform/sql/migrations.js';
import { likeLiteral } from '../audit/audit-search.js';

export type TransferState = 'area' | 'backup' | 'purged';

export interface TransferFilter {
  /** the owner's or sender's account (case-insensitive) */
  user?: string;
  state?: TransferState;
  /** part of the name (case-insensitive) */
  q?: string;
  /** created at or after (ms) */
  from?: number;
  /** created before (ms) */
  to?: number;
}

/** A file as the report lists it, whichever source it comes from. */
export interface TransferRow {
  id: number;
  name: string | null;
  size: number | null;
  sha256: string | null;
  state: TransferState;
  owner: string | null;
  sender: string | null;
  created: number | null;
  expires: number | null;
  retired: number | null;
  purged: number | null;
}

/** An audit row about a file, as the report reads it. */
export interface FileEventRow {
  id: number;
  at: number;
  event: string;
  file_id: number | null;
  user_name: string | null;
  actor: string | null;
  remote: string | null;
  detail: string | null;
}

/** Of each file's upload row, a field of its JSON detail. */
const UPLOAD_FIELDS = ['name', 'area', 'sha256'] as const;

export class TransferStore {
  constructor(
    private readonly db: Db,
    private readonly dialect: Dialect,
  ) {}

  /** Files still held (area, backup; a file being purged counts as backup), newest first. */
  async held(filter: TransferFilter, before: number | null, limit: number): Promise<TransferRow[]> {
    const { user, state, q, from, to } = filter;
    const states =
      state === 'area'
        ? ['area']
        : state === 'backup'
          ? ['backup', 'purging']
          : ['area', 'backup', 'purging'];
    const rows = await this.db
      .selectFrom('files as f')
      .leftJoin('users as o', 'o.id', 'f.owner_id')
      .leftJoin('users as s', 's.id', 'f.uploader_id')
      .select(['f.id', 'f.name', 'f.length', 'f.sha256', 'f.state', 'f.created_at', 'f.expires_at'])
      .select(['f.retired_at', 'o.name as owner', 's.name as sender'])
      .where('f.state', 'in', states)
      .$if(user !== undefined, (qb) =>
        qb.where((eb) =>
          eb.or([eb('o.name_key', '=', user!.toLowerCase()), eb('s.name_key', '=', user!.toLowerCase())]),
        ),
      )
      .$if(q !== undefined, (qb) => qb.where(containsLower(sql`f.name`, q!)))
      .$if(from !== undefined, (qb) => qb.where('f.created_at', '>=', from!))
      .$if(to !== undefined, (qb) => qb.where('f.created_at', '<', to!))
      .$if(before !== null, (qb) => qb.where('f.id', '<', before!))
      .orderBy('f.id', 'desc')
      .limit(limit)
      .execute();
    return rows.map((r) => ({
      id: r.id,
      name: r.name,
      size: r.length,
      sha256: r.sha256,
      state: r.state === 'area' ? 'area' : 'backup',
      owner: r.owner,
      sender: r.sender,
      created: r.created_at,
      expires: r.expires_at,
      retired: r.retired_at,
      purged: null,
    }));
  }

  /**
   * Purged files, newest first, from their `file.purged` rows (through the index of those rows
   * alone, migration 0025) and their `upload` rows.
   */
  async purged(filter: TransferFilter, before: number | null, limit: number): Promise<TransferRow[]> {
    const { user, q, from, to } = filter;
    const field = (key: (typeof UPLOAD_FIELDS)[number]) => this.jsonText(sql.ref('u.detail'), key);
    const rows = await this.db
      .selectFrom('audit as p')
      .leftJoin('audit as u', (join) =>
        join.onRef('u.file_id', '=', 'p.file_id').on('u.event', '=', 'upload'),
      )
      .select(['p.file_id as id', 'p.at as purged', 'u.at as created', 'u.user_name as sender', 'u.bytes'])
      .select([
        field('name').as('name'),
        this.jsonText(sql.ref('p.detail'), 'name').as('purgedName'),
        field('area').as('owner'),
        field('sha256').as('sha256'),
      ])
      .where('p.event', '=', sql.lit('file.purged'))
      .where('p.file_id', 'is not', null)
      .$if(user !== undefined, (qb) =>
        qb.where((eb) =>
          eb.or([
            eb(eb.fn('lower', ['u.user_name']), '=', user!.toLowerCase()),
            eb(sql`lower(${field('area')})`, '=', user!.toLowerCase()),
          ]),
        ),
      )
      .$if(q !== undefined, (qb) =>
        qb.where(
          containsLower(sql`coalesce(${field('name')}, ${this.jsonText(sql.ref('p.detail'), 'name')})`, q!),
        ),
      )
      .$if(from !== undefined, (qb) => qb.where('u.at', '>=', from!))
      .$if(to !== undefined, (qb) => qb.where('u.at', '<', to!))
      .$if(before !== null, (qb) => qb.where('p.file_id', '<', before!))
      .orderBy('p.file_id', 'desc')
      .limit(limit)
      .execute();
    const ids = rows.map((r) => r.id!);
    const retired = new Map((await this.events(ids, ['file.retired'])).map((e) => [e.file_id, e.at]));
    return rows.map((r) => ({
      id: r.id!,
      name: r.name ?? r.purgedName,
      size: r.bytes,
      sha256: r.sha256,
      state: 'purged',
      owner: r.owner,
      sender: r.sender,
      created: r.created,
      expires: null,
      retired: retired.get(r.id) ?? null,
      purged: r.purged,
    }));
  }

  /** One file, held or purged; undefined when neither its row nor its purge is known. */
  async one(id: number): Promise<TransferRow | undefined> {
    const [held] = await this.held({}, id + 1, 1);
    if (held?.id === id) return held;
    const [purged] = await this.purged({}, id + 1, 1);
    return purged?.id === id ? purged : undefined;
  }

  /** The audit rows of some events about some files, oldest first. */
  events(fileIds: number[], events: string[]): Promise<FileEventRow[]> {
    if (fileIds.length === 0) return Promise.resolve([]);
    return this.db
      .selectFrom('audit')
      .select(['id', 'at', 'event', 'file_id', 'user_name', 'actor', 'remote', 'detail'])
      .where('file_id', 'in', fileIds)
      .where('event', 'in', events)
      .orderBy('id')
      .execute();
  }

  /** Every audit row about one file, oldest first. */
  fileEvents(fileId: number): Promise<FileEventRow[]> {
    return this.db
      .selectFrom('audit')
      .select(['id', 'at', 'event', 'file_id', 'user_name', 'actor', 'remote', 'detail'])
      .where('file_id', '=', fileId)
      .orderBy('id')
      .execute();
  }

  /** The outbox messages about some files (without their sealed text), oldest first. */
  messages(fileIds: number[], kind?: string) {
    if (fileIds.length === 0) return Promise.resolve([]);
    return this.db
      .selectFrom('outbox')
      .select(['id', 'file_id', 'channel', 'recipient', 'kind', 'status', 'attempts', 'last_error'])
      .select(['user_name', 'created_at', 'last_attempt_at', 'sent_at'])
      .where('file_id', 'in', fileIds)
      .$if(kind !== undefined, (qb) => qb.where('kind', '=', kind!))
      .orderBy('id')
      .execute();
  }

  /** A text field of a JSON detail, null when the detail is not a JSON object. */
  private jsonText(column: RawBuilder<unknown> | ReturnType<typeof sql.ref>, key: string) {
    return this.dialect === 'postgres'
      ? sql<string | null>`(case when ${column} like '{%' then ${column}::jsonb ->> ${sql.lit(key)} end)`
      : sql<
          string | null
        >`(case when json_valid(${column}) then json_extract(${column}, ${sql.lit(`$.${key}`)}) end)`;
  }
}

/** `text` holds `part`, case-insensitively (ASCII), wildcards taken literally. */
function containsLower(text: RawBuilder<unknown>, part: string): RawBuilder<SqlBool> {
  return sql<SqlBool>`lower(${text}) like ${`%${likeLiteral(part.toLowerCase())}%`} escape '\\'`;
}
