// Reading many files at once: an area's pages, and every blob the files hold (storage check).

import { keysIn } from '../../../platform/blobs/reconciler.js';
import type { Db } from '../../../platform/sql/database.js';
import type { FileWithLink } from './lookups.js';

export const PAGE_SIZE = 100;

/** An account's files and bytes in its area and backup area. */
export interface AccountUsage {
  areaFiles: number;
  areaBytes: number;
  backupFiles: number;
  backupBytes: number;
}

export class FileListing {
  constructor(private readonly db: Db) {}

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

  /** How many files, and bytes, an account holds in its area and its backup area. */
  async usage(ownerId: number): Promise<AccountUsage> {
    const rows = await this.db
      .selectFrom('files')
      .select((eb) => ['state', eb.fn.countAll().as('n'), eb.fn.sum<number | string>('length').as('bytes')])
      .where('owner_id', '=', ownerId)
      .where('state', 'in', ['area', 'backup'])
      .groupBy('state')
      .execute();
    const of = (state: string) => rows.find((r) => r.state === state);
    return {
      areaFiles: Number(of('area')?.n ?? 0),
      areaBytes: Number(of('area')?.bytes ?? 0),
      backupFiles: Number(of('backup')?.n ?? 0),
      backupBytes: Number(of('backup')?.bytes ?? 0),
    };
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
