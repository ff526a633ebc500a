// Where file contents live. The metadata store never holds contents; it names them by key.
// Local directory now; S3-compatible object storage is another implementation of this interface.
import type { FileHandle } from 'node:fs/promises';
import type { Readable } from 'node:stream';

export interface StoredBlob {
  key: string;
  length: number;
  /** hex SHA-256 of the contents, computed while streaming */
  sha256: string;
  /** Changes whenever the stored object is rewritten (local: size-mtime-inode; S3: ETag). */
  fingerprint: string;
}

export interface BlobStat {
  size: number;
  fingerprint: string;
}

export interface ByteRange {
  /** inclusive */
  start: number;
  /** inclusive */
  end: number;
}

export interface BlobStore {
  /**
   * Streams `source` into a new blob and resolves once the contents are durable. Fails with a 413
   * AppError past `maxBytes`; on any failure (limit, client abort, disk full) nothing is left behind.
   */
  write(source: Readable, opts: { maxBytes: number }): Promise<StoredBlob>;
  /** Stream of the contents, or of one inclusive byte range. */
  read(key: string, range?: ByteRange): Promise<Readable>;
  /** Local stores only: an open descriptor on the contents, for sendfile(2) downloads. */
  openFile?(key: string): Promise<FileHandle>;
  /** Current size and fingerprint, or null when the blob is missing. */
  stat(key: string): Promise<BlobStat | null>;
  /** Idempotent. */
  delete(key: string): Promise<void>;
  /** Prepares the store and removes partial writes left by a crashed process; returns how many. Run at start-up. */
  recover(): Promise<number>;
}
