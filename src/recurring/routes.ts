import type { PublicHandlers } from '../http/typed-routes.js';
import type { PostsContext } from '../posts/context.js';
import { toPostBody } from '../posts/post-body.js';
import { createSeries, endSeries, getSeries, splitSeries } from './series.js';
import { skipPost } from './skip.js';

type SeriesOperation = 'createSeries' | 'getSeries' | 'splitSeries' | 'endSeries' | 'skipPost';

export function seriesOperations(ctx: PostsContext): Pick<PublicHandlers, SeriesOperation> {
  return {
    createSeries: async ({ principal, body }) => ({ status: 201, body: await createSeries(ctx, principal, body) }),

    getSeries: async ({ principal, params }) => ({
      status: 200,
      body: await getSeries(ctx, principal.organizationId, params.id),
    }),

    splitSeries: async ({ principal, params, body }) => ({
      status: 201,
      body: await splitSeries(ctx, principal, params.id, body),
    }),

    endSeries: async ({ principal, params }) => ({ status: 200, body: await endSeries(ctx, principal, params.id) }),

    skipPost: async ({ principal, params }) => ({
      status: 200,
      body: toPostBody(await skipPost(ctx, principal, params.id)),
    }),
  };
}
