import type { Channel } from '../channels/tables.js';
import { ConflictError } from '../core/errors.js';
import type { Db } from '../db/database.js';
import { recordPostEvent } from './events.js';
import { updatePost } from './queries.js';

/**
 * The posts' part in removing a channel (a ChannelRemovalStep): its `scheduled` and `failed` posts
 * become drafts, each with its `drafted` event; their old publication plans then find them not due and
 * do nothing. Refused while one of its posts is being published, which would otherwise finish on a
 * channel that is gone.
 */
export async function draftPostsOfRemovedChannel(trx: Db, channel: Channel, now: Date): Promise<void> {
  const posts = await postsOnChannel(trx, channel.organization_id, channel.id);
  if (posts.some((post) => post.status === 'publishing')) {
    throw new ConflictError(
      'A post of this channel is being published; remove the channel once it is published or failed.',
    );
  }
  for (const post of posts) {
    if (post.status !== 'scheduled' && post.status !== 'failed') continue;
    const drafted = await updatePost(trx, channel.organization_id, post.id, {
      status: 'draft',
      error_code: null,
      error_message: null,
      updated_at: now,
    });
    await recordPostEvent(trx, drafted, 'drafted', now, { reason: `its channel ${channel.name} was removed` });
  }
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
