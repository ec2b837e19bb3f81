import type { Clock } from '../core/clock.js';
import path from 'node:path';
import type { Config } from '../core/config.js';
import type { InstanceSecrets } from '../db/instance-secrets.js';
import { LocalMediaStorage } from './local-storage.js';
import type { MediaStorage } from './storage.js';
import { UrlSigner } from './url-signer.js';

/** The storage the configuration names: `DATA_DIR/media` by default, or an S3-compatible bucket. */
export async function createMediaStorage(
  config: Config,
  secrets: InstanceSecrets,
  clock: Clock,
): Promise<MediaStorage> {
  const storage = config.media.storage;
  if (storage.kind === 's3') {
    // Loaded only when used: the AWS SDK is a tenth of what starting the server costs.
    const { S3MediaStorage } = await import('./s3-storage.js');
    return new S3MediaStorage(storage, clock);
  }
  const signer = new UrlSigner(await secrets.get('media-signing'));
  return new LocalMediaStorage(path.join(config.dataDir, 'media'), signer, () => config.publicUrl);
}
