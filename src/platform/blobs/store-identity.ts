// Which blob store holds this installation's files. Every instance sharing one database must
// share one store: an instance started on PostgreSQL with a local store of its own would accept
// requests and then answer "stored file is damaged" for every file another instance stored. So the
// store keeps a small marker object with a random id, the database keeps the same id, and an
// instance whose store has another id (or none, while the database has one) refuses to start;
// readiness compares them again, in case the store is swapped under a running instance.
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { sql } from 'kysely';
import type { Db } from '../sql/database.js';
import { type BlobStore, STORE_IDENTITY_KEY } from './blob-store.js';

export { STORE_IDENTITY_KEY };

const SETTING = 'store_identity';

export class StoreMismatch extends Error {}

/** The id in the store's marker, or null when it has none. */
async function markerOf(blobs: BlobStore): Promise<string | null> {
  const small = await blobs.readSmall(STORE_IDENTITY_KEY, 256);
  return small?.data ? small.data.toString('utf8').trim() : null;
}

async function recorded(db: Db): Promise<string | null> {
  const row = await db.selectFrom('settings').select('value').where('key', '=', SETTING).executeTakeFirst();
  return row?.value ?? null;
}

/**
 * Makes sure the store and the database name each other, recording the id where neither has one
 * yet (a new installation, or one from before the marker). Returns the id; throws StoreMismatch
 * with what to do when they disagree.
 */
export async function ensureStoreIdentity(db: Db, blobs: BlobStore): Promise<string> {
  let expected = await recorded(db);
  let marker = await markerOf(blobs);
  if (expected === null) {
    // First start with this database: adopt the store's id, or give it one. Of several instances
    // starting at once the first insert wins and the others compare against it below.
    if (marker === null) {
      marker = randomBytes(16).toString('hex');
      await blobs.put(STORE_IDENTITY_KEY, Readable.from([Buffer.from(`${marker}\n`)]));
    }
    await sql`insert into settings (key, value) values (${SETTING}, ${marker}) on conflict (key) do nothing`.execute(
      db,
    );
    expected = await recorded(db);
    marker = await markerOf(blobs);
  }
  if (marker !== expected) throw new StoreMismatch(mismatchMessage(blobs, expected, marker));
  return expected!;
}

/** Null when the store still carries `expected`; otherwise why not. */
export async function storeIdentityProblem(blobs: BlobStore, expected: string): Promise<string | null> {
  const marker = await markerOf(blobs);
  return marker === expected ? null : marker === null ? 'has no identity marker' : 'is another store';
}

function mismatchMessage(blobs: BlobStore, expected: string | null, marker: string | null): string {
  return (
    `the blob store (${blobs.description}) is not the one this database's files are in: the database ` +
    `expects store ${expected}, the store ${marker === null ? 'has no identity marker' : `is ${marker}`}. ` +
    'Every instance sharing a database must share one store: use REMESSA_STORAGE=s3 with the same ' +
    'bucket and prefix on every instance, or one shared filesystem as REMESSA_DATA_DIR. If this store ' +
    `does hold the files (moved by hand), write "${expected}" into its object ${STORE_IDENTITY_KEY}.`
  );
}
