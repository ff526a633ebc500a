// Persistence of logged-out bearer tokens (table `revoked_tokens`): a token's id stays here until
// the token would have expired anyway. Every instance reads it on every bearer request.
import type { Db } from '../db/database.js';

export class RevokedTokenStore {
  constructor(private readonly db: Db) {}

  async isRevoked(jti: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('revoked_tokens')
      .select('jti')
      .where('jti', '=', jti)
      .executeTakeFirst();
    return row !== undefined;
  }

  async revoke(jti: string, userId: number, expiresAt: number): Promise<void> {
    await this.db
      .insertInto('revoked_tokens')
      .values({ jti, user_id: userId, expires_at: expiresAt })
      .onConflict((oc) => oc.column('jti').doNothing())
      .execute();
  }

  /** Forgets revocations of tokens that have expired by `now`. */
  async prune(now: number): Promise<void> {
    await this.db.deleteFrom('revoked_tokens').where('expires_at', '<', now).execute();
  }
}
