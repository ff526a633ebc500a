// Queries compiled once (src/db/compiled.ts) give the same rows as Kysely building them each time,
// on SQLite and PostgreSQL, with arguments in any order and constants left alone.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { prepare } from '../src/db/compiled.js';
import { openDatabase } from '../src/db/database.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';

const pg = await postgresAvailable();
if (!pg && PG_REQUIRED) throw new Error(PG_SKIP);

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`prepare (${backend})`, { skip: backend === 'postgres' && !pg ? PG_SKIP : false }, () => {
    test('runs one compiled query with new arguments each time', async () => {
      const dir = await mkdtemp(path.join(tmpdir(), 'remessa-compiled-'));
      const database = backend === 'postgres' ? await createTempDatabase() : null;
      const { db, close } = await openDatabase({ dataDir: dir, databaseUrl: database?.url ?? null });
      try {
        for (const [name, enabled] of [
          ['ana', 1],
          ['bia', 0],
          ['caio', 1],
        ] as const)
          await db
            .insertInto('users')
            .values({
              name,
              name_key: name,
              email: null,
              mobile: null,
              lang: 'en',
              enabled,
              first_access: 0,
              password_hash: null,
              token_generation: 0,
              failed_logins: 0,
              locked_until: 0,
              created_at: 0,
              updated_at: 0,
            })
            .execute();
        // Arguments used in reverse order, with a constant in between.
        const q = prepare<[string, string], { name: string }>(db, 2, (p) =>
          db
            .selectFrom('users')
            .select('name')
            .where('name_key', '>=', p<string>(1))
            .where('enabled', '=', 1)
            .where('name_key', '<=', p<string>(0))
            .orderBy('name_key'),
        );
        assert.deepEqual(await q.all(['zzz', 'a']), [{ name: 'ana' }, { name: 'caio' }]);
        assert.deepEqual(await q.all(['bz', 'a']), [{ name: 'ana' }]);
        assert.deepEqual(await q.first(['zzz', 'b']), { name: 'caio' });
        assert.equal(await q.first(['a', 'b']), undefined);
        assert.deepEqual(
          await db.transaction().execute((trx) => q.all(['zzz', 'a'], trx)),
          [{ name: 'ana' }, { name: 'caio' }],
          'runs in a transaction too',
        );
        assert.throws(
          () =>
            prepare<[string, string], unknown>(db, 2, (p) =>
              db.selectFrom('users').where('name', '=', p<string>(0)),
            ),
          /uses 1 of its 2 arguments/,
        );
      } finally {
        await close();
        await database?.drop();
        await rm(dir, { recursive: true, force: true });
      }
    });
  });
}
