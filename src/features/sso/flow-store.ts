// The sign-ins under way and the one-time hand-off codes (tables sso_pending, sso_handoffs). Each
// is taken by one DELETE … RETURNING, so a state or a code works once, on whichever instance
// answers first.
import type { Db } from '../../platform/sql/database.js';
import type { SsoHandoffsTable, SsoPendingTable } from '../../platform/sql/schema.js';

/** A sign-in under way, as stored (platform/sql/schema.ts). */
export type PendingSignIn = SsoPendingTable;

/** A hand-off code's row without its hash. */
export type Handoff = Omit<SsoHandoffsTable, 'code_hash'>;

export class SsoFlowStore {
  constructor(private readonly db: Db) {}

  async addPending(row: PendingSignIn): Promise<void> {
    await this.db.insertInto('sso_pending').values(row).execute();
  }

  /** The sign-in started with `state`, removed as it is read: it cannot be used again. */
  takePending(state: string): Promise<PendingSignIn | undefined> {
    return this.db.deleteFrom('sso_pending').where('state', '=', state).returningAll().executeTakeFirst();
  }

  async addHandoff(codeHash: string, handoff: Handoff): Promise<void> {
    await this.db
      .insertInto('sso_handoffs')
      .values({ code_hash: codeHash, ...handoff })
      .execute();
  }

  takeHandoff(codeHash: string): Promise<Handoff | undefined> {
    return this.db
      .deleteFrom('sso_handoffs')
      .where('code_hash', '=', codeHash)
      .returning(['user_id', 'payload', 'expires_at'])
      .executeTakeFirst();
  }

  /** Forgets sign-ins started before `startedBefore` and codes expired by `now`. */
  async prune(startedBefore: number, now: number): Promise<void> {
    await this.db.deleteFrom('sso_pending').where('created_at', '<', startedBefore).execute();
    await this.db.deleteFrom('sso_handoffs').where('expires_at', '<', now).execute();
  }
}
