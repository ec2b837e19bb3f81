import type { Clock } from '../core/clock.js';
import { NotFoundError } from '../core/errors.js';
import type { Db } from '../db/database.js';
import { lockChannels } from './channels.js';
import type { Channel } from './tables.js';
import { transaction } from '../db/transaction.js';
import { recordAudit, type AuditActor } from '../audit/log.js';

/**
 * A feature's part in removing a channel (its posts', its account's), run in the removal's transaction
 * with the channel's row locked; it refuses the removal by throwing.
 */
export type ChannelRemovalStep = (trx: Db, channel: Channel, now: Date) => Promise<void>;

/**
 * Removes a channel from its organization: it leaves every list and takes no posts, while its posts
 * and their history stay. What the removal changes in the features above channels is their steps,
 * given by the composition, all in one transaction with the channel marked removed.
 */
export class ChannelRemoval {
  constructor(
    private readonly ctx: { db: Db; clock: Clock },
    private readonly steps: readonly ChannelRemovalStep[],
  ) {}

  /** Removes the channel for `actor` (recorded in the audit log with the removal). */
  async remove(organizationId: string, channelId: string, actor: AuditActor): Promise<void> {
    await transaction(this.ctx.db, async (trx) => {
      const [channel] = await lockChannels(trx, organizationId, [channelId]);
      if (!channel || channel.status === 'removed')
        throw new NotFoundError(`There is no channel ${channelId} in this organization.`);
      const now = this.ctx.clock.now();
      for (const step of this.steps) await step(trx, channel, now);
      await trx.updateTable('channels').set({ status: 'removed' }).where('id', '=', channelId).execute();
      await recordAudit(trx, {
        organizationId,
        actor,
        action: 'channel.removed',
        subject: { type: 'channel', id: channel.id, label: `${channel.name} (${channel.provider})` },
      });
    });
  }
}
