import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/core/logger.js';
import type { TikTokCreatorInfo } from '../src/providers/tiktok/creator-info.js';
import { BrowserSession } from './support/browser-session.js';
import { eventually } from './support/eventually.js';
import { connectYouTube, startFakeGoogle, youtubeEnv, type FakeGoogle } from './support/fake-google.js';
import { startFakeNetwork, type FakeNetwork } from './support/fake-network.js';
import { connectTikTok, startFakeTikTok, tiktokEnv, type FakeTikTok } from './support/fake-tiktok.js';
import { createChannel, createOrganization, type TestOrganization } from './support/fixtures.js';
import { bodyOf, type Schemas } from './support/api.js';
import { mp4WithDuration } from './support/media-samples.js';
import { send } from './support/posts.js';
import { startTestServer, type TestServer } from './support/server.js';
import { TIMEOUTS } from './support/timeouts.js';
import { completeUpload, startUpload } from './support/uploads.js';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.js';

// What an operator reads in the log when a publication does not go through or a webhook endpoint
// is turned off: one line each, at warn or error, naming the post, channel and network; and, on the
// networks, the counters a scraper reads of it.
const lines: Record<string, unknown>[] = [];
/** A logger whose lines land in `lines`. */
const capturingLogger = () =>
  createLogger(
    { logLevel: 'info' },
    { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
let network: FakeNetwork;
let receiver: WebhookReceiver;
let server: TestServer;
let org: TestOrganization;
let channelId: string;

beforeAll(async () => {
  network = await startFakeNetwork();
  receiver = await startWebhookReceiver();
  server = await startTestServer({
    logger: capturingLogger(),
    worker: true,
    env: {
      SANDBOX_NETWORK_URL: network.url,
      PUBLISH_RETRY_BASE_MS: '200',
      WEBHOOK_ALLOW_RANGES: '127.0.0.1/32',
      WEBHOOK_RETRY_SCHEDULE: '0.3,0.3',
    },
  });
  org = await createOrganization(server.ctx.db, 'Operators');
  channelId = (await createChannel(server.ctx.db, org.id, 'sandbox', 'Logged sandbox')).id;
});
afterAll(async () => {
  await server?.close();
  await Promise.all([network?.close(), receiver?.close()]);
});

async function publishNow(content: string): Promise<string> {
  const created = await send(server, org.auth, 'POST', '/public/v1/posts', {
    type: 'now',
    content,
    channelIds: [channelId],
  });
  expect(created.status).toBe(201);
  const body = await bodyOf<{ data: Schemas['Post'][] }>(created);
  return body.data[0]!.id;
}

const SEVERITY = { warn: 40, error: 50 } as const;

describe('operator log lines', () => {
  it('say which post, channel and network a failed publication was, at error', async () => {
    network.failNext(1, 422, { error: 'rejected', message: 'Captions may not mention competitors.' });
    const postId = await publishNow('Refused by the network');
    const line = await eventually(() => {
      const found = lines.find((entry) => entry.postId === postId && entry.msg === 'publication failed');
      expect(found).toBeDefined();
      return found!;
    });
    expect(line).toMatchObject({
      level: SEVERITY.error,
      postId,
      channelId,
      network: 'sandbox',
      code: 'rejected_by_network',
      networkRequestId: null,
    });
    expect(line).toHaveProperty('step');
    expect(JSON.stringify(lines)).not.toContain(org.apiKey);
  });

  it('say when a publication failed for now and is tried again, at warn', async () => {
    network.failNext(1, 503);
    const postId = await publishNow('Passing failure');
    const line = await eventually(() => {
      const found = lines.find((entry) => entry.postId === postId && entry.level === SEVERITY.warn);
      expect(found).toBeDefined();
      return found!;
    });
    expect(line).toMatchObject({
      postId,
      channelId,
      network: 'sandbox',
      msg: expect.stringContaining('tried again') as unknown,
    });
    expect(line.nextAttemptAt).toEqual(expect.any(String));
  });

  it('say which webhook endpoint was turned off, at error', async () => {
    const created = await send(server, org.auth, 'POST', '/public/v1/webhooks', {
      url: receiver.url,
      eventTypes: ['post.published'],
    });
    expect(created.status).toBe(201);
    const endpoint = await bodyOf<Schemas['CreatedWebhook']>(created);
    await server.ctx.db
      .updateTable('webhook_endpoints')
      .set({ failing_since: new Date(server.clock.now().getTime() - 3 * 86_400_000 - 60_000) })
      .where('id', '=', endpoint.id)
      .execute();
    receiver.answerNext(500);
    expect((await send(server, org.auth, 'POST', `/public/v1/webhooks/${endpoint.id}/test`)).status).toBeLessThan(300);
    const line = await eventually(() => {
      const found = lines.find((entry) => entry.webhookId === endpoint.id);
      expect(found).toBeDefined();
      return found!;
    });
    expect(line).toMatchObject({
      level: SEVERITY.error,
      organizationId: org.id,
      lastStatusCode: 500,
      msg: expect.stringContaining('turned off a webhook endpoint') as unknown,
    });
    expect(JSON.stringify(line)).not.toContain(endpoint.secret);
  });
});

// The networks' own ways of not going through, against the project's fakes of them: the post that
// may or may not be on YouTube, and the TikTok account whose refresh token TikTok refuses. Retries
// wait the publisher's retry delay on the server's clock, which the tests move instead of waiting.
describe('operator log lines and counters of publications on YouTube and TikTok', () => {
  const TOKEN = 'metrics-token-0123456789abcdef';
  const MB = 1024 * 1024;
  let google: FakeGoogle;
  let tiktok: FakeTikTok;
  let networks: TestServer;
  let acme: TestOrganization;
  const channels = { youtube: '', tiktok: '' };
  let videoId: string;

  beforeAll(async () => {
    [google, tiktok] = await Promise.all([
      startFakeGoogle({ account: { channelId: 'UC_operator_logs_01', title: 'Acme Videos' } }),
      startFakeTikTok({ account: { displayName: 'Acme on TikTok', username: 'acme' } }),
    ]);
    tiktok.processingChecks(0);
    networks = await startTestServer({
      logger: capturingLogger(),
      worker: true,
      env: {
        ...youtubeEnv(google, 256 * 1024),
        ...tiktokEnv(tiktok, 5 * MB),
        PUBLISH_RETRY_BASE_MS: '5000',
        METRICS_TOKEN: TOKEN,
        DAILY_POST_LIMIT_TIKTOK: '100',
        DAILY_POST_LIMIT_YOUTUBE: '100',
      },
    });
  }, TIMEOUTS.hook);
  // The server in a hook of its own, the accounts' setup in the next: each gets a hook's time on a busy machine.
  beforeAll(async () => {
    acme = await createOrganization(networks.ctx.db, 'Acme');
    const session = new BrowserSession(networks);
    await session.logIn(acme.email, acme.password);
    expect((await connectYouTube(session)).headers.get('location')).toBe('/settings/channels?done=connected');
    expect((await connectTikTok(session)).headers.get('location')).toBe('/settings/channels?done=connected');
    for (const provider of ['youtube', 'tiktok'] as const) {
      const row = await networks.ctx.db
        .selectFrom('channels')
        .select('id')
        .where('organization_id', '=', acme.id)
        .where('provider', '=', provider)
        .executeTakeFirstOrThrow();
      channels[provider] = row.id;
    }
    // 600 KiB of an 8-second video: three YouTube chunks of 256 KiB and the rest, one TikTok chunk.
    const bytes = mp4WithDuration(8, { mdatBytes: 600 * 1024 });
    const upload = await startUpload(networks, acme, 'launch.mp4', 'video/mp4', bytes.length);
    expect((await fetch(upload.uploadUrl, { method: 'PUT', headers: upload.headers, body: bytes })).status).toBe(200);
    videoId = (await bodyOf<{ id: string }>(await completeUpload(networks, acme, upload.uploadId))).id;
  }, TIMEOUTS.hook);
  afterAll(async () => {
    await networks?.close();
    await Promise.all([google?.close(), tiktok?.close()]);
  });

  const SETTINGS = {
    youtube: { __type: 'youtube', title: 'Launch', privacyStatus: 'unlisted', madeForKids: false },
    tiktok: { __type: 'tiktok', postMode: 'direct', privacyLevel: 'PUBLIC_TO_EVERYONE' },
  };

  /** Creates a post of the video on the channel of `provider`, now or at `date`; its id. */
  async function createPost(provider: 'youtube' | 'tiktok', date?: Date): Promise<string> {
    const response = await send(networks, acme.auth, 'POST', '/public/v1/posts', {
      ...(date ? { type: 'schedule', date: date.toISOString() } : { type: 'now' }),
      posts: [
        { channelId: channels[provider], content: 'Launch day', mediaIds: [videoId], settings: SETTINGS[provider] },
      ],
    });
    const answer = await bodyOf<{ data: { id: string }[] }>(response);
    expect(response.status, JSON.stringify(answer)).toBe(201);
    return answer.data[0]!.id;
  }

  /** The counters as a scraper reads them: each sample's value by its series and labels. */
  async function counters(): Promise<(series: string) => number> {
    const response = await networks.fetch('/metrics', { headers: { Authorization: `Bearer ${TOKEN}` } });
    expect(response.status).toBe(200);
    const text = await response.text();
    return (series) => {
      const line = text.split('\n').find((entry) => entry.startsWith(`${series} `));
      return line === undefined ? 0 : Number(line.slice(series.length + 1));
    };
  }

  /** The error line of the post's publication that did not go through. */
  const errorLineOf = (postId: string) =>
    eventually(() => {
      const found = lines.find((entry) => entry.postId === postId && entry.level === SEVERITY.error);
      expect(found).toBeDefined();
      return found!;
    });

  it('a publication that ends outcome_unknown is logged at error with Google’s id of the upload, and counted', async () => {
    const before = await counters();
    // The last chunk makes the video, but its answer is lost; the session then expires before the
    // publisher asks it what became of the video, so nobody can tell.
    google.cutAfterFinalChunk();
    const postId = await createPost('youtube');
    const retry = await eventually(() => {
      const found = lines.find((entry) => entry.postId === postId && entry.level === SEVERITY.warn);
      expect(found).toBeDefined();
      return found!;
    });
    expect(retry).toMatchObject({ network: 'youtube', step: 'finish', channelId: channels.youtube });
    google.expireUploadSessions();
    await networks.clock.advance(Date.parse(String(retry.nextAttemptAt)) - networks.clock.now().getTime() + 1000);

    const line = await errorLineOf(postId);
    const upload = google.videos.at(-1)!.sessionId;
    expect(line).toMatchObject({
      postId,
      channelId: channels.youtube,
      network: 'youtube',
      step: 'finish',
      code: 'outcome_unknown',
      // X-GUploader-UploadID of Google's answer that the session is gone: the id its support asks for.
      networkRequestId: upload,
      msg: expect.stringContaining('outcome unknown') as unknown,
    });
    const after = await counters();
    const runs = (outcome: string) => `publications_total{network="youtube",outcome="${outcome}"}`;
    expect(after(runs('retried')) - before(runs('retried'))).toBe(1);
    expect(after(runs('outcome_unknown')) - before(runs('outcome_unknown'))).toBe(1);
    expect(after(runs('published'))).toBe(before(runs('published')));
  });

  it('a publication that ends needs_reconnect, TikTok refusing the refresh, is logged at error with TikTok’s log_id, and counted', async () => {
    const before = await counters();
    const postId = await createPost('tiktok', new Date(networks.clock.now().getTime() + 60_000));
    // The user removes the app in TikTok before the post is due: the access token is refused, and
    // so is the refresh token that would have replaced it (invalid_grant).
    tiktok.revokeAll();
    (networks.ctx.providers.tiktok.creatorInfo as TikTokCreatorInfo).forget(channels.tiktok);
    const refusedBefore = tiktok.refreshes.refused;
    await networks.clock.advance(61_000);

    const line = await errorLineOf(postId);
    expect(line).toMatchObject({
      postId,
      channelId: channels.tiktok,
      network: 'tiktok',
      step: 'init',
      code: 'channel_needs_reconnect',
      msg: expect.stringContaining('needs to be connected again') as unknown,
    });
    expect(tiktok.refreshes.refused).toBe(refusedBefore + 1);
    // The log_id of TikTok's refusal of the refresh token, the last answer TikTok gave.
    expect(line.networkRequestId).toBe(tiktok.logIds.at(-1));
    const after = await counters();
    const runs = (outcome: string) => `publications_total{network="tiktok",outcome="${outcome}"}`;
    expect(after(runs('needs_reconnect')) - before(runs('needs_reconnect'))).toBe(1);
    const refreshFailures = 'token_refresh_failures_total{network="tiktok"}';
    expect(after(refreshFailures) - before(refreshFailures)).toBe(1);
    // No token of the account is in the log (the fake's look like act.… and rft.…).
    expect(JSON.stringify(lines)).not.toMatch(/\b(act|rft)\.[\w-]{40}/);
  });
});
