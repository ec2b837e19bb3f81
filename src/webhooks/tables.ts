import type { ColumnType, Generated } from 'kysely';
import type { CreatedAt, Timestamp } from '../db/columns.js';

/** An endpoint of an organization that receives signed events (see endpoints.ts). */
export interface WebhookEndpointTable {
  id: string;
  organization_id: string;
  /** The OAuth app whose token created it; deleting or revoking the app removes it. */
  app_id: string | null;
  url: string;
  description: string | null;
  event_types: ColumnType<string[], string, string>;
  enabled: Generated<boolean>;
  /** `failing` when the server turned it off. */
  disabled_reason: string | null;
  /** The signing secret (`whsec_…`), encrypted. */
  secret: string;
  /** The secret before the last rotation, encrypted, signing too until `previous_secret_expires_at`. */
  previous_secret: string | null;
  previous_secret_expires_at: Timestamp | null;
  /** Since when every attempt failed; cleared by a success. */
  failing_since: Timestamp | null;
  created_at: CreatedAt;
  updated_at: Generated<Date>;
}

/** One event for one endpoint, and how sending it went. */
export interface WebhookDeliveryTable {
  /** `msg_…`: the `webhook-id` of every attempt. */
  id: string;
  seq: Generated<string>;
  endpoint_id: string;
  event_type: string;
  ordering_key: string | null;
  /** The body, as first signed and sent. */
  payload: string;
  status: Generated<'pending' | 'succeeded' | 'failed'>;
  attempts: Generated<number>;
  last_status_code: number | null;
  last_duration_ms: number | null;
  last_error: string | null;
  last_response_body: string | null;
  next_attempt_at: Timestamp | null;
  /** Held by the worker sending it until then. */
  claimed_until: Timestamp | null;
  delivered_at: Timestamp | null;
  created_at: CreatedAt;
}

declare module '../db/schema.js' {
  // Adds this feature's tables to the database type (see src/db/schema.ts).
  interface Database {
    webhook_endpoints: WebhookEndpointTable;
    webhook_deliveries: WebhookDeliveryTable;
  }
}
