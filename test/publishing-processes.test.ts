import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicApi } from './support/api.js';
import { TEST_DATABASE_URL } from './support/database.js';
import { eventually } from './support/eventually.js';
import { startFakeNetwork, type FakeNetwork } from './support/fake-network.js';
import { BrowserSession } from './support/browser-session.js';
import { connectYouTube, startFakeGoogle, youtubeEnv } from './support/fake-google.js';
import { connectTikTok, startFakeTikTok, tiktokEnv } from './support/fake-tiktok.js';
import { mp4, mp4WithDuration } from './support/media-samples.js';
import {
  duplicatesAndMissing,
  publishedIds,
  startPublishingRig,
  type PublishingRig,
} from './support/publishing-rig.js';
import { scaled } from './support/timeouts.js';
import { dataOf } from './support/typed-answers.js';
import { startUpload } from './support/uploads.js';
import { startWebhookReceiver } from './support/webhook-receiver.js';

// Worker processes of the build on one PostgreSQL database, publishing to a fake of the sandbox
// network that counts what it receives. PostgreSQL only: the embedded database belongs to one
// process. `scripts/crash-publisher.ts` runs the crash drill below with other numbers.
const onPostgres = describe.skipIf(!TEST_DATABASE_URL);

const WORKER_ENV = { PUBLISH_LEASE_SECONDS: '5', PUBLISH_RETRY_BASE_MS: '500' };

/** Waits until the rig's posts count at least `count` published. */
const untilPublished = (rig: PublishingRig, count: number, timeout: number) =>
  eventually(async () => expect((await rig.outcomes()).published ?? 0).toBeGreaterThanOrEqual(count), {
    timeout,
    interval: 100,
  });

