// Persistence of logged-out bearer tokens (table `revoked_tokens`): a token's id stays here until
// the token would have expired anyway. Every instance reads it on every bearer request.
import { compiledQuery, type Param } from '../../platform/sql/compiled.js';
import type { Db } from '../../platform/sql/database.js';

export class RevokedTokenStore {
  /** Read on every bearer request: compiled once. */
  private readonly lookup;

  constructor(private readonly db: Db) {
    this.lookup = compiledQuery(db, (param: Param<{ jti: string }>) =>
      db.selectFrom('revoked_tokens').select('jti').where('jti', '=', param('jti')),
    );
  }

  async isRevoked(jti: string): Promise<boolean> {
    return (await this.lookup.first({ jti })) !== undefined;
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
