// The S3-compatible store for tests: the Ceph RADOS Gateway that ../shared/services/ceph-s3/start
// (or .ci/run) brings up. Its settings come from S3_ENDPOINT / S3_ACCESS_KEY / S3_SECRET_KEY, or
// from the env file the start script writes; each suite gets a bucket of its own, emptied and
// removed afterwards. Absent, S3 tests skip with S3_SKIP; REMESSA_TEST_REQUIRE_S3=1 fails instead.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import type { S3Config } from '../../src/app/config.js';
import { S3BlobStore } from '../../src/platform/blobs/s3/s3-blob-store.js';

export interface S3Env {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  region: string;
}

function fromEnvFile(): Record<string, string> {
  const file = process.env['CEPH_DIR']
    ? path.join(process.env['CEPH_DIR'], 'env')
    : path.join(tmpdir(), 'remessa-ceph', 'env');
  try {
    const out: Record<string, string> = {};
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      const m = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
      if (m) out[m[1]!] = m[2]!;
    }
    return out;
  } catch {
    return {};
  }
}

export function s3Env(): S3Env | null {
  const file = process.env['S3_ENDPOINT'] ? {} : fromEnvFile();
  const get = (k: string) => process.env[k] ?? file[k];
  const endpoint = get('S3_ENDPOINT');
  const accessKey = get('S3_ACCESS_KEY');
  const secretKey = get('S3_SECRET_KEY');
  if (!endpoint || !accessKey || !secretKey) return null;
  return { endpoint, accessKey, secretKey, region: get('S3_REGION') ?? 'us-east-1' };
}

export const S3_REQUIRED = process.env['REMESSA_TEST_REQUIRE_S3'] === '1';
export const S3_SKIP =
  'no S3-compatible store (S3_ENDPOINT, S3_ACCESS_KEY, S3_SECRET_KEY or ceph-s3/start): S3 tests skipped';

/** How long the write probe of s3Available() may take in all. */
const PROBE_MS = 20_000;

/**
 * Whether the gateway answers; with REMESSA_TEST_REQUIRE_S3=1 its absence throws. One that answers
 * but does not complete a write (a full Ceph cluster answers reads and never acknowledges writes)
 * throws too, within PROBE_MS: every S3 test file then fails at once, naming the store, instead of
 * each waiting out the runner's limit.
 */
export async function s3Available(): Promise<boolean> {
  const env = s3Env();
  let ok = false;
  if (env)
    ok = await fetch(env.endpoint, { signal: AbortSignal.timeout(3000) }).then(
      (r) => r.status < 500,
      () => false,
    );
  if (!ok && S3_REQUIRED) throw new Error(`REMESSA_TEST_REQUIRE_S3=1 but ${S3_SKIP}`);
  if (ok && env) await probeWrite(env);
  return ok;
}

async function probeWrite(e: S3Env): Promise<void> {
  const client = clientFor(e);
  const Bucket = `remessa-probe-${randomBytes(5).toString('hex')}`;
  const once = { abortSignal: AbortSignal.timeout(PROBE_MS) };
  try {
    await client.send(new CreateBucketCommand({ Bucket }), once);
    await client.send(new PutObjectCommand({ Bucket, Key: 'probe', Body: 'probe' }), once);
    await client.send(new DeleteObjectCommand({ Bucket, Key: 'probe' }), once);
    await client.send(new DeleteBucketCommand({ Bucket }), once);
  } catch (err) {
    const e2 = err as Error;
    throw new Error(
      `the S3 store at ${e.endpoint} answers but did not complete a test write within ${PROBE_MS / 1000} s ` +
        `(${e2.name}: ${e2.message}); S3 tests cannot run until it is healthy (a full Ceph cluster does this)`,
    );
  } finally {
    client.destroy();
  }
}

/** The tests' own client, bounded like the server's: a store that stops answering fails a test. */
export function clientFor(e: S3Env): S3Client {
  // As the server does (src/platform/blobs/s3/s3-blob-store.ts): the SDK's Node 22 notice is in the README.
  process.env['AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED'] ??= 'true';
  return new S3Client({
    endpoint: e.endpoint,
    region: e.region,
    forcePathStyle: true,
    credentials: { accessKeyId: e.accessKey, secretAccessKey: e.secretKey },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: { connectionTimeout: 5000, socketTimeout: 30_000 },
  });
}

export interface TestBucket {
  config: S3Config;
  /** REMESSA_* settings that point a server at this bucket. */
  env: Record<string, string>;
  store(): S3BlobStore;
  client: S3Client;
  /** Every key in the bucket. */
  keys(): Promise<string[]>;
  drop(): Promise<void>;
}

export async function createTestBucket(prefix = ''): Promise<TestBucket> {
  const e = s3Env();
  if (!e) throw new Error(S3_SKIP);
  const bucket = `remessa-test-${randomBytes(5).toString('hex')}`;
  const client = clientFor(e);
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  const config: S3Config = {
    bucket,
    prefix,
    endpoint: e.endpoint,
    region: e.region,
    forcePathStyle: true,
    accessKeyId: e.accessKey,
    secretAccessKey: e.secretKey,
  };
  const keys = async () => {
    const out: string[] = [];
    let token: string | undefined;
    do {
      const r = await client.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }));
      for (const o of r.Contents ?? []) out.push(o.Key!);
      token = r.IsTruncated ? r.NextContinuationToken : undefined;
    } while (token);
    return out;
  };
  return {
    config,
    env: {
      REMESSA_STORAGE: 's3',
      REMESSA_S3_BUCKET: bucket,
      REMESSA_S3_PREFIX: prefix,
      REMESSA_S3_ENDPOINT: e.endpoint,
      REMESSA_S3_REGION: e.region,
      REMESSA_S3_ACCESS_KEY_ID: e.accessKey,
      REMESSA_S3_SECRET_ACCESS_KEY: e.secretKey,
    },
    store: () => new S3BlobStore(config),
    client,
    keys,
    async drop() {
      const store = new S3BlobStore(config);
      for await (const p of store.listPartial()) await store.discardPartial(p);
      store.close();
      for (const k of await keys()) await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: k }));
      await client.send(new DeleteBucketCommand({ Bucket: bucket }));
      client.destroy();
    },
  };
}
