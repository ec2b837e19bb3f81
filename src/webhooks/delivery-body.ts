import type { components } from '../../generated/public-v1.js';
import type { WebhookDelivery } from './deliveries.js';

export type WebhookDeliveryBody = components['schemas']['WebhookDelivery'];

/** A delivery as the API and the web app show it. */
export function toDeliveryBody(row: WebhookDelivery): WebhookDeliveryBody {
  return {
    id: row.id,
    webhookId: row.endpoint_id,
    eventType: row.event_type,
    status: row.status,
    attempts: row.attempts,
    lastStatusCode: row.last_status_code,
    lastDurationMs: row.last_duration_ms,
    lastError: row.last_error,
    lastResponseBody: row.last_response_body,
    nextAttemptAt: row.next_attempt_at?.toISOString() ?? null,
    deliveredAt: row.delivered_at?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
  };
}
