import type { PublicHandlers } from '../http/typed-routes.js';
import { approvePost, rejectPost } from './approval.js';
import { postHistoryPage } from './history.js';
import { PUBLIC_API_RESOURCE_PATH } from '../http/resource-challenge.js';
import { assertScope } from '../http/scopes.js';
import type { MediaContext } from '../media/storage.js';
import type { PostsContext } from './context.js';
import { createPosts } from './create.js';
import { editPost, getPost, movePost, removePost, schedulePostAt } from './lifecycle.js';
import { duplicatePost } from './duplicate.js';
import { streamPostExport } from './export.js';
import { importPosts } from './import.js';
import { listPostPage } from './list.js';
import { toPostBody } from './post-body.js';

type PostOperation =
  | 'createPost'
  | 'listPosts'
  | 'getPost'
  | 'getPostHistory'
  | 'updatePost'
  | 'schedulePost'
  | 'changePostStatus'
  | 'approvePost'
  | 'rejectPost'
  | 'deletePost'
  | 'importPosts'
  | 'exportPosts'
  | 'duplicatePost';

export function postOperations(ctx: PostsContext & MediaContext): Pick<PublicHandlers, PostOperation> {
  return {
    createPost: async ({ principal, body, headers }) => {
      const result = await createPosts(ctx, principal, body, headers['Idempotency-Key']);
      const replayed: Record<string, string> = result.replayed ? { 'Idempotent-Replayed': 'true' } : {};
      return { status: 201, body: result.body, headers: replayed };
    },

    listPosts: async ({ principal, query }) => {
      return { status: 200, body: await listPostPage(ctx, principal.organizationId, query) };
    },

    getPost: async ({ principal, params }) => {
      const post = await getPost(ctx.db, principal.organizationId, params.id);
      return { status: 200, body: toPostBody(post) };
    },

    getPostHistory: async ({ principal, params, query }) => {
      return { status: 200, body: await postHistoryPage(ctx, principal.organizationId, params.id, query) };
    },

    updatePost: async ({ principal, params, body }) => {
      const post = await editPost(ctx, principal, params.id, body);
      return { status: 200, body: toPostBody(post) };
    },

    schedulePost: async ({ principal, params, body }) => {
      const post = await schedulePostAt(ctx, principal, params.id, new Date(body.scheduledAt));
      return { status: 200, body: toPostBody(post) };
    },

    changePostStatus: async ({ principal, params, body }) => {
      const post = await movePost(ctx, principal, params.id, { status: body.status });
      return { status: 200, body: toPostBody(post) };
    },

    approvePost: async ({ principal, params, body }) => {
      const post = await approvePost(ctx, principal, params.id, body?.when ?? 'scheduled', {
        credential: principal.credential,
      });
      return { status: 200, body: toPostBody(post) };
    },

    rejectPost: async ({ principal, params, body }) => {
      const post = await rejectPost(ctx, principal, params.id, body.comment, {
        credential: principal.credential,
      });
      return { status: 200, body: toPostBody(post) };
    },

    deletePost: async ({ principal, params }) => {
      await removePost(ctx, principal, params.id, { credential: principal.credential });
      return { status: 204 };
    },

    importPosts: async ({ principal, query, body, res }) => {
      const dryRun = query.dryRun === true;
      // Media URLs are downloaded into the library, as an upload from a URL is: a token needs that scope too.
      const mayDownload = () =>
        assertScope(principal, 'media:write', res, `${ctx.config.publicUrl}${PUBLIC_API_RESOURCE_PATH}`);
      const report = await importPosts(ctx, principal, body, dryRun, mayDownload);
      return dryRun ? { status: 200, body: report } : { status: 201, body: report };
    },

    exportPosts: ({ principal, query }) =>
      Promise.resolve({ status: 200, stream: (res) => streamPostExport(ctx.db, principal.organizationId, query, res) }),

    duplicatePost: async ({ principal, params }) => {
      return { status: 201, body: await duplicatePost(ctx, principal, params.id) };
    },
  };
}
