// The one place that picks the blob-store adapter from the configuration. The S3 adapter (and the
// AWS SDK, ~0.3 s of CPU to load) is only imported when configured, so local-storage processes,
// the CLI's above all, start as fast as before.
import type { Config } from '../../app/config.js';
import type { BlobStore } from './blob-store.js';
import { LocalBlobStore } from './local/local-blob-store.js';

export async function createBlobStore(
  config: Pick<Config, 'storage' | 's3' | 'dataDir' | 'directIo' | 'sendfile'> &
    Partial<Pick<Config, 'connectTimeoutSeconds' | 'backendTimeoutSeconds'>>,
): Promise<BlobStore> {
  if (config.storage === 's3' && config.s3) {
    const { S3BlobStore } = await import('./s3/s3-blob-store.js');
    return new S3BlobStore({
      ...config.s3,
      connectTimeoutSeconds: config.connectTimeoutSeconds,
      backendTimeoutSeconds: config.backendTimeoutSeconds,
    });
  }
  return new LocalBlobStore(config.dataDir, {
    directIo: config.directIo === 'auto',
    sendfile: config.sendfile === 'auto',
  });
}
