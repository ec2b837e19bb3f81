import { sql } from 'kysely';
import { DELIVER, type WebhookContext } from './deliveries.js';

/** A pending delivery whose time passed this long ago without a job has lost it (see sweepDeliveries). */
const LOST_AFTER_SECONDS = 600;

/**
 * Housekeeping of deliveries: forgets settled ones after WEBHOOK_DELIVERY_RETENTION_DAYS (30 by
 * default), and plans a job again for any pending delivery that is overdue and has none (a job pg-boss
 * gave up on), so none is left behind.
 */
export async function sweepDeliveries(ctx: Pick<WebhookContext, 'db' | 'queue' | 'clock' | 'config'>): Promise<void> {
  const now = ctx.clock.now();
  const keepMs = ctx.config.retention.webhookDeliveriesDays * 86_400_000;
  // On the index of settled deliveries by age (`status <> 'pending'`, written out so that a generic plan
  // of the statement matches the index too): each sweep reads only what it deletes.
  await ctx.db
    .deleteFrom('webhook_deliveries')
    .where(sql<boolean>`status <> 'pending'`)
    .where('created_at', '<', new Date(now.getTime() - keepMs))
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
