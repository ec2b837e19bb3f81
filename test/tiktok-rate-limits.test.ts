import { afterAll, beforeAll, describe, expect, it, vi, type MockInstance } from 'vitest';
import type { JobQueue } from '../src/jobs/queue.js';
import { START_WINDOW_MS } from '../src/publisher/start-limit.js';
import { publicApi } from './support/api.js';
import { BrowserSession } from './support/browser-session.js';
import { eventually } from './support/eventually.js';
import { connectTikTok, startFakeTikTok, tiktokEnv, type FakeTikTok } from './support/fake-tiktok.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { mp4WithDuration } from './support/media-samples.js';
import { startTestServer, type TestServer } from './support/server.js';
import { scaled, TIMEOUTS } from './support/timeouts.js';
import { dataOf } from './support/typed-answers.js';
import { startUpload } from './support/uploads.js';

// TikTok allows 6 video inits a minute per account token. Seven posts due at once on one account
// go out over two minutes, none refused; an init TikTok refuses for its rate anyway (the budget used
// elsewhere) is tried again a minute later, not failed. The minute passes on the server's test clock
// and the fake TikTok's, not on the wall.
let tiktok: FakeTikTok;
let server: TestServer;
let org: TestOrganization;
let channelId: string;
let videoId: string;
/** Every plan to publish posts the service makes: creating them, and the publisher's plans to try later. */
let plans: MockInstance<JobQueue['planPublish']>;

beforeAll(async () => {
  tiktok = await startFakeTikTok({ account: { displayName: 'Busy creator', username: 'busy' } });
  server = await startTestServer({
    worker: true,
    env: {
      ...tiktokEnv(tiktok),
      PUBLISH_RETRY_BASE_MS: '200',
      DAILY_POST_LIMIT_TIKTOK: '100',
      RATE_LIMIT_MAX: '100000',
    },
  });
});
// The server in a hook of its own, the account's setup in the next: each gets a hook's time on a busy machine.
beforeAll(async () => {
  org = await createOrganization(server.ctx.db, 'Busy');
  const session = new BrowserSession(server);
  await session.logIn(org.email, org.password);
  expect((await connectTikTok(session)).headers.get('location')).toBe('/settings/channels?done=connected');
  channelId = (
    await server.ctx.db
      .selectFrom('channels')
      .select('id')
      .where('organization_id', '=', org.id)
      .executeTakeFirstOrThrow()
  ).id;
  const bytes = mp4WithDuration(6, { mdatBytes: 200_000 });
  const upload = await startUpload(server, org, 'clip.mp4', 'video/mp4', bytes.length);
  expect((await fetch(upload.uploadUrl, { method: 'PUT', headers: upload.headers, body: bytes })).status).toBe(200);
  const completed = await publicApi(server, org.auth).POST('/public/v1/media/uploads/{uploadId}/complete', {
    params: { path: { uploadId: upload.uploadId } },
  });
  videoId = dataOf(completed).id;
  plans = vi.spyOn(server.ctx.queue, 'planPublish');
}, TIMEOUTS.hook);
afterAll(async () => {
  await server?.close();
  await tiktok?.close();
});

describe('TikTok’s limit of 6 video inits a minute', () => {
  // Seven TikTok publications, each in several steps, on a busy machine.
  it(
    'delays inits over the limit until a start frees up instead of failing the posts',
    {
      timeout: TIMEOUTS.test + scaled(60_000),
    },
    async () => {
      const api = publicApi(server, org.auth);
      const byId = (id: string) => ({ params: { path: { id } } });
      tiktok.rateLimitNext('init', 1);
      const posts = Array.from({ length: 7 }, (_, i) => ({
        channelId,
        content: `Clip ${i + 1}`,
        mediaIds: [videoId],
        settings: {
          __type: 'tiktok' as const,
          postMode: 'direct' as const,
          privacyLevel: 'PUBLIC_TO_EVERYONE' as const,
        },
      }));
      const created = await api.POST('/public/v1/posts', { body: { type: 'now', posts } });
      const ids = dataOf(created, 201).data.map((post) => post.id);
      const statuses = async () =>
        Promise.all(ids.map(async (id) => dataOf(await api.GET('/public/v1/posts/{id}', byId(id))).status));
      const histories = async () =>
        Promise.all(ids.map(async (id) => dataOf(await api.GET('/public/v1/posts/{id}/history', byId(id))).data));
      const inits = () => tiktok.requests.filter((r) => r.path === '/v2/post/publish/video/init/');
      const replanned = (id: string) => plans.mock.calls.flatMap(([, planned]) => planned).filter((p) => p.id === id);

      // Within the minute: six inits, the first refused for TikTok's rate (as if the budget were used
      // elsewhere) and tried again a minute later; five published; the seventh held back, never sent.
      // Both others are planned again, for later: the publisher is done with them for this minute.
      await eventually(
        async () => {
          const now = await statuses();
          expect(now.filter((status) => status === 'published')).toHaveLength(5);
          for (const id of ids.filter((_, i) => now[i] !== 'published'))
            expect(replanned(id).length, `${id} planned again`).toBeGreaterThan(1);
        },
        { timeout: scaled(60_000), interval: 200 },
      );
      expect(inits()).toHaveLength(6);
      expect((await statuses()).filter((status) => status === 'published')).toHaveLength(5);
      expect(tiktok.publications).toHaveLength(5);
      expect((await statuses()).filter((status) => status === 'failed')).toEqual([]);

      // A minute later (TikTok's, and the server's with its margin) the held and the refused go out.
      const events = (await histories()).flat();
      const lastStart = Math.max(...events.filter((e) => e.type === 'publishing').map((e) => Date.parse(e.at)));
      const retryAt = Math.max(...events.filter((e) => e.nextAttemptAt).map((e) => Date.parse(e.nextAttemptAt!)));
      const ahead = Math.max(lastStart + START_WINDOW_MS, retryAt) + 1000 - server.clock.now().getTime();
      await server.clock.advance(ahead);
      tiktok.advanceClock(Math.ceil(ahead / 1000));
      await eventually(
        async () => {
          const now = await statuses();
          expect(now.filter((status) => status === 'failed')).toEqual([]);
          expect(now.filter((status) => status !== 'published')).toEqual([]);
        },
        { timeout: scaled(30_000), interval: 200 },
      ).catch(async (error: unknown) => {
        const unfinished = (await histories()).filter((h) => h.at(-1)!.type !== 'published');
        throw new Error(
          `not published in time (${(error as Error).message}): ${JSON.stringify(unfinished)} ${JSON.stringify(tiktok.requests.slice(-30))}`,
        );
      });

      // Seven inits and the one TikTok refused: no other refusal happened, and no post went twice.
      expect(inits()).toHaveLength(8);
      expect(tiktok.publications).toHaveLength(7);
      const retried = (await histories()).flatMap((history) => history.filter((event) => event.type === 'retrying'));
      expect(retried).toHaveLength(1);
      expect(retried[0]!.reason).toMatch(/rate limit/);
      expect(Date.parse(retried[0]!.nextAttemptAt!) - Date.parse(retried[0]!.at)).toBeGreaterThanOrEqual(59_000);
    },
  );
});
