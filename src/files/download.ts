// What a download needs from the domain, and what it reports back: the HTTP layer
// (src/http/download-response.ts) sends the bytes; FileService does the bookkeeping.
import type { FileHandle } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import type { BlobStat, ByteRange } from '../storage/blob-store.js';

export interface DownloadOutcome {
  /** every byte of the whole file reached the client */
  complete: boolean;
  bytes: number;
  range: ByteRange | null;
}

export interface BlobAccess {
  open(range?: ByteRange): Promise<Readable>;
  /** A descriptor on the contents when sendfile(2) may be used for them (local store, not turned off). */
  openFile?: () => Promise<FileHandle>;
  stat(): Promise<BlobStat | null>;
  /** Called when the contents do not match the recorded length or hash. */
  corrupt(reason: string): Promise<void>;
  /** Called when a changed blob was re-hashed and found intact: remember its new fingerprint. */
  verified(fingerprint: string): Promise<void>;
  /** 'changed' (default) or 'always' (REMESSA_VERIFY_DOWNLOADS) */
  verify: 'changed' | 'always';
  /** A download that makes no progress for this long is cut off (REMESSA_STALL_SECONDS). */
  stallSeconds: number;
  /** The server clock (tests move it forward instead of waiting out a stall). */
  now(): number;
}
