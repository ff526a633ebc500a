// Writes uploads into any BlobStore with the byte limit and SHA-256 around it, under a durable
// write intent, so that a crash at any point leaves nothing the reconciler cannot name:
//   1. intent row committed (key, writer = host/pid/nonce, times)
//   2. blob streamed into the store (visible only once whole)
//   3. the caller's transaction records the file rows and removes the intent (settle), or the
//      blob is deleted and then the intent (discard)
// Small uploads skip all three: their contents are collected (at most inlineMaxBytes, known from
// Content-Length before a byte is read) and committed with their row in the database (no intent,
// nothing to orphan; docs/decisions.md, "Small files in the database").
// An intent that survives names a blob (or partial write) whose row never committed. The
// reconciler (reconciler.ts) removes them once their writer is known dead (same host, process
// gone) or they have not been touched for an hour (any host): writers touch their intents every
// few minutes, so a slow upload is never mistaken for a crashed one.
import { createHash, randomBytes } from 'node:crypto';
import { finished, type Readable } from 'node:stream';
import type { Clock } from '../clock.js';
import { isUnavailable, unavailableFor } from '../errors.js';
import { secureRandom } from '../security/keys.js';
import type { Db } from '../sql/database.js';
import { keepRenewing } from '../sql/lease.js';
import { CommitUnknownError } from '../sql/transaction.js';
import type { BlobStore, StoredBlob } from './blob-store.js';
import type { IntentStore } from './intent-store.js';
import { HOST } from './local/local-blob-store.js';
import { MeteredHash, overByteLimit } from './metered.js';

/** An intent untouched this long belongs to a dead writer, whatever its host. */
export const STALE_MS = 60 * 60 * 1000;
const TOUCH_MS = 5 * 60 * 1000;

/** This process as a writer: host, pid, and a nonce that tells it from an earlier process with the same pid. */
export const WRITER = `${HOST}/${process.pid}/${randomBytes(6).toString('hex')}`;

export class BlobWriter {
  private readonly inFlight = new Set<string>();
  /** Blobs whose discard failed, tried again by retryDiscards(). */
  private readonly undiscarded = new Set<string>();
  private stopTouching: (() => void) | null = null;

  constructor(
    readonly store: BlobStore,
    private readonly intents: IntentStore,
    private readonly clock: Clock,
    /** Contents known to be at most this long are kept for the database (0: never). */
    private readonly inlineMaxBytes = 0,
  ) {}

  /**
   * Streams `source` into a new blob under an intent; too-large DomainError past `maxBytes`. When
   * `sizeBound` (an upper bound known before reading, e.g. the request's Content-Length) is at most
   * inlineMaxBytes, the contents are collected instead and returned in `contents`, for the caller
   * to commit with the row; nothing is written to the store.
   */
  async write(source: Readable, maxBytes: number, sizeBound?: number): Promise<StoredBlob> {
    const key = secureRandom(18).toString('base64url');
    if (sizeBound !== undefined && sizeBound <= this.inlineMaxBytes) return collect(key, source, maxBytes);
    await this.intents.add(key, WRITER, this.clock.now());
    this.track(key);
    // A client that goes away fails the write with a network error too; that one is not the store's.
    let sourceFailed = false;
    source.once('error', () => {
      sourceFailed = true;
    });
    try {
      if (this.store.putHashed) return { key, ...(await this.store.putHashed(key, source, maxBytes)) };
      const meter = new MeteredHash(maxBytes);
      source.once('error', (err) => meter.destroy(err));
      const { fingerprint } = await this.store.put(key, source.pipe(meter));
      return { key, length: meter.bytes, sha256: meter.digest(), fingerprint };
    } catch (err) {
      source.unpipe();
      if (isUnavailable(err) && !sourceFailed) {
        // The store out of reach (or silent): a delete now would wait out the same bounds again
        // before the client hears its 503. The next reconcile pass removes it, as after a failed
        // discard.
        this.untrack(key);
        this.undiscarded.add(key);
      } else await this.discard([key]).catch(() => {});
      throw err;
    }
  }

