// Blob store in a local directory: <dir>/blobs/ab/<key>, partial writes in <dir>/tmp.
// A write goes to a temp file, is fsynced, then renamed into place and its directory fsynced (a
// directory made for it, its entry in the parent too), so a blob either exists whole or not at all.
// Private optimisations, used only when the native module is built: putHashed (hashing and
// O_DIRECT writes in the thread pool) and directBody (sendfile(2)).
import { createHash, randomBytes } from 'node:crypto';
import {
  type BigIntStats,
  closeSync,
  createReadStream,
  fstatSync,
  fsync,
  openSync,
  readFileSync,
  readlinkSync,
  readSync,
  renameSync,
  statSync,
} from 'node:fs';
import { mkdir, open, readdir, stat, unlink } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { hostname } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { type NativeModule, nativeModule } from '../../native/native.js';
import {
  BLOB_KEY,
  type BlobStat,
  type BlobStore,
  type ByteRange,
  type DirectBody,
  isListedBlob,
  type ListedBlob,
  type PartialWrite,
  type SmallBlob,
} from '../blob-store.js';
import { canSendfile, SendfileBody } from './sendfile-body.js';
import { writeHashed, writePlain } from './upload-sink.js';

/** What identifies one version of a blob file: size, modification time and inode. */
function fingerprintOf(st: BigIntStats): string {
  return `${st.size}-${st.mtimeNs}-${st.ino}`;
}

/**
 * Where this process runs, as temp file names and write intents name it: the host name, plus a
 * digest of the boot and the pid namespace. Two containers of one name (each pid 1), or the
 * machine after a reboot, then never take each other's pid for their own. A writer named
 * otherwise (older versions wrote the bare host name) cannot be checked from here and counts as
 * alive until stale; so does every other one where Linux does not tell us both.
 */
export const HOST = `${hostname().replace(/[^A-Za-z0-9-]/g, '_')}~${placeDigest()}`;

function placeDigest(): string {
  try {
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const pidNamespace = readlinkSync('/proc/self/ns/pid');
    return createHash('sha256').update(`${boot} ${pidNamespace}`).digest('hex').slice(0, 12);
  } catch {
    // Unknown: a name no other process has, so every writer but this one is judged by staleness.
    return randomBytes(6).toString('hex');
  }
}

/** fsync of a directory (its new entries): the wait in the thread pool, the open and close direct. */
async function syncDirectory(dir: string): Promise<void> {
  const fd = openSync(dir, 'r');
  try {
    await new Promise<void>((resolve, reject) => fsync(fd, (err) => (err ? reject(err) : resolve())));
  } finally {
    closeSync(fd);
  }
}

/** Directories this process is making right now, until their entries are durable. */
const making = new Map<string, Promise<void>>();

/**
 * mkdir -p whose new directories survive a crash: each one's entry is fsynced in its parent. Only
 * when mkdir created something, so a directory that exists costs nothing more. A caller racing
 * the one that creates it waits for that fsync too.
 */
function makeDirectory(dir: string): Promise<void> {
  let made = making.get(dir);
  if (!made) {
    made = (async () => {
      const first = await mkdir(dir, { recursive: true, mode: 0o700 });
      if (first === undefined) return;
      // Each new directory's entry is in its parent: from dir's parent up to the first one's.
      for (let d = dir; d !== path.dirname(first) && d !== path.dirname(d); ) {
        d = path.dirname(d);
        await syncDirectory(d);
      }
    })().finally(() => making.delete(dir));
    making.set(dir, made);
  }
  return made;
}

/**
 * rename(2) into a shard directory, made on first use (or again, if something removed it). The
 * mkdir goes through the thread pool: a new directory waits for the filesystem's journal, which
 * under a stream of fsyncs took long enough to stall every request (a fresh store makes 4,096).
 */
