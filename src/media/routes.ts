import type { PublicHandlers } from '../http/typed-routes.js';
import { mediaPage, presentMedia, removeMedia } from './library.js';
import { MediaPolicy } from './media-types.js';
import type { MediaContext } from './storage.js';
import { UrlDownloads } from './upload-from-url.js';
import { SignedUploads } from './uploads.js';

type MediaOperations = Pick<
  PublicHandlers,
  'listMedia' | 'uploadFromUrl' | 'createUpload' | 'completeUpload' | 'deleteMedia'
>;

export function mediaOperations(ctx: MediaContext): MediaOperations {
  const policy = new MediaPolicy(ctx.config.media);
  const uploads = new SignedUploads(ctx, policy);
  const downloads = new UrlDownloads(ctx, policy, ctx.outbound);

  return {
    listMedia: async ({ principal, query }) => {
      const page = await mediaPage(ctx, principal.organizationId, { limit: query.limit ?? 20, cursor: query.cursor });
      return { status: 200, body: page };
    },

    uploadFromUrl: async ({ principal, body }) => {
      const media = await downloads.download(principal.organizationId, body.url);
      return { status: 201, body: await presentMedia(ctx, media) };
    },

    createUpload: async ({ principal, body }) => {
      return { status: 201, body: await uploads.create(principal.organizationId, body) };
    },

    completeUpload: async ({ principal, params }) => {
      const media = await uploads.complete(principal.organizationId, params.uploadId);
      return { status: 200, body: await presentMedia(ctx, media) };
    },

    deleteMedia: async ({ principal, params }) => {
      await removeMedia(ctx, principal.organizationId, params.id);
      return { status: 204 };
    },
  };
}
