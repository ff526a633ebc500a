// Storage configuration and `remessa storage check [--fix]`: invalid settings stop start-up with
// exit 2, an unreachable bucket with exit 1 and a clear message; the check finds missing objects
// and orphans on the local store and on S3, and --fix removes only orphans older than an hour.
import assert from 'node:assert/strict';
import { utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../src/app/config.js';
import { remessa } from './helpers/cli.js';
import { bytes, uploadFile, uploadRaw } from './helpers/files.js';
import { createTestBucket, S3_SKIP, s3Available, type TestBucket } from './helpers/s3.js';
import { basic, closeAll, startTestServer, type TestServer } from './helpers/server.js';

const hasS3 = await s3Available();
const HOUR = 3600 * 1000;

describe('storage settings', () => {
  test('local by default; s3 settings with their defaults', () => {
    assert.equal(loadConfig({}).storage, 'local');
    assert.equal(loadConfig({}).s3, null);
    assert.deepEqual(loadConfig({ REMESSA_STORAGE: 's3', REMESSA_S3_BUCKET: 'files' }).s3, {
      bucket: 'files',
      prefix: '',
      endpoint: null,
      region: 'us-east-1',
      forcePathStyle: false,
      accessKeyId: null,
      secretAccessKey: null,
    });
    const c = loadConfig({
      REMESSA_STORAGE: 's3',
      REMESSA_S3_BUCKET: 'files',
      REMESSA_S3_ENDPOINT: 'http://127.0.0.1:9000/',
      REMESSA_S3_PREFIX: 'remessa/',
    });
    assert.equal(c.s3?.endpoint, 'http://127.0.0.1:9000');
    assert.equal(c.s3?.forcePathStyle, true, 'path style by default with an endpoint');
    assert.equal(
      loadConfig({
        REMESSA_STORAGE: 's3',
        REMESSA_S3_BUCKET: 'files',
        REMESSA_S3_ENDPOINT: 'http://h:9000',
        REMESSA_S3_FORCE_PATH_STYLE: 'false',
      }).s3?.forcePathStyle,
      false,
    );
  });

  const invalid: [Record<string, string>, string][] = [
    [{ REMESSA_STORAGE: 'nfs' }, 'REMESSA_STORAGE must be one of local, s3, got "nfs"'],
    [{ REMESSA_STORAGE: 's3' }, 'REMESSA_STORAGE=s3 needs REMESSA_S3_BUCKET'],
    [
      { REMESSA_STORAGE: 's3', REMESSA_S3_BUCKET: 'No_Such' },
      'REMESSA_S3_BUCKET is not a valid bucket name: "No_Such"',
    ],
    [
      { REMESSA_STORAGE: 's3', REMESSA_S3_BUCKET: 'files', REMESSA_S3_ENDPOINT: 'ftp://h' },
      'REMESSA_S3_ENDPOINT must be an http(s) URL such as http://127.0.0.1:9000, got "ftp://h"',
    ],
    [
      { REMESSA_STORAGE: 's3', REMESSA_S3_BUCKET: 'files', REMESSA_S3_ACCESS_KEY_ID: 'AK' },
      'REMESSA_S3_ACCESS_KEY_ID and REMESSA_S3_SECRET_ACCESS_KEY go together (or neither, for the AWS default credentials)',
    ],
    [
      { REMESSA_STORAGE: 's3', REMESSA_S3_BUCKET: 'files', REMESSA_S3_FORCE_PATH_STYLE: 'sometimes' },
      'REMESSA_S3_FORCE_PATH_STYLE must be true or false, got "sometimes"',
    ],
  ];
  for (const [env, message] of invalid) {
    test(`rejects ${JSON.stringify(env)}`, () => {
      assert.throws(
        () => loadConfig(env),
        (err) => err instanceof ConfigError && err.message === message,
      );
    });
  }

  test('remessa serve: an invalid storage setting exits 2 before anything starts', async () => {
    const r = await remessa({ REMESSA_STORAGE: 's3', REMESSA_DATA_DIR: '/nonexistent/remessa' }, ['serve']);
    assert.equal(r.code, 2);
    assert.equal(r.stderr.trim(), 'remessa: configuration error: REMESSA_STORAGE=s3 needs REMESSA_S3_BUCKET');
  });

  test('remessa serve: an unreachable bucket exits 1 and says which', async () => {
    const r = await remessa(
      {
        REMESSA_DATA_DIR: path.join(
          await import('node:os').then((os) => os.tmpdir()),
          `remessa-s3-down-${process.pid}`,
        ),
        REMESSA_PORT: '0',
        REMESSA_SECRET: 'storage-cli-secret-storage-cli',
        REMESSA_STORAGE: 's3',
        REMESSA_S3_BUCKET: 'files',
        REMESSA_S3_ENDPOINT: 'http://127.0.0.1:9',
        REMESSA_S3_ACCESS_KEY_ID: 'AK',
        REMESSA_S3_SECRET_ACCESS_KEY: 'SECRET-NEVER-PRINTED',
      },
      ['serve'],
    );
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /^remessa: S3 bucket "files" \(s3 bucket=files endpoint=http:\/\/127\.0\.0\.1:9\) is not reachable: /,
    );
    assert.ok(!`${r.stdout}${r.stderr}`.includes('SECRET-NEVER-PRINTED'));
  });
});

