import { sql } from 'kysely';
import { DELIVER, type WebhookContext } from './deliveries.js';

/** Settled deliveries are listed for this long, then forgotten. */
const KEEP_SETTLED_MS = 30 * 86_400_000;
/** A pending delivery whose time passed this long ago without a job has lost it (see sweepDeliveries). */
const LOST_AFTER_SECONDS = 600;

/**
 * Housekeeping of deliveries: forgets settled ones after 30 days, and plans a job again for any
 * pending delivery that is overdue and has none (a job pg-boss gave up on), so none is left behind.
 */
export async function sweepDeliveries(ctx: Pick<WebhookContext, 'db' | 'queue' | 'clock'>): Promise<void> {
  const now = ctx.clock.now();
  await ctx.db
    .deleteFrom('webhook_deliveries')
    .where('status', '!=', 'pending')
    .where('created_at', '<', new Date(now.getTime() - KEEP_SETTLED_MS))
    .execute();
  const { rows } = await sql<{ id: string }>`
    select d.id from webhook_deliveries d
    where d.status = 'pending' and d.next_attempt_at < ${new Date(now.getTime() - LOST_AFTER_SECONDS * 1000)}
    and ${ctx.queue.noLiveJob(DELIVER, 'deliveryId', sql.ref('d.id'))}
    order by d.seq limit 1000`.execute(ctx.db);
  await ctx.queue.planMany(
    ctx.db,
    DELIVER,
    rows.map((row) => ({ data: { deliveryId: row.id } })),
  );
}
