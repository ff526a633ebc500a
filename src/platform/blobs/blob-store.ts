// Where file contents live, behind one small interface. The metadata store names them by key (and
// holds the contents itself only of small uploads: blob-writer.ts). Adapters: local directory
// (local-blob-store.ts), S3-compatible object storage (s3-blob-store.ts), memory for tests
// (memory-blob-store.ts); createBlobStore picks one from the configuration (blob-stores.ts).
// Hashing and the byte limit are not the adapters' job: BlobWriter (blob-writer.ts) wraps any
// store with them.
//
// The contract every adapter keeps (test/blob-store-contract.test.ts runs the same tests on all):
// - put: an object becomes visible (stat, read, list) only whole, once put resolves; when put
//   fails, whatever it wrote is gone, or at worst a partial write that listPartial reports and
//   discardPartial removes (a crash leaves those: temp files, incomplete multipart uploads).
// - delete is idempotent: deleting a missing key succeeds.
// - stat and readSmall answer null for a missing key; read of a missing key fails.
// - errors of the store itself are plain Errors (the HTTP layer answers 500); only the byte limit
//   is a too-large DomainError, raised by BlobWriter.
import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';

export interface StoredBlob {
  key: string;
  length: number;
  /** hex SHA-256 of the contents, computed while streaming */
  sha256: string;
  /** Changes whenever the stored object is rewritten (local: size-mtime-inode; S3: ETag). */
  fingerprint: string;
  /**
   * Set when the contents were not written to the store but collected to be committed with their
   * row (small uploads, BlobWriter): they go into file_contents under the file's id, and the key
   * names nothing in the store.
   */
  contents?: Buffer;
}

export interface BlobStat {
  size: number;
  fingerprint: string;
}

export interface SmallBlob {
  stat: BlobStat;
  /** the whole contents, or null when larger than asked for */
  data: Buffer | null;
}

export interface ByteRange {
  /** inclusive */
  start: number;
  /** inclusive */
  end: number;
}

/** A complete object as listed by the store. */
export interface ListedBlob {
  key: string;
  /** ms since the epoch */
  modifiedAt: number;
  size: number;
}

/** A write that never completed: a temp file, an incomplete multipart upload. */
export interface PartialWrite {
  key: string;
  startedAt: number;
  /** Local: the writer's host and pid, so a dead process's leftovers go at once. */
  writer?: { host: string; pid: number };
  /** Adapter's own handle (temp file path, multipart upload id). */
  ref: string;
}

/**
 * A response body that moves the bytes into the socket without passing them through JavaScript
 * (local store: sendfile(2)). `progress()` counts bytes sent so far; `settled` resolves with the
 * final count once the store has let go of the contents.
 */
export interface DirectBody extends Readable {
  progress(): number;
  readonly settled: Promise<number>;
}

export interface BlobStore {
  /** For the start-up log line, e.g. `local dir=/data` or `s3 bucket=b endpoint=http://…`. */
  readonly description: string;
  /** Prepares the store and checks it is reachable and writable; throws a clear Error otherwise. */
  open(): Promise<void>;
  /** Streams `source` into object `key`, durable and visible once this resolves. */
  put(key: string, source: Readable): Promise<{ fingerprint: string }>;
  /**
   * Optional optimisation of put: the store counts, limits (413) and hashes the bytes itself
   * (local store with the native module: in the thread pool, beside O_DIRECT writes). BlobWriter
   * uses it when present; the contract suite proves it answers as put behind BlobWriter does.
   */
  putHashed?(key: string, source: Readable, maxBytes: number): Promise<Omit<StoredBlob, 'key'>>;
  /** Stream of the contents, or of one inclusive byte range. */
  read(key: string, range?: ByteRange): Promise<Readable>;
  /**
   * Optional optimisation of read for downloads: a body written straight into `res`'s socket, or
   * null when that is not possible for this response (TLS, no native module).
   */
  directBody?(key: string, res: ServerResponse, offset: number, length: number): Promise<DirectBody | null>;
  /** Current size and fingerprint, or null when the object is missing. */
  stat(key: string): Promise<BlobStat | null>;
  /**
   * stat and, when the object is at most `maxBytes` long, its whole contents, in one go (small
   * downloads are answered from one buffer, not a stream); null when the object is missing. The
   * fingerprint describes the contents returned.
   */
  readSmall(key: string, maxBytes: number): Promise<SmallBlob | null>;
  /** Idempotent. */
  delete(key: string): Promise<void>;
  /** Every complete object but the store's identity marker (STORE_IDENTITY_KEY), in no particular order. */
  list(): AsyncIterable<ListedBlob>;
  /** Writes that never completed (a crash, or a write in progress right now). */
  listPartial(): AsyncIterable<PartialWrite>;
  /** Removes one partial write; idempotent. */
  discardPartial(p: PartialWrite): Promise<void>;
  /** Releases connections (S3 client sockets). */
  close?(): void;
}

/** Blob keys: random, URL-safe, the same rule in every adapter. */
export const BLOB_KEY = /^[A-Za-z0-9_-]{16,64}$/;

/**
 * The object that names the store (storage/store-identity.ts): written and read like any blob,
 * never listed, so it is neither a file's contents nor an orphan.
 */
export const STORE_IDENTITY_KEY = 'remessa-store-identity';

/** A listed key that is a file's or an upload's contents (not the identity marker). */
export const isListedBlob = (key: string): boolean => BLOB_KEY.test(key) && key !== STORE_IDENTITY_KEY;