onPostgres('publishing with worker processes on PostgreSQL', () => {
  let network: FakeNetwork;
  beforeAll(async () => {
    network = await startFakeNetwork();
  });
  afterAll(async () => {
    await network?.close();
  });

  it('two workers publish 1,000 posts due at one time, each exactly once', { timeout: scaled(180_000) }, async () => {
    const rig = await startPublishingRig({ channels: 20, networkUrl: network.url, workerEnv: WORKER_ENV });
    try {
      const ids = await rig.createDuePosts(1000, new Date(Date.now() + 5000), 0);
      await Promise.all([rig.startWorker(), rig.startWorker()]);
      const outcomes = await rig.untilSettled(scaled(120_000));
      expect(outcomes).toEqual({ published: 1000 });
      const { duplicates, missing } = duplicatesAndMissing(network, ids, await publishedIds(rig));
      expect(duplicates).toEqual([]);
      expect(missing).toEqual([]);
    } finally {
      await rig.close();
    }
  });

  it(
    'survives a worker killed with SIGKILL three times: every post published or outcome_unknown, none twice',
    { timeout: scaled(300_000) },
    async () => {
      network.delay(100);
      const rig = await startPublishingRig({ channels: 20, networkUrl: network.url, workerEnv: WORKER_ENV });
      try {
        // 1,000 posts due within 40 seconds, from 10 seconds from now.
        const firstDueAt = new Date(Date.now() + 10_000);
        const ids = await rig.createDuePosts(1000, firstDueAt, 40_000);
        let victim = await rig.startWorker();
        await rig.startWorker();
        // Three kills at random moments while posts fall due (once a random number of them is out),
        // each worker started again at once.
        const moments = Array.from({ length: 3 }, () => 50 + Math.floor(Math.random() * 900)).sort((a, b) => a - b);
        for (const published of moments) {
          await untilPublished(rig, published, scaled(120_000));
          await victim.kill();
          victim = await rig.startWorker();
        }
        const outcomes = await rig.untilSettled(scaled(180_000));
        const {
          scheduled = 0,
          publishing = 0,
          published = 0,
          'failed/outcome_unknown': unknown = 0,
          ...others
        } = outcomes;
        expect({ scheduled, publishing, others }).toEqual({ scheduled: 0, publishing: 0, others: {} });
        expect(published + unknown).toBe(1000);
        const { duplicates, missing } = duplicatesAndMissing(network, ids, await publishedIds(rig));
        expect(duplicates).toEqual([]);
        expect(missing).toEqual([]);
        console.log(
          `crash drill: ${published} published, ${unknown} outcome_unknown, ${duplicates.length} duplicates, ${network.resends.length} resends of one key`,
        );
      } finally {
        network.delay(0);
        await rig.close();
      }
    },
  );

  it(
    'a worker stopped with SIGTERM finishes what it runs, holds nothing, and the next one publishes the rest once',
    { timeout: scaled(180_000) },
    async () => {
      network.delay(500);
      const rig = await startPublishingRig({ channels: 5, networkUrl: network.url, workerEnv: WORKER_ENV });
      try {
        const ids = await rig.createDuePosts(500, new Date(Date.now() + 3000), 0);
        const worker = await rig.startWorker();
        await untilPublished(rig, 20, scaled(30_000));

        expect(await worker.terminate()).toBe(0);
        // The publications it was running finished within the grace period: none is left publishing.
        const afterStop = await rig.outcomes();
        expect(afterStop.publishing ?? 0).toBe(0);
        expect((afterStop.published ?? 0) + (afterStop.scheduled ?? 0)).toBe(500);
        expect(afterStop.scheduled ?? 0).toBeGreaterThan(0);
        const held = await rig.api.ctx.db
          .selectFrom('posts')
          .select('id')
          .where('organization_id', '=', rig.org.id)
          .where('lease_owner', 'is not', null)
          .execute();
        expect(held).toEqual([]);

        await rig.startWorker();
        expect(await rig.untilSettled(scaled(120_000))).toEqual({ published: 500 });
        const { duplicates, missing } = duplicatesAndMissing(network, ids, await publishedIds(rig));
        expect(duplicates).toEqual([]);
        expect(missing).toEqual([]);
      } finally {
        network.delay(0);
        await rig.close();
      }
    },
  );

  it(
    'a worker killed with SIGKILL right after YouTube received the last chunk: the next one asks, and the video exists once',
    { timeout: scaled(180_000) },
    async () => {
      const google = await startFakeGoogle({ account: { channelId: 'UC_kill_0001', title: 'Killed mid-answer' } });
      const youtube = youtubeEnv(google, 256 * 1024);
      const rig = await startPublishingRig({
        channels: 0,
        networkUrl: network.url,
        workerEnv: { ...WORKER_ENV, ...youtube },
        apiEnv: youtube,
      });
      try {
        // The workers read the media files from the API's data directory, as processes sharing one do.
        rig.workerEnv.DATA_DIR = rig.api.ctx.config.dataDir;
        const browser = new BrowserSession(rig.api);
        await browser.logIn(rig.org.email, rig.org.password);
        expect((await connectYouTube(browser)).headers.get('location')).toBe('/settings/channels?done=connected');
        const channel = await rig.api.ctx.db
          .selectFrom('channels')
          .select('id')
          .where('organization_id', '=', rig.org.id)
          .where('provider', '=', 'youtube')
          .executeTakeFirstOrThrow();

        const bytes = mp4(600 * 1024);
        const upload = await startUpload(rig.api, rig.org, 'kill.mp4', 'video/mp4', bytes.length);
        expect((await fetch(upload.uploadUrl, { method: 'PUT', headers: upload.headers, body: bytes })).status).toBe(
          200,
        );
        const api = publicApi(rig.api, rig.org.auth);
        const completed = await api.POST('/public/v1/media/uploads/{uploadId}/complete', {
          params: { path: { uploadId: upload.uploadId } },
        });
        const media = dataOf(completed);
        google.holdAfterFinalChunk();
        const created = await api.POST('/public/v1/posts', {
          body: {
            type: 'now',
            posts: [
              {
                channelId: channel.id,
                content: 'Killed',
                mediaIds: [media.id],
                settings: { __type: 'youtube', title: 'Once only', privacyStatus: 'private', madeForKids: false },
              },
            ],
          },
        });
        const postId = dataOf(created, 201).data[0]!.id;

        const worker = await rig.startWorker();
        await eventually(() => expect(google.videos.length).toBeGreaterThan(0), { timeout: scaled(30_000) });
        expect(google.videos).toHaveLength(1);
        // YouTube has the video; the worker never heard so. It dies now.
        await worker.kill();
        await rig.startWorker();
        expect(await rig.untilSettled(scaled(60_000))).toEqual({ published: 1 });
        const post = dataOf(await api.GET('/public/v1/posts/{id}', { params: { path: { id: postId } } }));
        expect(post.releaseId).toBe(google.videos[0]!.id);
        expect(google.videos).toHaveLength(1);
        const session = google.sessions().find((s) => s.id === google.videos[0]!.sessionId)!;
        expect(session.received).toBe(bytes.length);
      } finally {
        await rig.close();
        await google.close();
      }
    },
  );
  it(
    'a worker killed with SIGKILL right after TikTok received the last chunk: the next one finishes the post from status/fetch, uploading nothing again',
    { timeout: scaled(180_000) },
    async () => {
      const tiktok = await startFakeTikTok({ account: { displayName: 'Killed mid-answer', username: 'killed' } });
      const env = tiktokEnv(tiktok, 5 * 1024 * 1024);
      const rig = await startPublishingRig({
        channels: 0,
        networkUrl: network.url,
        workerEnv: { ...WORKER_ENV, ...env },
        apiEnv: env,
      });
      try {
        rig.workerEnv.DATA_DIR = rig.api.ctx.config.dataDir;
        const browser = new BrowserSession(rig.api);
        await browser.logIn(rig.org.email, rig.org.password);
        expect((await connectTikTok(browser)).headers.get('location')).toBe('/settings/channels?done=connected');
        const channel = await rig.api.ctx.db
          .selectFrom('channels')
          .select('id')
          .where('organization_id', '=', rig.org.id)
          .where('provider', '=', 'tiktok')
          .executeTakeFirstOrThrow();

        // 11 MB: two chunks, 5 MiB and the rest.
        const bytes = mp4WithDuration(9, { mdatBytes: 11 * 1024 * 1024 });
        const upload = await startUpload(rig.api, rig.org, 'kill.mp4', 'video/mp4', bytes.length);
        expect((await fetch(upload.uploadUrl, { method: 'PUT', headers: upload.headers, body: bytes })).status).toBe(
          200,
        );
        const api = publicApi(rig.api, rig.org.auth);
        const completed = await api.POST('/public/v1/media/uploads/{uploadId}/complete', {
          params: { path: { uploadId: upload.uploadId } },
        });
        const media = dataOf(completed);
        tiktok.holdAfterFinalChunk();
        const created = await api.POST('/public/v1/posts', {
          body: {
            type: 'now',
            posts: [
              {
                channelId: channel.id,
                content: 'Killed',
                mediaIds: [media.id],
                settings: { __type: 'tiktok', postMode: 'direct', privacyLevel: 'PUBLIC_TO_EVERYONE' },
              },
            ],
          },
        });
        const postId = dataOf(created, 201).data[0]!.id;

        const worker = await rig.startWorker();
        await eventually(() => expect(tiktok.publications[0]?.stored).toBe(bytes.length), { timeout: scaled(30_000) });
        // TikTok has every byte; the worker never heard so. It dies now.
        await worker.kill();
        await rig.startWorker();
        expect(await rig.untilSettled(scaled(60_000))).toEqual({ published: 1 });
        const post = dataOf(await api.GET('/public/v1/posts/{id}', { params: { path: { id: postId } } }));
        expect(tiktok.publications).toHaveLength(1);
        const publication = tiktok.publications[0]!;
        expect(post.releaseId).toBe(publication.postId);
        expect(publication.status).toBe('PUBLISH_COMPLETE');
        // Each chunk once: nothing went up again after the crash.
        expect(publication.chunks).toHaveLength(2);
        expect(publication.received).toBe(bytes.length);
      } finally {
        await rig.close();
        await tiktok.close();
      }
    },
  );
  it(
    'webhook deliveries survive a worker killed with SIGKILL: every event arrives, a repeat only with its webhook-id',
    { timeout: scaled(300_000) },
    async () => {
      const receiver = await startWebhookReceiver();
      receiver.delay(50);
      const env = { ...WORKER_ENV, WEBHOOK_ALLOW_RANGES: '127.0.0.1/32' };
      const rig = await startPublishingRig({ channels: 10, networkUrl: network.url, workerEnv: env, apiEnv: env });
      try {
        const created = await publicApi(rig.api, rig.org.auth).POST('/public/v1/webhooks', {
          body: { url: receiver.url, eventTypes: ['post.published'] },
        });
        dataOf(created, 201);
        const ids = await rig.createDuePosts(300, new Date(Date.now() + 3000), 0);
        const worker = await rig.startWorker();
        // Killed once a fifth of the events went out: with deliveries under way.
        await eventually(() => expect(receiver.received.length).toBeGreaterThanOrEqual(60), {
          timeout: scaled(120_000),
          interval: 20,
        });
        await worker.kill();
        await rig.startWorker();
        expect(await rig.untilSettled(scaled(90_000))).toEqual({ published: 300 });
        const posts = () =>
          new Set(receiver.received.map((message) => (JSON.parse(message.body) as { data: { id: string } }).data.id));
        await eventually(() => expect([...posts()].sort()).toEqual([...ids].sort()), { timeout: scaled(90_000) });
        // Sent twice only when the worker died before recording the answer: with the same webhook-id.
        const byPost = new Map<string, Set<string>>();
        for (const message of receiver.received) {
          const postId = (JSON.parse(message.body) as { data: { id: string } }).data.id;
          byPost.set(postId, (byPost.get(postId) ?? new Set()).add(message.headers['webhook-id']!));
        }
        expect([...byPost.values()].filter((webhookIds) => webhookIds.size > 1)).toEqual([]);
        console.log(`webhook crash drill: ${receiver.received.length} requests for ${byPost.size} events`);
      } finally {
        await rig.close();
        await receiver.close();
      }
    },
  );
});
