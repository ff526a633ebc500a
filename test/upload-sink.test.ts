// The upload sink on all its paths: hashing and writing in the thread pool (native module) with
// O_DIRECT or through the page cache, and on the JS thread (no module). Each must store exactly the
// bytes received, whatever the chunking and however they fall on block and staging-buffer
// boundaries, report their SHA-256, and fail cleanly: 413 past the limit, the write error of the
// disk, the source's own error. The end-to-end behaviour (no row, no blob, no temp file) is in
// files-robustness.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { type FileHandle, mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { writeUpload } from '../src/platform/blobs/local/upload-sink.js';
import { DomainError } from '../src/platform/errors.js';
import { type NativeModule, nativeModule } from '../src/platform/native/native.js';
import { bytes } from './helpers/files.js';
import { NATIVE_SKIP } from './helpers/native.js';

const MiB = 1024 * 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** The payload in chunks of uneven sizes, as sockets deliver them. */
function chunked(data: Buffer, seed: number): Readable {
  const parts: Buffer[] = [];
  let at = 0;
  let x = seed;
  while (at < data.length) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    const n = 1 + (x % (256 * 1024));
    parts.push(data.subarray(at, at + n));
    at += n;
  }
  return Readable.from(parts);
}

/** Whether the filesystem under `dir` takes O_DIRECT (tmpfs before Linux 6.6 and FUSE may not). */
async function takesDirect(dir: string): Promise<boolean> {
  try {
    const fh = await open(
      path.join(dir, 'probe'),
      constants.O_WRONLY | constants.O_CREAT | constants.O_DIRECT,
    );
    await fh.close();
    return true;
  } catch {
    return false;
  }
}

