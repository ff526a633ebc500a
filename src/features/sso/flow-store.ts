// The sign-ins under way and the one-time hand-off codes (tables sso_pending, sso_handoffs). Each
// is taken by one DELETE … RETURNING, so a state or a code works once, on whichever instance
// answers first.
import type { Db } from '../../platform/sql/database.js';

export interface PendingSignIn {
  state: string;
  nonce: string;
  /** sealed */
  verifier: string;
  return_to: string;
  lang: string | null;
  created_at: number;
}

export interface Handoff {
  user_id: number;
  /** sealed */
  payload: string;
  expires_at: number;
}

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
