// Blob store in a local directory: <dir>/blobs/ab/<key>, partial writes in <dir>/tmp.
// A write goes to a temp file, is fsynced, then renamed into place and its directory fsynced, so a
// blob either exists whole or not at all.
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { type FileHandle, mkdir, open, readdir, rename, stat, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { BlobStat, BlobStore, ByteRange, StoredBlob } from './blob-store.js';
import { type UploadWriteOptions, writeUpload } from './upload-sink.js';

const HOST = hostname().replace(/[^A-Za-z0-9-]/g, '_');

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function fsyncPath(p: string, flags = 'r'): Promise<void> {
  const fh = await open(p, flags);
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

export class LocalBlobStore implements BlobStore {
  private readonly blobDir: string;
  private readonly tmpDir: string;

  /** `uploads`: how uploads are written (native module, O_DIRECT); writeUpload's defaults otherwise. */
  constructor(
    root: string,
    private readonly uploads: UploadWriteOptions = {},
  ) {
    this.blobDir = path.join(root, 'blobs');
    this.tmpDir = path.join(root, 'tmp');
  }

  private pathOf(key: string): string {
    if (!/^[A-Za-z0-9_-]{16,64}$/.test(key)) throw new Error(`invalid blob key ${key}`);
    return path.join(this.blobDir, key.slice(0, 2), key);
  }

  async write(source: Readable, opts: { maxBytes: number }): Promise<StoredBlob> {
    const key = randomBytes(18).toString('base64url');
    // host.pid in the name lets recover() tell a crashed writer's file from a live one's.
    const tmp = path.join(this.tmpDir, `${HOST}.${process.pid}.${key}.part`);
    const fh = await open(tmp, 'wx', 0o600);
    try {
      const { bytes, sha256 } = await writeUpload(source, fh, opts.maxBytes, this.uploads);
      const final = this.pathOf(key);
      await mkdir(path.dirname(final), { recursive: true, mode: 0o700 });
      await rename(tmp, final);
      await fsyncPath(path.dirname(final));
      const st = await this.stat(key);
      return { key, length: bytes, sha256, fingerprint: st!.fingerprint };
    } catch (err) {
      // A no-op when the upload already closed it.
      await fh.close().catch(() => {});
      await unlink(tmp).catch(() => {});
      throw err;
    }
  }

  async read(key: string, range?: ByteRange): Promise<Readable> {
    const fh = await this.openFile(key);
    return createReadStream('', { fd: fh, start: range?.start, end: range?.end, highWaterMark: 1 << 20 });
  }

  openFile(key: string): Promise<FileHandle> {
    return open(this.pathOf(key), 'r');
  }

  async stat(key: string): Promise<BlobStat | null> {
    try {
      const st = await stat(this.pathOf(key), { bigint: true });
      return { size: Number(st.size), fingerprint: `${st.size}-${st.mtimeNs}-${st.ino}` };
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

  async recover(): Promise<number> {
    await mkdir(this.blobDir, { recursive: true, mode: 0o700 });
    await mkdir(this.tmpDir, { recursive: true, mode: 0o700 });
    let removed = 0;
    const dayAgo = Date.now() - 24 * 3600 * 1000;
    for (const name of await readdir(this.tmpDir)) {
      const file = path.join(this.tmpDir, name);
      const m = /^(.+)\.(\d+)\.[A-Za-z0-9_-]+\.part$/.exec(name);
      if (m && m[1] === HOST) {
        // Ours or a live sibling process's: still being written.
        const pid = Number(m[2]);
        if (pid === process.pid || isAlive(pid)) continue;
      } else if (m) {
        // Another host sharing the directory: only files untouched for a day are surely orphans.
        const st = await stat(file).catch(() => null);
        if (!st || st.mtimeMs > dayAgo) continue;
      }
      await unlink(file).catch(() => {});
      removed++;
    }
    return removed;
  }
}
