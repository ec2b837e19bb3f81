import { ConflictError, NotFoundError } from '../core/errors.js';
import type { Db } from '../db/database.js';
import type { PublicHandlers } from '../http/typed-routes.js';
import { recordPostEvent } from './events.js';
import type { PostsContext } from './publication-plan.js';
import { updatePost } from './queries.js';
import { lockChannels } from '../channels/channels.js';
import { queueRevocation } from '../providers/account-revocations.js';

/**
 * Removes a channel from its organization: it leaves every list and takes no posts, while its posts
 * and their history stay; its account's tokens are revoked at the network. Its `scheduled` and `failed` posts become drafts, each with its `drafted`
 * event, in the same transaction; their old publication plans then find them not due and do nothing.
 * Refused while one of its posts is being published, which would otherwise finish on a channel
 * that is gone.
 */
export async function removeChannel(ctx: PostsContext, organizationId: string, channelId: string): Promise<void> {
  await ctx.db.transaction().execute(async (trx) => {
    const [channel] = await lockChannels(trx, organizationId, [channelId]);
    if (!channel || channel.status === 'removed')
      throw new NotFoundError(`There is no channel ${channelId} in this organization.`);
    const posts = await postsOnChannel(trx, organizationId, channelId);
    if (posts.some((post) => post.status === 'publishing')) {
      throw new ConflictError(
        'A post of this channel is being published; remove the channel once it is published or failed.',
      );
    }
    const now = ctx.clock();
    for (const post of posts) {
      if (post.status !== 'scheduled' && post.status !== 'failed') continue;
      const drafted = await updatePost(trx, organizationId, post.id, {
        status: 'draft',
        error_code: null,
        error_message: null,
        updated_at: now,
      });
      await recordPostEvent(trx, drafted, 'drafted', now, { reason: `its channel ${channel.name} was removed` });
    }
    await trx.updateTable('channels').set({ status: 'removed' }).where('id', '=', channelId).execute();
    // The account's tokens leave the channel now, and are revoked at the network by housekeeping.
    await queueRevocation(trx, channel);
  });
}

function postsOnChannel(trx: Db, organizationId: string, channelId: string) {
  return trx
    .selectFrom('posts')
    .select(['id', 'status'])
    .where('organization_id', '=', organizationId)
    .where('channel_id', '=', channelId)
    .where('status', 'in', ['scheduled', 'failed', 'publishing'])
    .orderBy('id')
    .forUpdate()
    .execute();
}

export function channelRemovalOperations(ctx: PostsContext): Pick<PublicHandlers, 'deleteChannel'> {
  return {
    deleteChannel: async ({ principal, params }) => {
      await removeChannel(ctx, principal.organizationId, params.id);
      return { status: 204 };
    },
  };
}
