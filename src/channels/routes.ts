import type { AppContext } from '../http/context.js';
import type { PublicHandlers } from '../http/typed-routes.js';
import { listChannels, toChannelBody } from './channels.js';
import { channelQuotas } from './quota.js';
import type { ChannelRemoval } from './removal.js';

export function channelOperations(
  ctx: AppContext,
  removal: ChannelRemoval,
): Pick<PublicHandlers, 'listChannels' | 'getQuota' | 'deleteChannel'> {
  return {
    listChannels: async ({ principal }) => {
      const channels = await listChannels(ctx.db, principal.organizationId);
      return { status: 200, body: { data: channels.map(toChannelBody) } };
    },

    getQuota: async ({ principal }) => {
      const data = await channelQuotas(ctx.db, principal.organizationId, ctx.config.dailyPostLimits, ctx.clock.now());
      return { status: 200, body: { data } };
    },

    deleteChannel: async ({ principal, params }) => {
      await removal.remove(principal.organizationId, params.id, { credential: principal.credential });
      return { status: 204 };
    },
  };
}
