// `remessa secret reseal`: the last step of rotating the server secret (docs/operations.md). While
// REMESSA_PREVIOUS_SECRET is set, values sealed with the old secret still open; this seals every
// stored one anew with the current keys, so the previous secret can then be dropped.
import { sql } from 'kysely';
import type { Db } from '../sql/database.js';
import type { Database } from '../sql/schema.js';
import type { Keys } from './keys.js';

/** A column of values made by Keys.seal. */
export interface SealedColumn {
  /** What they are, for the report ("link tokens"). */
  name: string;
  table: keyof Database;
  column: string;
}

/** The sealed columns of the schema: owners' copies of link tokens, queued messages, webhook secrets. */
export const SEALED_COLUMNS: SealedColumn[] = [
  { name: 'link tokens', table: 'links', column: 'token_sealed' },
  { name: 'messages', table: 'outbox', column: 'payload' },
  { name: 'webhook secrets', table: 'webhooks', column: 'secret_sealed' },
];

export interface ResealReport {
  name: string;
  /** sealed anew with the current keys */
  resealed: number;
  /** sealed with the current keys already */
  current: number;
  /** opened by neither key (sealed with a secret older than the previous one) */
  unreadable: number;
}

const PAGE = 500;

export class Resealer {
  constructor(private readonly d: { db: Db; keys: Keys; columns?: SealedColumn[] }) {}

  async resealAll(): Promise<ResealReport[]> {
    const reports: ResealReport[] = [];
    for (const column of this.d.columns ?? SEALED_COLUMNS) reports.push(await this.reseal(column));
    return reports;
  }

  private async reseal({ name, table, column }: SealedColumn): Promise<ResealReport> {
    const report = { name, resealed: 0, current: 0, unreadable: 0 };
    const { db, keys } = this.d;
    for (let after = 0; ; ) {
      const { rows } = await sql<{ id: number; sealed: string }>`
        select id, ${sql.ref(column)} as sealed from ${sql.table(table)}
        where id > ${after} order by id limit ${PAGE}`.execute(db);
      if (rows.length === 0) return report;
      for (const row of rows) {
        after = Number(row.id);
        let fresh: string | null;
        try {
          fresh = keys.resealed(row.sealed);
        } catch {
          report.unreadable++;
          continue;
        }
        if (fresh === null) {
          report.current++;
          continue;
        }
        // Only if unchanged meanwhile (servers keep running during a rotation).
        await sql`update ${sql.table(table)} set ${sql.ref(column)} = ${fresh}
          where id = ${row.id} and ${sql.ref(column)} = ${row.sealed}`.execute(db);
        report.resealed++;
      }
    }
  }
}