for (const mode of ['native, direct', 'native, buffered', 'js'] as const) {
  describe(`upload sink (${mode})`, { skip: mode === 'js' ? false : NATIVE_SKIP }, () => {
    let dir: string;
    /** What `direct` must say: O_DIRECT is used exactly when asked for and the filesystem takes it. */
    let expectDirect = false;
    const opts = () => ({
      native: mode === 'js' ? null : nativeModule(),
      directIo: mode === 'native, direct',
    });
    before(async () => {
      dir = await mkdtemp(path.join(tmpdir(), `remessa-sink-${mode.replace(/\W+/g, '-')}-`));
      expectDirect = mode === 'native, direct' && (await takesDirect(dir));
      if (mode === 'native, direct' && !expectDirect)
        console.log(`# ${dir} refuses O_DIRECT: buffered writes expected`);
    });
    after(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    // Around a block (4 KiB), the staging buffer (1 MiB) and the stream's batches.
    const sizes = [
      0,
      1,
      4095,
      4096,
      4097,
      65536,
      65537,
      MiB - 1,
      MiB,
      MiB + 1,
      2 * MiB + 4096,
      5 * MiB + 3,
      21 * MiB + 7,
    ];
    for (const size of sizes) {
      test(`${size} bytes in uneven chunks: exact bytes and SHA-256, file closed`, async () => {
        const data = bytes(size);
        const file = path.join(dir, `ok-${size}`);
        const fh = await open(file, 'wx');
        const written = await writeUpload(chunked(data, size + 1), fh, size, opts());
        assert.deepEqual(written, { bytes: size, sha256: sha(data), direct: expectDirect });
        assert.equal(fh.fd, -1, 'the handle is closed');
        assert.ok((await readFile(file)).equals(data));
      });
    }

    test('one byte past the limit → 413, whatever was written stays for the caller to remove', async () => {
      const fh = await open(path.join(dir, 'big'), 'wx');
      await assert.rejects(writeUpload(chunked(bytes(3 * MiB + 1), 7), fh, 3 * MiB, opts()), (err) => {
        assert.ok(err instanceof DomainError);
        assert.equal(err.kind, 'too-large');
        return true;
      });
      await fh.close();
    });

    test('a write error of the disk is the error of the upload', async () => {
      const file = path.join(dir, 'readonly');
      await writeFile(file, '');
      const fh = await open(file, 'r');
      await assert.rejects(writeUpload(chunked(bytes(MiB), 3), fh, 2 * MiB, opts()), { code: 'EBADF' });
      await fh.close();
    });

    test('a source that fails mid-way (client gone) fails the upload with its error', async () => {
      const fh = await open(path.join(dir, 'aborted'), 'wx');
      async function* dying() {
        yield bytes(2 * MiB);
        throw new Error('client went away');
      }
      await assert.rejects(writeUpload(Readable.from(dying()), fh, 8 * MiB, opts()), /client went away/);
      await fh.close();
    });
  });
}

/** Runs `fn` on a file in a fresh temp dir (written with `content` first, unless null), then cleans up. */
async function withFile(
  flags: string,
  content: string | null,
  fn: (fh: FileHandle, file: string, dir: string) => Promise<void>,
): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'remessa-hw-'));
  const file = path.join(dir, 'f');
  if (content !== null) await writeFile(file, content);
  const fh = await open(file, flags);
  try {
    await fn(fh, file, dir);
  } finally {
    await fh.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** writeHashed as a promise of its errno. */
const batchOf =
  (native: NativeModule, writer: object) =>
  (buffers: Buffer[], last = false) =>
    new Promise<number>((resolve) => native.writeHashed(writer, buffers, resolve, last));

describe('native upload writer', { skip: NATIVE_SKIP }, () => {
  test('hashes what it writes; refuses overlapping batches, a second digest and non-Buffers', () =>
    withFile('w', null, async (fh) => {
      const native = nativeModule()!;
      const writer = native.hashWriter(fh.fd, false);
      const write = batchOf(native, writer);
      const first = bytes(MiB);
      const written = write([first]);
      assert.throws(() => native.writeHashed(writer, [bytes(1)], () => {}), /busy or closed/);
      assert.equal(await written, 0);
      assert.throws(() => native.writeHashed(writer, ['text' as unknown as Buffer], () => {}), TypeError);
      // Empty chunks are no bytes, not a failed write.
      const empty = Buffer.alloc(0);
      const tail = bytes(10);
      assert.equal(await write([empty, tail, empty]), 0);
      assert.equal(await write([empty]), 0);
      assert.equal(native.digestHashed(writer), sha(Buffer.concat([first, tail])));
      assert.equal((await fh.stat()).size, MiB + 10);
      assert.throws(() => native.digestHashed(writer), /already digested/);
      assert.throws(() => native.writeHashed(writer, [bytes(1)], () => {}), /busy or closed/);
      assert.throws(() => native.hashWriter(999_999, false), /bad descriptor/);
      assert.throws(() => native.hashWriter(fh.fd, 'yes' as unknown as boolean), TypeError);
    }));

  test('direct mode holds back what is not a whole staging buffer until the last batch', (t) =>
    withFile('w', null, async (fh, file, dir) => {
      if (!(await takesDirect(dir))) return t.skip(`${dir} refuses O_DIRECT`);
      const native = nativeModule()!;
      const writer = native.hashWriter(fh.fd, true);
      assert.equal(native.directHashed(writer), true);
      const write = batchOf(native, writer);
      const data = bytes(MiB + 5000);
      assert.equal(await write([data.subarray(0, 3000)]), 0);
      assert.equal((await fh.stat()).size, 0, 'less than a staging buffer: nothing written yet');
      assert.throws(() => native.digestHashed(writer), /not yet written/);
      assert.equal(await write([data.subarray(3000)]), 0);
      assert.equal((await fh.stat()).size, MiB, 'one whole staging buffer written');
      assert.equal(await write([], true), 0);
      assert.equal((await fh.stat()).size, MiB + 5000, 'whole blocks and the tail written');
      assert.equal(native.digestHashed(writer), sha(data));
      assert.ok((await readFile(file)).equals(data));
    }));

  // Read-only: every write fails with EBADF.
  test('after a failed batch the writer takes no more batches and gives no digest', () =>
    withFile('r', '', async (fh) => {
      const native = nativeModule()!;
      for (const direct of [false, true]) {
        const writer = native.hashWriter(fh.fd, direct);
        // Direct mode stages up to 1 MiB before it writes: 2 MiB makes it write.
        assert.notEqual(await batchOf(native, writer)([bytes(2 * MiB)]), 0);
        // The hash has seen bytes the file has not: nothing may go on as if they were written.
        assert.throws(() => native.writeHashed(writer, [bytes(1)], () => {}), /earlier batch failed/);
        assert.throws(() => native.digestHashed(writer), /failed/);
        native.closeHashed(writer);
      }
    }));

  test('a file that is not empty is written through the page cache', () =>
    withFile('r+', 'x', async (fh) => {
      const native = nativeModule()!;
      const writer = native.hashWriter(fh.fd, true);
      assert.equal(native.directHashed(writer), false);
      native.closeHashed(writer);
    }));
});
