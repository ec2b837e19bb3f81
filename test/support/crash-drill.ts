import http from 'node:http';
import { expect } from 'vitest';
import { publicApi } from './api.js';
import type { PublishingRig } from './publishing-rig.js';
import { dataOf } from './typed-answers.js';
import { completeUpload, startUpload } from './uploads.js';

// What the networks' kill -9 drills share: reading where a publication stands in the ledger, connecting a
// channel through the Public API at a fake whose consent page consents at once, and uploading an image.

/** Where a post's publication stands in the ledger: the part and step recorded, and whether it is irreversible. */
export async function recordedStep(rig: PublishingRig, postId: string) {
  const row = await rig.api.ctx.db
    .selectFrom('post_publications')
    .innerJoin('posts', (join) =>
      join
        .onRef('posts.id', '=', 'post_publications.post_id')
        .onRef('posts.publish_attempt', '=', 'post_publications.attempt'),
    )
    .select(['post_publications.part', 'post_publications.step', 'post_publications.irreversible_at'])
    .where('post_publications.post_id', '=', postId)
    .executeTakeFirstOrThrow();
  return { part: row.part, step: row.step, irreversible: row.irreversible_at !== null };
}

/**
 * The Public API's connect of `provider`, through the fake network's consent page (which consents at
 * once, reached on a connection of its own as a browser would) and back: the channel's id.
 */
export async function connectAtOnce(
  rig: PublishingRig,
  provider: 'threads' | 'pinterest',
  returnUrl: string,
): Promise<string> {
  const api = publicApi(rig.api, rig.org.auth);
  const { authorizationUrl } = dataOf(await api.POST('/public/v1/channels/connect', { body: { provider, returnUrl } }));
  const consent = await new Promise<string>((resolve, reject) => {
    http
      .get(authorizationUrl, { agent: false }, (response) => {
        response.resume();
        resolve(response.headers.location ?? '');
      })
      .on('error', reject);
  });
  const callback = new URL(consent);
  const back = await rig.api.fetch(callback.pathname + callback.search, { redirect: 'manual' });
  expect(back.status).toBe(303);
  return new URL(back.headers.get('location')!).searchParams.get('channelId')!;
}

/** A JPEG uploaded to the rig's organization through the signed upload: the media's id. */
export async function uploadImage(rig: PublishingRig, name: string, bytes: Buffer): Promise<string> {
  const upload = await startUpload(rig.api, rig.org, name, 'image/jpeg', bytes.length);
  expect((await fetch(upload.uploadUrl, { method: 'PUT', headers: upload.headers, body: bytes })).status).toBe(200);
  const completed = await completeUpload(rig.api, rig.org, upload.uploadId);
  expect(completed.status).toBe(200);
  return ((await completed.json()) as { id: string }).id;
}
