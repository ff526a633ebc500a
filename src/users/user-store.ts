// Persistence of user accounts.
import { sql } from 'kysely';
import { prepare } from '../db/compiled.js';
import type { Db } from '../db/database.js';
import type { NewUser, UserRow, UserUpdate } from '../db/schema.js';

export class UserStore {
  // Read on every authenticated request: compiled once.
  private readonly byNameQuery;
  private readonly byIdQuery;

  constructor(private readonly db: Db) {
    this.byNameQuery = prepare<[string], UserRow>(db, 1, (p) =>
      db.selectFrom('users').selectAll().where('name_key', '=', p<string>(0)),
    );
    this.byIdQuery = prepare<[number], UserRow>(db, 1, (p) =>
      db.selectFrom('users').selectAll().where('id', '=', p<number>(0)),
    );
  }

  byName(name: string, db: Db = this.db): Promise<UserRow | undefined> {
    return this.byNameQuery.first([name.toLowerCase()], db);
  }

  byId(id: number, db: Db = this.db): Promise<UserRow | undefined> {
    return this.byIdQuery.first([id], db);
  }

  /** Accounts with this e-mail address (any case); rare and rate-limited, so not compiled. */
  byEmail(email: string): Promise<UserRow[]> {
    return this.db
      .selectFrom('users')
      .selectAll()
      .where(sql<string>`lower(email)`, '=', email.toLowerCase())
      .orderBy('id')
      .execute();
  }

  async insert(user: NewUser): Promise<UserRow> {
    return this.db.insertInto('users').values(user).returningAll().executeTakeFirstOrThrow();
  }

  async update(id: number, patch: UserUpdate, db: Db = this.db): Promise<void> {
    await db.updateTable('users').set(patch).where('id', '=', id).execute();
  }

  /** Atomically counts a failed password check and returns the new count. */
  async countFailure(id: number): Promise<number> {
    const row = await this.db
      .updateTable('users')
      .set((eb) => ({ failed_logins: eb('failed_logins', '+', 1) }))
      .where('id', '=', id)
      .returning('failed_logins')
      .executeTakeFirst();
    return row?.failed_logins ?? 0;
  }

  list(): Promise<UserRow[]> {
    return this.db.selectFrom('users').selectAll().orderBy('name_key').execute();
  }

  async remove(id: number): Promise<void> {
    await this.db.deleteFrom('users').where('id', '=', id).execute();
  }
}
