import type { EnvReader } from './env-reader.js';

/** The delivery of webhooks. */
export interface WebhooksConfig {
  /**
   * Addresses or CIDR ranges webhook receivers may be at even though they are not public (receivers on
   * the operator's network).
   */
  allowedRanges: string[];
  /** Waits before each retry of a failed delivery, in seconds; after the last, the delivery fails. */
  retrySchedule: number[];
  /** Deliveries a worker process sends at once (they wait on the receivers). */
  concurrency: number;
  /** How often a worker looks for deliveries that fell due. */
  pollingIntervalSeconds: number;
}

/** About a day of retries: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
const WEBHOOK_RETRY_SCHEDULE = [5, 300, 1800, 7200, 18_000, 36_000, 36_000];

export function readWebhooks(read: EnvReader): WebhooksConfig {
  const allowedRanges = read.addressRanges('WEBHOOK_ALLOW_RANGES');
  const raw = read.text('WEBHOOK_RETRY_SCHEDULE')?.trim();
  const retrySchedule = raw ? raw.split(',').map((entry) => Number(entry.trim())) : WEBHOOK_RETRY_SCHEDULE;
  if (
    retrySchedule.length > 20 ||
    retrySchedule.some((seconds) => !Number.isFinite(seconds) || seconds < 0.1 || seconds > 86_400)
  ) {
    read.problem(`WEBHOOK_RETRY_SCHEDULE must list up to 20 waits in seconds (0.1 to 86400), got "${raw}"`);
  }
  return {
    allowedRanges,
    retrySchedule,
    concurrency: read.integer('WEBHOOK_CONCURRENCY', 100, 1, 1000),
    pollingIntervalSeconds: read.integer('WEBHOOK_POLL_MS', 500, 500, 60_000) / 1000,
  };
}
