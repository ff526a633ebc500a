// A resumable upload made under an upload request (request-gate.ts): no account, the request's
// token (and PIN) instead. Its row and the request's reservation commit together, so what the
// request says is left is what concurrent creations on every instance share.
import { randomBytes } from 'node:crypto';
import type { Config } from '../../app/config.js';
import type { Clock } from '../../platform/clock.js';
import { invalid, tooLarge } from '../../platform/errors.js';
import { type Db, isUniqueViolation } from '../../platform/sql/database.js';
import type { UploadRow } from '../../platform/sql/schema.js';
import { inTransaction } from '../../platform/sql/transaction.js';
import { sanitizeFileName } from '../files/names.js';
import type { RequestGate } from './request-gate.js';
import { checkMetadataLengths, type UploadMetadata } from './upload-metadata.js';
import type { UploadStore } from './upload-store.js';

const HOUR = 3600 * 1000;
const NO_RECIPIENTS = JSON.stringify({ emails: [], mobiles: [] });

export interface RequestUploadDeps {
  db: Db;
  store: UploadStore;
  gate: RequestGate;
  clock: Clock;
  config: Pick<Config, 'maxFileSize' | 'uploadExpiryHours'>;
}

/** creation under `request <token>`: the request admits it and reserves its share, or nothing is made. */
export async function createForRequest(
  d: RequestUploadDeps,
  meta: UploadMetadata,
  length: number,
  remote: string | null,
): Promise<UploadRow> {
  checkMetadataLengths(meta);
  if (!Number.isSafeInteger(length) || length < 0) throw invalid('Upload-Length must be a whole number');
  if (length > d.config.maxFileSize) throw tooLarge(`file larger than ${d.config.maxFileSize} bytes`);
  if (!meta.filename) throw invalid('file: no file name given');
  if (meta.d !== undefined || meta.m !== undefined || meta.c !== undefined)
    throw invalid('d, m, c: not with request (the request names the area)');
  const filename = sanitizeFileName(meta.filename);
  const admission = await d.gate.admit(meta.request!, meta.pin, length, remote);
  const id = randomBytes(18).toString('base64url');
  for (let attempt = 1; ; attempt++) {
    const now = d.clock.now();
    try {
      return await inTransaction(d.db, async (trx) => {
        await d.gate.reserve(trx, admission, id, length);
        return d.store.insert(
          {
            id,
            uploader_id: admission.uploaderId,
            owner_id: admission.ownerId,
            filename,
            message: meta.i ?? null,
            recipients: NO_RECIPIENTS,
            length,
            created_at: now,
            expires_at: now + d.config.uploadExpiryHours * HOUR,
          },
          trx,
        );
      });
    } catch (err) {
      // Two instances opened the link's batch at once: this one joins the other's.
      if (isUniqueViolation(err) && attempt < 3) continue;
      throw err;
    }
  }
}