/** Runs `remessa storage check` next to a running server and parses its --json report. */
async function check(t: TestServer, fix: boolean) {
  const r = await remessa(t.env, ['storage', 'check', '--json', ...(fix ? ['--fix'] : [])]);
  const report = JSON.parse(r.stdout) as {
    rows: number;
    objects: number;
    missing: { key: string; problem: string }[];
    orphans: { key: string }[];
    removed: number;
  };
  return { code: r.code, report };
}

for (const kind of ['local', 's3'] as const) {
  describe(`remessa storage check: ${kind}`, { skip: kind === 's3' && !hasS3 ? S3_SKIP : false }, () => {
    let t: TestServer;
    let bucket: TestBucket | undefined;
    const auth = basic('checker', 'checker-password');
    before(async () => {
      bucket = kind === 's3' ? await createTestBucket('check/') : undefined;
      // Files of a few bytes: kept in the blob store (not the database) for the check to look at.
      t = await startTestServer({ env: { REMESSA_INLINE_MAX_SIZE: '0', ...bucket?.env } });
      await t.createUser('checker', 'checker-password');
    });
    after(() => closeAll(t, () => bucket?.drop() ?? Promise.resolve()));

    test('consistent: every file has its object, no orphan, exit 0', async () => {
      for (const name of ['a.bin', 'b.bin'])
        assert.equal((await uploadRaw(t, auth, bytes(5000), { file: name })).status, 200);
      const { code, report } = await check(t, false);
      assert.equal(code, 0);
      assert.deepEqual([report.rows, report.objects, report.missing, report.orphans], [2, 2, [], []]);
    });

    test('an orphan is reported; --fix removes it only once it is an hour old', async () => {
      const { blobs } = t.server.services;
      const orphan = 'orphanorphanorphan0001';
      await blobs.put(orphan, Readable.from([bytes(100)]));
      let r = await check(t, true);
      assert.deepEqual([r.report.orphans.map((o) => o.key), r.report.removed], [[orphan], 0]);
      if (kind === 'local') {
        // Age it on disk (S3 has no way to backdate an object; the contract suite covers it there).
        const file = path.join(t.dataDir, 'blobs', orphan.slice(0, 2), orphan);
        const old = new Date(Date.now() - 2 * HOUR);
        await utimes(file, old, old);
        r = await check(t, true);
        assert.deepEqual([r.report.orphans.map((o) => o.key), r.report.removed], [[orphan], 1]);
        assert.equal(await blobs.stat(orphan), null);
      } else {
        await blobs.delete(orphan);
      }
    });

    test('a file whose object is gone: reported, exit 1', async () => {
      const entry = await uploadFile(t, auth, 'lost.bin', bytes(300));
      const row = await t.server.services.db
        .selectFrom('files')
        .select('blob_key')
        .where('id', '=', entry.id)
        .executeTakeFirstOrThrow();
      await t.server.services.blobs.delete(row.blob_key);
      const { code, report } = await check(t, false);
      assert.equal(code, 1);
      assert.deepEqual(report.missing, [{ key: row.blob_key, problem: 'object missing' }]);
      if (kind === 'local') await writeFile(path.join(t.dataDir, 'unused'), '');
    });
  });
}