async function renameIntoShard(from: string, to: string): Promise<void> {
  const shard = path.dirname(to);
  try {
    renameSync(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    await makeDirectory(shard);
    renameSync(from, to);
  }
  // Made a moment ago by another upload whose fsync of its entry is still under way: wait for it.
  const pending = making.get(shard);
  if (pending) await pending;
}

export interface LocalStoreOptions {
  /** The native module; injectable so tests can run the plain paths on a machine that has it. */
  native?: NativeModule | null;
  /** Let the native writer use O_DIRECT (REMESSA_DIRECT_IO, default true). */
  directIo?: boolean;
  /** Downloads by sendfile(2) where possible (REMESSA_SENDFILE, default true). */
  sendfile?: boolean;
}

export class LocalBlobStore implements BlobStore {
  readonly description: string;
  readonly putHashed?: BlobStore['putHashed'];
  readonly directBody?: BlobStore['directBody'];
  private readonly blobDir: string;
  private readonly tmpDir: string;

  constructor(root: string, opts: LocalStoreOptions = {}) {
    // Absolute: the directories being made are known by these names (makeDirectory).
    this.blobDir = path.resolve(root, 'blobs');
    this.tmpDir = path.resolve(root, 'tmp');
    this.description = `local dir=${root}`;
    const native = opts.native === undefined ? nativeModule() : opts.native;
    if (native) {
      const directIo = opts.directIo ?? true;
      this.putHashed = async (key, source, maxBytes) => {
        const w = await this.writeVia(key, (fh) => writeHashed(source, fh, maxBytes, native, directIo));
        return { length: w.bytes, sha256: w.sha256, fingerprint: w.fingerprint };
      };
    }
    if (native && opts.sendfile !== false) {
      this.directBody = (key, res, offset, length) => this.sendfileBody(key, res, offset, length);
    }
  }

  private pathOf(key: string): string {
    if (!BLOB_KEY.test(key)) throw new Error(`invalid blob key ${key}`);
    return path.join(this.blobDir, key.slice(0, 2), key);
  }

  async open(): Promise<void> {
    await makeDirectory(this.blobDir);
    await makeDirectory(this.tmpDir);
  }

  async put(key: string, source: Readable): Promise<{ fingerprint: string }> {
    return this.writeVia(key, (fh) => writePlain(source, fh));
  }

  /** Temp file (named host.pid.key so a dead writer's leftovers are known), write, rename, fsync. */
  private async writeVia<T>(
    key: string,
    write: (fh: Awaited<ReturnType<typeof open>>) => Promise<T>,
  ): Promise<T & { fingerprint: string }> {
    const final = this.pathOf(key);
    const tmp = path.join(this.tmpDir, `${HOST}.${process.pid}.${key}.part`);
    const fh = await open(tmp, 'wx', 0o600);
    try {
      const written = await write(fh);
      // The metadata steps by direct system calls, as stat is (each trip through the thread pool
      // cost a small upload more CPU than the step); only the directory's fsync waits there.
      await renameIntoShard(tmp, final);
      await syncDirectory(path.dirname(final));
      const st = await this.stat(key);
      return { ...written, fingerprint: st!.fingerprint };
    } catch (err) {
      // A no-op when the write already closed it.
      await fh.close().catch(() => {});
      await unlink(tmp).catch(() => {});
      throw err;
    }
  }

  async read(key: string, range?: ByteRange): Promise<Readable> {
    const fh = await open(this.pathOf(key), 'r');
    return createReadStream('', { fd: fh, start: range?.start, end: range?.end, highWaterMark: 1 << 20 });
  }

  /**
   * Synchronous on purpose: for a file of at most `maxBytes` (64 KiB) from the page cache, four
   * system calls take microseconds, while the same calls through libuv's thread pool and promises
   * cost several times that in CPU (a seventh of a 4 KiB download's). A disk so slow that this
   * matters would stall every larger transfer anyway.
   */
  async readSmall(key: string, maxBytes: number): Promise<SmallBlob | null> {
    let fd: number;
    try {
      fd = openSync(this.pathOf(key), 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    try {
      // fstat of the open file: the fingerprint is that of the bytes read below.
      const st = fstatSync(fd, { bigint: true });
      const size = Number(st.size);
      const stat = { size, fingerprint: fingerprintOf(st) };
      if (size > maxBytes) return { stat, data: null };
      const data = Buffer.allocUnsafe(size);
      let got = 0;
      while (got < size) {
        const bytesRead = readSync(fd, data, got, size - got, got);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
      return { stat, data: got === size ? data : data.subarray(0, got) };
    } finally {
      closeSync(fd);
    }
  }

  private async sendfileBody(
    key: string,
    res: ServerResponse,
    offset: number,
    length: number,
  ): Promise<DirectBody | null> {
    if (!canSendfile(res)) return null;
    return new SendfileBody(res, openSync(this.pathOf(key), 'r'), offset, length);
  }

  /**
   * Synchronous, as readSmall is and for the same reason: a stat (and the open above) served from
   * the kernel's caches takes microseconds, and each trip through the thread pool cost a 1 MiB
   * download about a tenth of its CPU on two cores (docs/benchmarks.md, small requests).
   */
  async stat(key: string): Promise<BlobStat | null> {
    try {
      const st = statSync(this.pathOf(key), { bigint: true });
      return { size: Number(st.size), fingerprint: fingerprintOf(st) };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await unlink(this.pathOf(key)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }

  async *list(): AsyncIterable<ListedBlob> {
    for (const sub of await readdir(this.blobDir).catch(() => [])) {
      for (const name of await readdir(path.join(this.blobDir, sub)).catch(() => [])) {
        if (!isListedBlob(name)) continue;
        const st = await stat(path.join(this.blobDir, sub, name)).catch(() => null);
        if (st) yield { key: name, modifiedAt: st.mtimeMs, size: st.size };
      }
    }
  }

  async *listPartial(): AsyncIterable<PartialWrite> {
    for (const name of await readdir(this.tmpDir).catch(() => [])) {
      const ref = path.join(this.tmpDir, name);
      const st = await stat(ref).catch(() => null);
      if (!st) continue;
      const m = /^(.+)\.(\d+)\.([A-Za-z0-9_-]+)\.part$/.exec(name);
      // A name not of ours (an editor's, an older version's) counts as an anonymous partial write.
      yield m
        ? { key: m[3]!, startedAt: st.mtimeMs, writer: { host: m[1]!, pid: Number(m[2]) }, ref }
        : { key: '', startedAt: st.mtimeMs, ref };
    }
  }

  async discardPartial(p: PartialWrite): Promise<void> {
    if (path.dirname(p.ref) !== this.tmpDir) throw new Error(`not a partial write: ${p.ref}`);
    await unlink(p.ref).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }
}
