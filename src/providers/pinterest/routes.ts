import { findChannel } from '../../channels/channels.js';
import type { Channel } from '../../channels/tables.js';
import { NotFoundError, UnprocessableError } from '../../core/errors.js';
import type { Db } from '../../db/database.js';
import { paginate, type CursorList } from '../../http/pagination.js';
import type { PublicHandlers } from '../../http/typed-routes.js';
import type { ProvidersContext } from '../registry.js';

/** A Pinterest channel of the organization: 404 for an unknown or foreign id, 422 for another provider's channel. */
async function pinterestChannel(db: Db, organizationId: string, channelId: string): Promise<Channel> {
  const channel = await findChannel(db, organizationId, channelId);
  if (!channel) throw new NotFoundError(`There is no channel ${channelId} in this organization.`);
  if (channel.provider !== 'pinterest')
    throw new UnprocessableError(`Channel ${channel.id} is a ${channel.provider} channel, not a Pinterest channel.`);
  return channel;
}

/** A reading of a channel's boards: a page's position is Pinterest's own bookmark. */
const BOARD_LIST: CursorList<{ bookmark: string }> = {
  name: 'pinterest-boards',
  read(position) {
    const { bookmark } = (position ?? {}) as { bookmark?: unknown };
    return typeof bookmark === 'string' && bookmark.length > 0 && bookmark.length <= 2000 ? { bookmark } : undefined;
  },
};

export function pinterestOperations(ctx: ProvidersContext): Pick<PublicHandlers, 'pinterestBoards'> {
  return {
    // The cursor carries Pinterest's bookmark, signed and bound to the channel and the page's size.
    pinterestBoards: async ({ principal, params, query }) => {
      const channel = await pinterestChannel(ctx.db, principal.organizationId, params.id);
      const source = ctx.providers.pinterest.boards;
      if (!source)
        throw new UnprocessableError(
          'Pinterest publishing is not configured on this server, so Pinterest boards cannot be read; ' +
            'ask its operator.',
        );
      const limit = query.limit!;
      const binding = { organizationId: principal.organizationId, channelId: channel.id, limit };
      const page = await paginate(ctx.cursors, BOARD_LIST, { binding, cursor: query.cursor }, async (position) => {
        const { boards, next } = await source.boards(channel, { limit, bookmark: position?.bookmark });
        return { boards, next: next === null ? null : { bookmark: next } };
      });
      return { status: 200, body: { channelId: channel.id, data: page.boards, nextCursor: page.nextCursor } };
    },
  };
}
