// The upload sink on both paths: hashing and writing in the thread pool (native module) and on the
// JS thread (no module). Each must store exactly the bytes received, whatever the chunking, report
// their SHA-256, and fail cleanly: 413 past the limit, the write error of the disk, the source's
// own error. The end-to-end behaviour (no row, no blob, no temp file) is in files-robustness.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { AppError } from '../src/errors.js';
import { nativeModule } from '../src/native.js';
import { writeUpload } from '../src/storage/upload-sink.js';
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

for (const mode of ['native', 'js'] as const) {
  describe(`upload sink (${mode})`, { skip: mode === 'native' ? NATIVE_SKIP : false }, () => {
    let dir: string;
    const native = () => (mode === 'native' ? nativeModule() : null);
    before(async () => {
      dir = await mkdtemp(path.join(tmpdir(), `remessa-sink-${mode}-`));
    });
    after(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    for (const size of [0, 1, 65535, 65536, 65537, 5 * MiB + 3, 21 * MiB + 7]) {
      test(`${size} bytes in uneven chunks: exact bytes and SHA-256, file closed`, async () => {
        const data = bytes(size);
        const file = path.join(dir, `ok-${size}`);
        const fh = await open(file, 'wx');
        const written = await writeUpload(chunked(data, size + 1), fh, size, native());
        assert.deepEqual(written, { bytes: size, sha256: sha(data) });
        assert.equal(fh.fd, -1, 'the handle is closed');
        assert.ok((await readFile(file)).equals(data));
      });
    }

    test('one byte past the limit → 413, whatever was written stays for the caller to remove', async () => {
      const fh = await open(path.join(dir, 'big'), 'wx');
      await assert.rejects(writeUpload(chunked(bytes(3 * MiB + 1), 7), fh, 3 * MiB, native()), (err) => {
        assert.ok(err instanceof AppError);
        assert.equal(err.status, 413);
        return true;
      });
      await fh.close();
    });

    test('a write error of the disk is the error of the upload', async () => {
      const file = path.join(dir, 'readonly');
      await writeFile(file, '');
      const fh = await open(file, 'r');
      await assert.rejects(writeUpload(chunked(bytes(MiB), 3), fh, 2 * MiB, native()), { code: 'EBADF' });
      await fh.close();
    });

    test('a source that fails mid-way (client gone) fails the upload with its error', async () => {
      const fh = await open(path.join(dir, 'aborted'), 'wx');
      async function* dying() {
        yield bytes(2 * MiB);
        throw new Error('client went away');
      }
      await assert.rejects(writeUpload(Readable.from(dying()), fh, 8 * MiB, native()), /client went away/);
      await fh.close();
    });
  });
}

describe('native upload writer', { skip: NATIVE_SKIP }, () => {
  test('hashes what it writes; refuses overlapping batches, a second digest and non-Buffers', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'remessa-hw-'));
    const fh = await open(path.join(dir, 'f'), 'w');
    try {
      const native = nativeModule()!;
      const writer = native.hashWriter(fh.fd);
      const first = { data: bytes(MiB) };
      const written = new Promise<number>((resolve) => native.writeHashed(writer, [first.data], resolve));
      assert.throws(() => native.writeHashed(writer, [bytes(1)], () => {}), /busy or closed/);
      assert.equal(await written, 0);
      assert.throws(() => native.writeHashed(writer, ['text' as unknown as Buffer], () => {}), TypeError);
      // Empty chunks are no bytes, not a failed write.
      const empty = Buffer.alloc(0);
      const tail = bytes(10);
      assert.equal(
        await new Promise<number>((resolve) => native.writeHashed(writer, [empty, tail, empty], resolve)),
        0,
      );
      assert.equal(await new Promise<number>((resolve) => native.writeHashed(writer, [empty], resolve)), 0);
      assert.equal(native.digestHashed(writer), sha(Buffer.concat([first.data, tail])));
      assert.equal((await fh.stat()).size, MiB + 10);
      assert.throws(() => native.digestHashed(writer), /already digested/);
      assert.throws(() => native.writeHashed(writer, [bytes(1)], () => {}), /busy or closed/);
      assert.throws(() => native.hashWriter(999_999), /bad descriptor/);
    } finally {
      await fh.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
