// Persistence of user accounts.
import type { Db } from '../db/database.js';
import type { NewUser, UserRow, UserUpdate } from '../db/schema.js';

export class UserStore {
  constructor(private readonly db: Db) {}

  byName(name: string, db: Db = this.db): Promise<UserRow | undefined> {
    return db.selectFrom('users').selectAll().where('name_key', '=', name.toLowerCase()).executeTakeFirst();
  }

  byId(id: number, db: Db = this.db): Promise<UserRow | undefined> {
    return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
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
