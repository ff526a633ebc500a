// Taking a tus upload's bytes away: its rows in one transaction (chunk blobs turned into write
// intents, a request's reservation released), then the blobs, then the intents.
import { WRITER } from '../../platform/blobs/blob-writer.js';
import { inTransaction } from '../../platform/sql/transaction.js';
import type { UploadDeps } from './upload-service.js';

/** Removes an upload (terminated or expired) and its chunks. */
export async function dropUpload(d: UploadDeps, id: string): Promise<void> {
  const now = d.clock.now();
  const keys = await inTransaction(d.db, async (trx) => {
    await d.requests?.released(trx, id);
    const k = await d.store.remove(trx, id);
    await d.intents.add(k, WRITER, now, trx);
    return k;
  });
  await deleteChunkBlobs(d, keys);
}

/** Deletes chunk blobs and their intents; on failure the intents stay for the reconciler. */
export async function deleteChunkBlobs(d: UploadDeps, keys: string[]): Promise<void> {
  try {
    for (const k of keys) await d.blobs.delete(k);
    await d.intents.remove(keys);
  } catch (err) {
    // The intents stay; the reconciler deletes the blobs once this writer is gone or stale.
    d.log.warn({ err }, 'could not delete the chunks of a tus upload');
  }
}
