// What a download needs from the domain, and what it reports back: the HTTP layer
// (src/platform/http/download-response.ts) sends the bytes; FileService does the bookkeeping.
import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { BlobStat, ByteRange, DirectBody, SmallBlob } from '../../platform/blobs/blob-store.js';

export interface DownloadOutcome {
  /** every byte of the whole file reached the client */
  complete: boolean;
  bytes: number;
  range: ByteRange | null;
}

export interface BlobAccess {
  open(range?: ByteRange): Promise<Readable>;
  /**
   * The store's zero-copy body for `length` bytes from `offset` (local store: sendfile(2)), or
   * null when it cannot serve this response; absent when the store has none.
   */
  directBody?: (res: ServerResponse, offset: number, length: number) => Promise<DirectBody | null>;
  stat(): Promise<BlobStat | null>;
  /** stat and, up to `maxBytes`, the whole contents in one read (BlobStore.readSmall). */
  readSmall(maxBytes: number): Promise<SmallBlob | null>;
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
