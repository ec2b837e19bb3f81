import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserSession } from './support/browser-session.js';
import { connectTikTok, startFakeTikTok, tiktokEnv, type FakeTikTok } from './support/fake-tiktok.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { json } from './support/http.js';
import { mp4WithDuration } from './support/media-samples.js';
import { send } from './support/posts.js';
import { startTestServer, type TestServer } from './support/server.js';
import { START_WINDOW_MS } from '../src/publisher/start-limit.js';
import { completeUpload, startUpload } from './support/uploads.js';

// TikTok allows 6 video inits a minute per account token. Seven posts due at once on one account
// go out over two minutes, none refused; an init TikTok refuses for its rate anyway (the budget used
// elsewhere) is tried again a minute later, not failed. The minute passes on the server's test clock
// and the fake TikTok's, not on the wall.
let tiktok: FakeTikTok;
let server: TestServer;
let org: TestOrganization;
let channelId: string;
let videoId: string;

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
  videoId = (await json(await completeUpload(server, org, upload.uploadId))).id;
}, 60_000);
afterAll(async () => {
  await server?.close();
  await tiktok?.close();
});

describe('TikTok’s limit of 6 video inits a minute', () => {
  it('delays inits over the limit until a start frees up instead of failing the posts', async () => {
    tiktok.rateLimitNext('init', 1);
    const posts = Array.from({ length: 7 }, (_, i) => ({
      channelId,
      content: `Clip ${i + 1}`,
      mediaIds: [videoId],
      settings: { __type: 'tiktok', postMode: 'direct', privacyLevel: 'PUBLIC_TO_EVERYONE' },
    }));
    const created = await send(server, org.auth, 'POST', '/public/v1/posts', { type: 'now', posts });
    expect(created.status).toBe(201);
    const ids: string[] = (await json(created)).data.map((post: { id: string }) => post.id);
    const statuses = async () =>
      Promise.all(
        ids.map(
          async (id) => (await json(await send(server, org.auth, 'GET', `/public/v1/posts/${id}`))).status as string,
        ),
      );
    const histories = async () =>
      Promise.all(
        ids.map(
          async (id) =>
            (await json(await send(server, org.auth, 'GET', `/public/v1/posts/${id}/history`))).data as HistoryEvent[],
        ),
      );
    const inits = () => tiktok.requests.filter((r) => r.path === '/v2/post/publish/video/init/');

    // Within the minute: six inits, the first refused for TikTok's rate (as if the budget were used
    // elsewhere) and tried again a minute later; five published; the seventh held back, never sent.
    const published = async () => (await statuses()).filter((status) => status === 'published').length;
    await until(async () => (await published()) === 5, 60_000);
    await sleep(1500);
    expect(inits()).toHaveLength(6);
    expect(await published()).toBe(5);
    expect(tiktok.publications).toHaveLength(5);
    expect((await statuses()).filter((status) => status === 'failed')).toEqual([]);

    // A minute later (TikTok's, and the server's with its margin) the held and the refused go out.
    const events = (await histories()).flat();
    const lastStart = Math.max(...events.filter((e) => e.type === 'publishing').map((e) => Date.parse(e.at)));
    const retryAt = Math.max(...events.filter((e) => e.nextAttemptAt).map((e) => Date.parse(e.nextAttemptAt!)));
    const ahead = Math.max(lastStart + START_WINDOW_MS, retryAt) + 1000 - server.clock.now().getTime();
    await server.clock.advance(ahead);
    tiktok.advanceClock(Math.ceil(ahead / 1000));
    await until(async () => {
      const now = await statuses();
      expect(now.filter((status) => status === 'failed')).toEqual([]);
      return now.every((status) => status === 'published');
    }, 30_000).catch(async (error: unknown) => {
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
  });
});

interface HistoryEvent {
  type: string;
  at: string;
  reason?: string;
  nextAttemptAt?: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`not so within ${timeoutMs} ms`);
    await sleep(200);
  }
}
