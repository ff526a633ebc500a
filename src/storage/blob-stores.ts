// The one place that picks the blob-store adapter from the configuration.
import type { Config } from '../config.js';
import type { BlobStore } from './blob-store.js';
import { LocalBlobStore } from './local-blob-store.js';
import { S3BlobStore } from './s3-blob-store.js';

export function createBlobStore(
  config: Pick<Config, 'storage' | 's3' | 'dataDir' | 'directIo' | 'sendfile'>,
): BlobStore {
  if (config.storage === 's3' && config.s3) return new S3BlobStore(config.s3);
  return new LocalBlobStore(config.dataDir, {
    directIo: config.directIo === 'auto',
    sendfile: config.sendfile === 'auto',
  });
}
