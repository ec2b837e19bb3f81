import type { Db } from '../db/database.js';
import type { RowCursorList } from '../http/pagination.js';
import type { WebhookDelivery } from './deliveries.js';

/** An endpoint's deliveries, newest first, paged before the number of the last delivery of a page. */
export const DELIVERIES_LIST: RowCursorList<Pick<WebhookDelivery, 'seq'>, string> = {
  name: 'webhook-deliveries',
  // As text, as `read` takes it: PGlite 0.5 reads int8 as a number despite its INT8 parser.
  positionOf: (delivery) => ({ seq: String(delivery.seq) }),
  read(value) {
    const seq = (value as { seq?: unknown } | null)?.seq;
    return typeof seq === 'string' && /^\d{1,19}$/.test(seq) ? seq : undefined;
  },
};

/** Up to `count` deliveries of the endpoint, newest first, before the delivery numbered `beforeSeq`. */
export function listDeliveries(
  db: Db,
  endpointId: string,
  beforeSeq: string | undefined,
  count: number,
): Promise<WebhookDelivery[]> {
  let query = db.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', endpointId);
  if (beforeSeq !== undefined) query = query.where('seq', '<', beforeSeq);
  return query.orderBy('seq', 'desc').limit(count).execute();
}
