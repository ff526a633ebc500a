// A file's contents for the download response (download.ts, BlobAccess): from the blob store, or
// from the database for small files kept with their row; damage is reported to the audit trail.

import { Readable } from 'node:stream';
import type { Config } from '../../app/config.js';
import { type BlobWriter, IN_DATABASE } from '../../platform/blobs/blob-writer.js';
import type { Clock } from '../../platform/clock.js';
import type { FileRow } from '../../platform/sql/schema.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { BlobAccess } from './download.js';
import type { FileStore } from './file-store.js';

export interface BlobAccessDeps {
  store: FileStore;
  writer: BlobWriter;
  audit: AuditLog;
  clock: Clock;
  config: Pick<Config, 'verifyDownloads' | 'stallSeconds'>;
}

/** Access to a file's blob for the download response, reporting damage to the audit trail. */
export function blobAccess(d: BlobAccessDeps, file: FileRow, remote: string | null): BlobAccess {
  const blobs = d.writer.store;
  const directBody = blobs.directBody?.bind(blobs);
  const stored = file.contents_in_db ? contentsInDatabase(d, file) : null;
  return {
    open: stored?.open ?? ((range) => blobs.read(file.blob_key, range)),
    directBody:
      stored || !directBody
        ? undefined
        : (res, offset, length) => directBody(file.blob_key, res, offset, length),
    stat: stored?.stat ?? (() => blobs.stat(file.blob_key)),
    readSmall: stored?.readSmall ?? ((maxBytes) => blobs.readSmall(file.blob_key, maxBytes)),
    verified: (fingerprint) => d.store.setFingerprint(file.id, fingerprint),
    verify: d.config.verifyDownloads,
    stallSeconds: d.config.stallSeconds,
    now: () => d.clock.now(),
    corrupt: (reason) =>
      d.audit.record({
        event: 'file.corrupt',
        fileId: file.id,
        remote,
        detail: { name: file.name, reason },
      }),
  };
}

/** The reads of BlobAccess for contents kept in the database with the row. */
function contentsInDatabase(
  d: BlobAccessDeps,
  file: FileRow,
): Pick<BlobAccess, 'open' | 'stat' | 'readSmall'> {
  // REMESSA_VERIFY_DOWNLOADS=always is there to catch damage on the media: it reads them anew.
  const cached = d.config.verifyDownloads !== 'always';
  const read = () => d.store.contents(file.id, { cached });
  const small = async (maxBytes: number) => {
    const data = await read();
    if (!data) return null;
    return {
      stat: { size: data.length, fingerprint: IN_DATABASE },
      data: data.length <= maxBytes ? data : null,
    };
  };
  return {
    readSmall: small,
    stat: async () => (await small(0))?.stat ?? null,
    open: async (range) => {
      const data = await read();
      if (!data) throw new Error(`contents of file ${file.id} missing from the database`);
      return Readable.from([range ? data.subarray(range.start, range.end + 1) : data]);
    },
  };
}
