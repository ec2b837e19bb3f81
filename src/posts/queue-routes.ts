import type { PublicHandlers } from '../http/typed-routes.js';
import type { PostsContext } from './context.js';
import { toPostBody } from './post-body.js';
import { channelQueue, channelSchedule, queuePost, replaceChannelSchedule } from './queue.js';

type QueueOperation = 'getChannelSchedule' | 'replaceChannelSchedule' | 'getChannelQueue' | 'queuePost';

export function queueOperations(ctx: PostsContext): Pick<PublicHandlers, QueueOperation> {
  return {
    getChannelSchedule: async ({ principal, params }) => {
      return { status: 200, body: await channelSchedule(ctx, principal, params.id) };
    },

    replaceChannelSchedule: async ({ principal, params, body }) => {
      return { status: 200, body: await replaceChannelSchedule(ctx, principal, params.id, body.slots) };
    },

    getChannelQueue: async ({ principal, params, query }) => {
      return { status: 200, body: await channelQueue(ctx, principal, params.id, query) };
    },

    queuePost: async ({ principal, params, body }) => {
      const at = body?.at === undefined ? undefined : new Date(body.at);
      return { status: 200, body: toPostBody(await queuePost(ctx, principal, params.id, at)) };
    },
  };
}
