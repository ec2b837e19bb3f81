import { findChannel } from '../../channels/channels.js';
import type { Channel } from '../../channels/tables.js';
import { NotFoundError, NotImplementedError, UnprocessableError } from '../../core/errors.js';
import type { Db } from '../../db/database.js';
import { paginate, type CursorList } from '../../http/pagination.js';
import type { PublicHandlers } from '../../http/typed-routes.js';
import type { ProvidersContext } from '../registry.js';

/** A TikTok channel of the organization: 404 for an unknown or foreign id, 422 for another provider's channel. */
async function tiktokChannel(db: Db, organizationId: string, channelId: string): Promise<Channel> {
  const channel = await findChannel(db, organizationId, channelId);
  if (!channel) throw new NotFoundError(`There is no channel ${channelId} in this organization.`);
  if (channel.provider !== 'tiktok')
    throw new UnprocessableError(`Channel ${channel.id} is a ${channel.provider} channel, not a TikTok channel.`);
  return channel;
}

/** A reading of a channel's videos: pages carry the start of the period and TikTok's own cursor. */
const ANALYTICS_LIST: CursorList<{ since: number; tiktok: string }> = {
  name: 'tiktok-analytics',
  read(position) {
    const { since, tiktok } = (position ?? {}) as { since?: unknown; tiktok?: unknown };
    if (typeof since !== 'number' || !Number.isFinite(since)) return undefined;
    return typeof tiktok === 'string' && /^\d{1,20}$/.test(tiktok) ? { since, tiktok } : undefined;
  },
};

export function tiktokOperations(ctx: ProvidersContext): Pick<PublicHandlers, 'tiktokCreatorInfo' | 'tiktokAnalytics'> {
  return {
    // Read through the same source that checks TikTok items of a create, so both see one answer:
    // without a TikTok app configured it refuses with 422, an unreachable TikTok is a 502.
    tiktokCreatorInfo: async ({ principal, params }) => {
      const channel = await tiktokChannel(ctx.db, principal.organizationId, params.id);
      const source = ctx.providers.tiktok.creatorInfo;
      if (!source)
        throw new UnprocessableError(
          'TikTok publishing is not configured on this server, so TikTok creator info cannot be read; ' +
            'ask its operator.',
        );
      const info = await source.creatorInfo(channel);
      return { status: 200, body: { channelId: channel.id, ...info } };
    },

    // A page's cursor carries TikTok's own and the start of the period, so that every page of one
    // reading covers the same days; it is signed, and bound to the channel and `days`.
    tiktokAnalytics: async ({ principal, params, query }) => {
      const channel = await tiktokChannel(ctx.db, principal.organizationId, params.id);
      const source = ctx.providers.tiktok.analytics;
      if (!source)
        throw new NotImplementedError(
          'TikTok analytics need the operator’s TikTok app, which this server does not have; ask its operator.',
        );
      const days = query.days!;
      const binding = { organizationId: principal.organizationId, channelId: channel.id, days };
      const page = await paginate(ctx.cursors, ANALYTICS_LIST, { binding, cursor: query.cursor }, async (position) => {
        const since = position ? new Date(position.since) : new Date(ctx.clock.now().getTime() - days * 86_400_000);
        const { account, videos, next } = await source.analytics(channel, {
          since,
          limit: query.limit!,
          cursor: position?.tiktok,
        });
        return { account, videos, next: next === null ? null : { since: since.getTime(), tiktok: next } };
      });
      return {
        status: 200,
        body: { channelId: channel.id, days, account: page.account, data: page.videos, nextCursor: page.nextCursor },
      };
    },
  };
}
