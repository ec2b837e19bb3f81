import { findChannel } from '../../channels/channels.js';
import type { Channel } from '../../channels/tables.js';
import { NotFoundError, NotImplementedError, UnprocessableError } from '../../core/errors.js';
import type { Db } from '../../db/database.js';
import type { PublicHandlers } from '../../http/typed-routes.js';
import type { ProvidersContext } from '../providers.js';

/** A TikTok channel of the organization: 404 for an unknown or foreign id, 422 for another provider's channel. */
async function tiktokChannel(db: Db, organizationId: string, channelId: string): Promise<Channel> {
  const channel = await findChannel(db, organizationId, channelId);
  if (!channel) throw new NotFoundError(`There is no channel ${channelId} in this organization.`);
  if (channel.provider !== 'tiktok') throw new UnprocessableError(`Channel ${channel.id} is a ${channel.provider} channel, not a TikTok channel.`);
  return channel;
}

export function tiktokOperations(ctx: ProvidersContext): Pick<PublicHandlers, 'tiktokCreatorInfo' | 'tiktokAnalytics'> {
  return {
    // Read through the same adapter that checks TikTok items of a create, so both see one answer:
    // without a TikTok app configured it refuses with 422, an unreachable TikTok is a 502.
    tiktokCreatorInfo: async ({ principal, params }) => {
      const channel = await tiktokChannel(ctx.db, principal.organizationId, params.id);
      const source = ctx.providers.tiktok.creatorInfo;
      if (!source) throw new UnprocessableError('TikTok publishing is not configured on this server, so TikTok creator info cannot be read; ask its operator.');
      const info = await source.creatorInfo(channel);
      return { status: 200, body: { channelId: channel.id, ...info } };
    },

    tiktokAnalytics: async ({ principal, params }) => {
      await tiktokChannel(ctx.db, principal.organizationId, params.id);
      throw new NotImplementedError('TikTok analytics are not available on this server yet.');
    },
  };
}
