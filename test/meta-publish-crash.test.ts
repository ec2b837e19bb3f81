import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addChannel } from '../src/channels/channels.js';
import { addReturnOrigin } from '../src/channels/return-origins.js';
import { newId } from '../src/core/ids.js';
import { credentialsContext } from '../src/providers/account-credentials.js';
import type { InstagramCredentials } from '../src/providers/instagram/credentials.js';
import { publicApi, type Schemas } from './support/api.js';
import { TEST_DATABASE_URL } from './support/database.js';
import { eventually } from './support/eventually.js';
import { pageCredentials } from './support/facebook-page.js';
import { startFakeMeta, type FakeMeta } from './support/fake-meta.js';
import { startFakeThreads, type FakeThreads } from './support/fake-threads.js';
import { jpeg } from './support/media-samples.js';
import { metaPageToken } from './support/meta-page-token.js';
import { connectAtOnce, recordedStep, uploadImage } from './support/crash-drill.js';
import { startPublishingRig, type PublishingRig } from './support/publishing-rig.js';
import { scaled } from './support/timeouts.js';
import { dataOf } from './support/typed-answers.js';

// Meta's irreversible calls sent by worker processes of the build that are killed with SIGKILL while
// Meta holds the answer back, on PostgreSQL (the embedded database belongs to one process), against the
// fake Meta (Instagram through Facebook Login, a Facebook Page) and the fake Threads, each told to hold
// the answer to the call once it has done the work: the worker dies after the media, the post or the
// reply was made, before it recorded the answer. The worker that takes over finds each where the
// adapter's lookup looks (Instagram: the container says PUBLISHED, the media among the account's newest
// by its caption; Facebook: the Page's posts by text and kind; Threads: the container, then the
// replies to the part before), records it and goes on: one of each on the network, never sent again,
// the posts recording the network's ids and URLs. The first comments of the Instagram and Facebook
// posts go through the same with a second kill.
const onPostgres = describe.skipIf(!TEST_DATABASE_URL);

const WORKER_ENV = { PUBLISH_LEASE_SECONDS: '5', PUBLISH_RETRY_BASE_MS: '500' };
const RETURN_URL = 'https://app.example.org/connected';
const PAGE = '110000000000001';
const IG = '17841400000000001';

const INSTAGRAM = { content: 'Fresh loaves, out of the oven', comment: 'Order at acme.example' };
const FACEBOOK = { content: 'Open late on Fridays', comment: 'See you there' };
const THREAD = ['Our bakery, a thread: 1/3', 'The sourdough rests overnight: 2/3', 'Baked at dawn: 3/3'];

type Post = Schemas['Post'];

/** The posts that failed, with their error: a drill that meets one stops waiting. */
async function failedPosts(rig: PublishingRig, ids: string[]) {
  return rig.api.ctx.db
    .selectFrom('posts')
    .select(['id', 'error_code', 'error_message'])
    .where('id', 'in', ids)
    .where('status', '=', 'failed')
    .execute();
}

/** A channel of the organization holding the account's credentials, encrypted as connecting stores them. */
async function insertInstagramChannel(rig: PublishingRig, meta: FakeMeta): Promise<string> {
  const credentials: InstagramCredentials = {
    accessToken: await metaPageToken(meta),
    refreshToken: null,
    expiresAt: null,
    scopes: ['instagram_basic', 'instagram_content_publish', 'instagram_manage_comments', 'pages_read_engagement'],
    instagram: { api: 'facebook', pageId: PAGE },
  };
  const id = newId('ch');
  await rig.api.ctx.db
    .insertInto('channels')
    .values({
      id,
      organization_id: rig.org.id,
      provider: 'instagram',
      name: 'acme.bakery',
      username: 'acme.bakery',
      picture: null,
      external_id: IG,
      credentials: rig.api.ctx.keyring.encrypt(
        JSON.stringify(credentials),
        credentialsContext(rig.org.id, 'instagram', IG),
      ),
    })
    .execute();
  return id;
}

async function insertFacebookChannel(rig: PublishingRig, meta: FakeMeta): Promise<string> {
  const credentials = await pageCredentials(meta, PAGE);
  const channel = await addChannel(rig.api.ctx.db, {
    organization_id: rig.org.id,
    provider: 'facebook',
    name: 'Acme Bakery',
    username: 'acmebakery',
    picture: null,
    external_id: PAGE,
    credentials: rig.api.ctx.keyring.encrypt(
      JSON.stringify(credentials),
      credentialsContext(rig.org.id, 'facebook', PAGE),
    ),
  });
  return channel.id;
}

