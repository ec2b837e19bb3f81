import type { EnvReader } from './env-reader.js';

/** How long the records that only serve a while (finished jobs, settled webhook deliveries) are kept. */
export interface RetentionSettings {
  /**
   * Days a finished job (completed, failed or cancelled) of the queue stays in pg-boss's table before
   * pg-boss deletes it (its `deleteAfterSeconds`); a post's own record, its history, is kept for good.
   */
  jobsDays: number;
  /** Days a settled webhook delivery stays listed (`GET /webhooks/{id}/deliveries`) before it is deleted. */
  webhookDeliveriesDays: number;
  /** Days an entry of an organization's audit log is kept (a year by default) before it is deleted. */
  auditLogDays: number;
}

export function readRetention(read: EnvReader): RetentionSettings {
  return {
    jobsDays: read.integer('JOB_RETENTION_DAYS', 7, 1, 365),
    webhookDeliveriesDays: read.integer('WEBHOOK_DELIVERY_RETENTION_DAYS', 30, 1, 365),
    auditLogDays: read.integer('AUDIT_LOG_RETENTION_DAYS', 365, 1, 3650),
  };
}
