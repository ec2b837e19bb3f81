import type { EnvReader } from './env-reader.js';

/** The publishing worker. */
export interface PublisherConfig {
  /** Publications a worker process runs at once. */
  concurrency: number;
  /** How often a worker looks for posts that fell due. */
  pollingIntervalSeconds: number;
  /** The first retry of a passing failure waits this long; later ones 6, 24, 120 and 360 times as long. */
  retryBaseMs: number;
  /** How long a worker holds a post it publishes without renewing its hold. */
  leaseMs: number;
}

export function readPublisher(read: EnvReader): PublisherConfig {
  return {
    concurrency: read.integer('PUBLISH_CONCURRENCY', 256, 1, 1000),
    pollingIntervalSeconds: read.integer('PUBLISH_POLL_MS', 500, 500, 60_000) / 1000,
    retryBaseMs: read.integer('PUBLISH_RETRY_BASE_MS', 5000, 100, 3_600_000),
    leaseMs: read.integer('PUBLISH_LEASE_SECONDS', 30, 5, 3600) * 1000,
  };
}