onPostgres('Meta’s irreversible calls sent by worker processes killed before their answers', () => {
  let meta: FakeMeta;
  let threads: FakeThreads;
  beforeAll(async () => {
    meta = await startFakeMeta();
    // Containers are ready at their first status read: the worker's polls are real waits.
    meta.processingPolls(0);
    threads = await startFakeThreads();
  });
  afterAll(async () => {
    await meta?.close();
    await threads?.close();
  });

  it(
    'a kill -9 after media_publish, a Page post, a Threads reply or a first comment was sent: each made once, looked up and recorded',
    { timeout: scaled(240_000) },
    async () => {
      const env = {
        META_APP_ID: meta.appId,
        META_APP_SECRET: meta.appSecret,
        META_GRAPH_URL: meta.url,
        META_DIALOG_URL: meta.wwwUrl,
        THREADS_APP_ID: threads.appId,
        THREADS_APP_SECRET: threads.appSecret,
        THREADS_API_URL: threads.url,
        THREADS_AUTHORIZE_URL: threads.authorizeUrl,
        // Meta's fakes fetch media from this server's loopback URLs, as an operator says Meta can.
        MEDIA_URLS_PUBLIC: 'true',
      };
      const rig = await startPublishingRig({ channels: 0, apiEnv: env, workerEnv: { ...WORKER_ENV, ...env } });
      try {
        await addReturnOrigin(rig.api.ctx.db, rig.org.id, new URL(RETURN_URL).origin);
        const instagramChannel = await insertInstagramChannel(rig, meta);
        const facebookChannel = await insertFacebookChannel(rig, meta);
        const threadsChannel = await connectAtOnce(rig, 'threads', RETURN_URL);
        const image = await uploadImage(rig, 'loaves.jpg', jpeg());
        const api = publicApi(rig.api, rig.org.auth);
        const created = await api.POST('/public/v1/posts', {
          body: {
            type: 'now',
            posts: [
              {
                channelId: instagramChannel,
                content: INSTAGRAM.content,
                mediaIds: [image],
                firstComment: { content: INSTAGRAM.comment },
              },
              { channelId: facebookChannel, content: FACEBOOK.content, firstComment: { content: FACEBOOK.comment } },
              {
                channelId: threadsChannel,
                content: THREAD[0]!,
                thread: THREAD.slice(1).map((content) => ({ content })),
              },
            ],
          },
        });
        const [instagramId, facebookId, threadsId] = dataOf(created, 201).data.map((post) => post.id) as [
          string,
          string,
          string,
        ];
        const ids = [instagramId, facebookId, threadsId];

        // First kill: Instagram made the media, Facebook the Page's post and Threads the thread's second
        // part, and each holds its answer back, the worker waiting for it.
        meta.holdNextAnswer('igMediaPublish');
        meta.holdNextAnswer('pageFeed');
        threads.holdNextAnswer('publish', { skip: 1 });
        const first = await rig.startWorker();
        await eventually(
          () => {
            expect(meta.heldAnswers(), 'answers Meta holds').toBe(2);
            expect(threads.heldAnswers(), 'answers Threads holds').toBe(1);
          },
          { timeout: scaled(60_000), interval: 20 },
        );
        await first.kill();
        await eventually(() => expect(meta.heldAnswers() + threads.heldAnswers()).toBe(0));
        // Made on the networks, and not recorded: each post stands at its irreversible step.
        expect(meta.instagramMedia.map((m) => m.caption)).toEqual([INSTAGRAM.content]);
        expect(meta.posts.map((p) => p.message)).toEqual([FACEBOOK.content]);
        expect(threads.posts.map((p) => p.text)).toEqual(THREAD.slice(0, 2));
        const atFirstKill = await rig.api.ctx.db
          .selectFrom('posts')
          .select(['id', 'status', 'release_id', 'thread'])
          .where('id', 'in', ids)
          .execute();
        const row = (id: string) => atFirstKill.find((r) => r.id === id)!;
        expect(row(instagramId)).toMatchObject({ status: 'publishing', release_id: null });
        expect(row(facebookId)).toMatchObject({ status: 'publishing', release_id: null });
        expect(row(threadsId)).toMatchObject({ status: 'publishing', release_id: threads.posts[0]!.id });
        expect(row(threadsId).thread.map((part) => part.releaseId)).toEqual([null, null]);
        expect(await recordedStep(rig, instagramId)).toEqual({ part: 0, step: 'publish', irreversible: true });
        expect(await recordedStep(rig, facebookId)).toEqual({ part: 0, step: 'feed', irreversible: true });
        expect(await recordedStep(rig, threadsId)).toEqual({ part: 1, step: 'publish', irreversible: true });

        // Second kill: the next worker looked the three up and went on; the first comments are made and
        // their answers held. The thread is finished first, so that the kill leaves it alone.
        meta.holdNextAnswer('comments');
        meta.holdNextAnswer('comments');
        const second = await rig.startWorker();
        const failed = await eventually(
          async () => {
            const failures = await failedPosts(rig, ids);
            if (failures.length > 0) return failures;
            expect(meta.heldAnswers(), 'first comments whose answers Meta holds').toBe(2);
            const thread = dataOf(await api.GET('/public/v1/posts/{id}', { params: { path: { id: threadsId } } }));
            expect(thread.status).toBe('published');
            return [];
          },
          { timeout: scaled(90_000), interval: 50 },
        );
        await second.kill();
        expect(failed, 'the posts that failed after the first kill').toEqual([]);
        expect(meta.comments.map((c) => c.message).sort()).toEqual([FACEBOOK.comment, INSTAGRAM.comment].sort());
        expect(await recordedStep(rig, instagramId)).toEqual({ part: 1, step: 'comment', irreversible: true });
        expect(await recordedStep(rig, facebookId)).toEqual({ part: 1, step: 'comment', irreversible: true });

        await rig.startWorker();
        expect(await rig.untilSettled(scaled(90_000))).toEqual({ published: 3 });
        const posts = new Map<string, Post>();
        for (const id of ids)
          posts.set(id, dataOf(await api.GET('/public/v1/posts/{id}', { params: { path: { id } } })));

        // Instagram: one media, published once from its container, the post at its id and permalink, and
        // one first comment on it.
        const [media, ...moreMedia] = meta.instagramMedia;
        expect(moreMedia, 'more Instagram media than the post’s').toEqual([]);
        expect(
          meta.requests.filter((r) => r.operation === 'igMediaPublish'),
          'media_publish calls',
        ).toHaveLength(1);
        const instagramComments = meta.comments.filter((c) => c.objectId === media!.id);
        expect(
          instagramComments.map((c) => c.message),
          'first comments on the media',
        ).toEqual([INSTAGRAM.comment]);
        expect(posts.get(instagramId)).toMatchObject({
          status: 'published',
          releaseId: media!.id,
          releaseUrl: media!.permalink,
          firstComment: { content: INSTAGRAM.comment, releaseId: instagramComments[0]!.id },
        });

        // Facebook: one post of the Page, at its id and permalink, and one first comment on it.
        const [pagePost, ...morePosts] = meta.posts;
        expect(morePosts, 'more Page posts than the post’s').toEqual([]);
        const pageComments = meta.comments.filter((c) => c.objectId === pagePost!.id);
        expect(
          pageComments.map((c) => c.message),
          'first comments on the Page’s post',
        ).toEqual([FACEBOOK.comment]);
        expect(posts.get(facebookId)).toMatchObject({
          status: 'published',
          releaseId: pagePost!.id,
          releaseUrl: pagePost!.permalinkUrl,
          firstComment: { content: FACEBOOK.comment, releaseId: pageComments[0]!.id },
        });
        expect(meta.comments, 'comments on the networks').toHaveLength(2);

        // Threads: each part once, each a reply to the one before, each published by one call, the post
        // recording where each went.
        expect(threads.posts.map((p) => p.text)).toEqual(THREAD);
        expect(threads.posts.map((p) => p.repliedTo)).toEqual([null, ...threads.posts.slice(0, -1).map((p) => p.id)]);
        expect(
          threads.requests.filter((r) => r.operation === 'publish'),
          'threads_publish calls',
        ).toHaveLength(3);
        const thread = posts.get(threadsId)!;
        expect(
          [
            { id: thread.releaseId, url: thread.releaseUrl },
            ...thread.thread.map((part) => ({ id: part.releaseId, url: part.releaseUrl })),
          ],
          'the recorded parts of the thread',
        ).toEqual(threads.posts.map((p) => ({ id: p.id, url: p.permalink })));

        console.log(
          `Meta crash drill: ${meta.requests.filter((r) => r.operation === 'igMediaList').length} reads of the ` +
            `Instagram account's media, ${meta.requests.filter((r) => r.operation === 'pagePosts').length} of the ` +
            `Page's posts, ${meta.requests.filter((r) => r.operation === 'objectComments').length} of comments, ` +
            `${threads.requests.filter((r) => r.operation === 'listReplies').length} of Threads replies`,
        );
      } finally {
        await rig.close();
      }
    },
  );
});