  /**
   * Inside the transaction that records the files: the blobs are now owned by their rows. Until
   * then (a request's other files may take hours) their intents are kept touched. An intent gone
   * means the reconciler took this writer for dead and deleted the blob: the 503 thrown rolls the
   * transaction back, so no row ever names a missing blob.
   */
  async settle(trx: Db, keys: string[]): Promise<void> {
    for (const k of keys) this.untrack(k);
    const removed = await this.intents.remove(keys, trx);
    if (removed !== keys.length) throw blobLost();
  }

  /**
   * Removes written blobs whose rows will never exist: the blob first, then its intent. After a
   * commit whose outcome is unknown (CommitUnknownError) their rows may exist: nothing is removed,
   * and the reconciler deletes, once the intents are stale, only the blobs no row owns.
   */
  async discard(keys: string[], failure?: unknown): Promise<void> {
    if (failure instanceof CommitUnknownError) return;
    if (keys.length === 0) return;
    for (const k of keys) this.untrack(k);
    try {
      await Promise.all(keys.map((k) => this.store.delete(k)));
      await this.intents.remove(keys);
    } catch (err) {
      // The store or the database out of reach: the intents of a live writer would wait an hour.
      for (const k of keys) this.undiscarded.add(k);
      throw err;
    }
  }

  /** Tries again the discards that failed (each reconcile pass); throws while they still fail. */
  async retryDiscards(): Promise<number> {
    const keys = [...this.undiscarded];
    if (keys.length === 0) return 0;
    await this.discard(keys);
    for (const k of keys) this.undiscarded.delete(k);
    return keys.length;
  }

  private track(key: string): void {
    this.inFlight.add(key);
    this.stopTouching ??= keepRenewing({
      clock: this.clock,
      everyMs: TOUCH_MS,
      renew: (now) => this.intents.touch([...this.inFlight], now),
    });
  }

  private untrack(key: string): void {
    this.inFlight.delete(key);
    if (this.inFlight.size === 0 && this.stopTouching) {
      this.stopTouching();
      this.stopTouching = null;
    }
  }
}

/** A written blob removed before its row committed (its intent gone): nothing is recorded, retry. */
const blobLost = () =>
  unavailableFor('storage cleanup removed the upload before it was recorded; send it again', 5);

/** Fingerprint of contents kept in the database: nothing can rewrite them behind the row's back. */
export const IN_DATABASE = 'db';

/**
 * A small upload's contents, whole (the bound keeps this a few KiB), counted and hashed. Read by
 * hand rather than through stream.pipeline, whose AbortController and AbortError per call were 4%
 * of a small upload's CPU. A body that fails rejects with the body's own error (by which the HTTP
 * layer tells a malformed body from a failure of ours); past `maxBytes` reading stops (413) and
 * the rest is left to the caller, as a store's put leaves it.
 */
function collect(key: string, source: Readable, maxBytes: number): Promise<StoredBlob> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const hash = createHash('sha256');
    let length = 0;
    let settled = false;
    const settle = (err: unknown) => {
      if (settled) return;
      settled = true;
      source.off('data', onData);
      stopWatching();
      if (err) return reject(err);
      const contents = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length);
      resolve({ key, length, sha256: hash.digest('hex'), fingerprint: IN_DATABASE, contents });
    };
    const onData = (chunk: Buffer) => {
      length += chunk.length;
      if (length > maxBytes) {
        source.pause();
        settle(overByteLimit(maxBytes));
        return;
      }
      hash.update(chunk);
      chunks.push(chunk);
    };
    // finished() also answers for a stream that failed or ended before this was called.
    const stopWatching = finished(source, { writable: false }, (err) => settle(err ?? null));
    source.on('data', onData);
  });
}
