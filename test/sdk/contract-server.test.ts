import fs from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseYaml } from '../../src/core/contract.js';
import Service, { type ServiceOptions } from '../../src/sdk/src/index.js';
import { BrowserSession } from '../support/browser-session.js';
import { connectTikTok, startFakeTikTok, tiktokEnv, type FakeTikTok } from '../support/fake-tiktok.js';
import { createChannel, createOrganization, type TestOrganization } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { TIMEOUTS } from '../support/timeouts.js';
import { describeContract, type ContractTarget, type Operation } from './support/contract-suite.js';
import { PUBLIC_SPEC, startPrism, type PrismServer } from './support/prism.js';

// Prism's proxy answers with a mock of its own when the upstream answers 501, so an operation
// that is not built yet would seem to work through it. Each operation is therefore probed on the
// server directly, with a request that has no effect when the operation exists (an unknown id, a
// refused URL, an oversized upload); the tests needing one that answers 501 are skipped, and run
// as soon as the operation is built.
const FAR_FUTURE = '2099-01-01T00:00:00.000Z';
const PROBES: Record<Operation, { method: string; path: string; body?: unknown }> = {
  isConnected: { method: 'GET', path: '/public/v1/is-connected' },
  listChannels: { method: 'GET', path: '/public/v1/channels' },
  getQuota: { method: 'GET', path: '/public/v1/channels/quota' },
  deleteChannel: { method: 'DELETE', path: '/public/v1/channels/ch_probe' },
  connectChannel: {
    method: 'POST',
    path: '/public/v1/channels/connect',
    body: { provider: 'youtube', returnUrl: 'https://probe.example/done' },
  },
  createPost: {
    method: 'POST',
    path: '/public/v1/posts',
    body: { type: 'draft', content: 'probe', channelIds: ['ch_probe'] },
  },
  listPosts: { method: 'GET', path: '/public/v1/posts' },
  getPost: { method: 'GET', path: '/public/v1/posts/post_probe' },
  getPostHistory: { method: 'GET', path: '/public/v1/posts/post_probe/history' },
  updatePost: { method: 'PATCH', path: '/public/v1/posts/post_probe', body: { content: 'probe' } },
  deletePost: { method: 'DELETE', path: '/public/v1/posts/post_probe' },
  schedulePost: { method: 'POST', path: '/public/v1/posts/post_probe/schedule', body: { scheduledAt: FAR_FUTURE } },
  changePostStatus: { method: 'PATCH', path: '/public/v1/posts/post_probe/status', body: { status: 'draft' } },
  skipPost: { method: 'POST', path: '/public/v1/posts/post_probe/skip' },
  createSeries: {
    method: 'POST',
    path: '/public/v1/series',
    body: { rule: 'FREQ=WEEKLY', timeZone: 'UTC', startsAt: FAR_FUTURE, posts: [{ channelId: 'ch_probe' }] },
  },
  getSeries: { method: 'GET', path: '/public/v1/series/ser_probe' },
  splitSeries: { method: 'POST', path: '/public/v1/series/ser_probe/split', body: { from: FAR_FUTURE } },
  endSeries: { method: 'POST', path: '/public/v1/series/ser_probe/end' },
  approvePost: { method: 'POST', path: '/public/v1/posts/post_probe/approve', body: {} },
  rejectPost: { method: 'POST', path: '/public/v1/posts/post_probe/reject', body: { comment: 'Probe' } },
  importPosts: {
    method: 'POST',
    path: '/public/v1/posts/import?dryRun=true',
    body: { rows: [{ channels: ['ch_probe'], text: 'probe' }] },
  },
  exportPosts: { method: 'GET', path: '/public/v1/posts/export?format=json&group=grp_probe' },
  duplicatePost: { method: 'POST', path: '/public/v1/posts/post_probe/duplicate' },
  queuePost: { method: 'POST', path: '/public/v1/posts/post_probe/queue', body: {} },
  getChannelSchedule: { method: 'GET', path: '/public/v1/channels/ch_probe/schedule' },
  replaceChannelSchedule: {
    method: 'PUT',
    path: '/public/v1/channels/ch_probe/schedule',
    body: { slots: [{ weekday: 'monday', time: '09:00' }] },
  },
  getChannelQueue: { method: 'GET', path: '/public/v1/channels/ch_probe/queue' },
  listMedia: { method: 'GET', path: '/public/v1/media' },
  uploadFromUrl: {
    method: 'POST',
    path: '/public/v1/media/upload-from-url',
    body: { url: 'http://127.0.0.1:9/probe.png' },
  },
  createUpload: {
    method: 'POST',
    path: '/public/v1/media/uploads',
    body: { fileName: 'probe.png', contentType: 'image/png', size: 1_000_000_000_000 },
  },
  completeUpload: { method: 'POST', path: '/public/v1/media/uploads/upl_probe/complete' },
  deleteMedia: { method: 'DELETE', path: '/public/v1/media/med_probe' },
  tiktokCreatorInfo: { method: 'GET', path: '/public/v1/channels/ch_probe/tiktok/creator-info' },
  tiktokAnalytics: { method: 'GET', path: '/public/v1/channels/ch_probe/tiktok/analytics' },
  pinterestBoards: { method: 'GET', path: '/public/v1/channels/ch_probe/pinterest/boards' },
  listWebhooks: { method: 'GET', path: '/public/v1/webhooks' },
  createWebhook: {
    method: 'POST',
    path: '/public/v1/webhooks',
    body: { url: 'http://127.0.0.1:9/probe', eventTypes: ['post.published'] },
  },
  getWebhook: { method: 'GET', path: '/public/v1/webhooks/whk_probe' },
  updateWebhook: { method: 'PATCH', path: '/public/v1/webhooks/whk_probe', body: { enabled: false } },
  deleteWebhook: { method: 'DELETE', path: '/public/v1/webhooks/whk_probe' },
  testWebhook: { method: 'POST', path: '/public/v1/webhooks/whk_probe/test' },
  rotateWebhookSecret: { method: 'POST', path: '/public/v1/webhooks/whk_probe/rotate-secret' },
  listWebhookDeliveries: { method: 'GET', path: '/public/v1/webhooks/whk_probe/deliveries' },
  retryWebhookDelivery: { method: 'POST', path: '/public/v1/webhooks/whk_probe/deliveries/msg_probe/retry' },
};

async function unbuiltOperations(server: TestServer, org: TestOrganization): Promise<Set<Operation>> {
  const unbuilt = new Set<Operation>();
  for (const [operation, probe] of Object.entries(PROBES) as [Operation, (typeof PROBES)[Operation]][]) {
    const response = await server.fetch(probe.path, {
      method: probe.method,
      headers: { ...org.auth, ...(probe.body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      body: probe.body === undefined ? undefined : JSON.stringify(probe.body),
    });
    await response.body?.cancel();
    if (response.status === 501) unbuilt.add(operation);
  }
  return unbuilt;
}

// The X-Request-Id of the contract's examples: a response carrying it came from Prism, not the server.
const EXAMPLE_REQUEST_ID = (
  parseYaml(fs.readFileSync(PUBLIC_SPEC, 'utf8')) as { components: { headers: Record<string, { example: string }> } }
).components.headers['X-Request-Id']!.example;

/** What Prism's proxy found wrong with the exchanges of the current test; checked after each test. */
let violations: string[] = [];

/** Sends through the validating proxy and records every contract violation Prism reports. */
function validatedFetch(send: (request: Request) => Promise<Response> = fetch) {
  return async (request: Request): Promise<Response> => {
    const response = await send(request);
    const where = `${request.method} ${new URL(request.url).pathname} → ${response.status}`;
    const warnings = response.headers.get('sl-violations');
    if (warnings) violations.push(`${where}: ${warnings}`);
    if (response.headers.get('content-type')?.startsWith('application/problem+json')) {
      violations.push(`${where}: Prism refused the exchange: ${await response.clone().text()}`);
    }
    if (response.headers.get('x-request-id') === EXAMPLE_REQUEST_ID) {
      violations.push(`${where}: answered by Prism from the contract's examples, not by the server`);
    }
    return response;
  };
}

let server: TestServer;
let proxy: PrismServer;
let org: TestOrganization;
let busyServer: TestServer;
let busyProxy: PrismServer;
let busyOrg: TestOrganization;
let target: ContractTarget;
/** The TikTok the server's operator app talks to: the first installation has one configured. */
let tiktok: FakeTikTok;

function clientOf(origin: string, apiKey: string) {
  return ({ credential = apiKey, fetch: send, ...options }: ServiceOptions & { credential?: string } = {}) =>
    new Service(credential, origin, { ...options, fetch: validatedFetch(send) });
}

beforeAll(async () => {
  tiktok = await startFakeTikTok({ account: { displayName: 'Contract Creator', username: 'contract' } });
  // The second installation's organizations may make one request per window, and its clock is
  // stopped 50 seconds before the end of a window; its one request is used up below.
  [server, busyServer] = await Promise.all([
    startTestServer({ env: { ...tiktokEnv(tiktok), WEBHOOK_ALLOW_RANGES: '127.0.0.1/32' } }),
    startTestServer({ env: { RATE_LIMIT_MAX: '1', RATE_LIMIT_WINDOW_SECONDS: '60' } }),
  ]);
  busyServer.setNow('2026-11-21T10:00:10.000Z');
  [proxy, busyProxy] = await Promise.all([
    startPrism({ proxy: server.baseUrl }),
    startPrism({ proxy: busyServer.baseUrl }),
  ]);
  org = await createOrganization(server.ctx.db);
  busyOrg = await createOrganization(busyServer.ctx.db, 'Busy');
  const sandbox = await createChannel(server.ctx.db, org.id, 'sandbox', 'Try it');
  const unbuilt = await unbuiltOperations(server, org);
  const first = await busyServer.fetch('/public/v1/channels', { headers: busyOrg.auth });
  expect(first.status).toBe(200);

  target = {
    client: clientOf(proxy.url, org.apiKey),
    echoes: true,
    sandboxChannelId: sandbox.id,
    refused: { credential: 'svc_live_revokedOrNeverIssuedKey000', options: {} },
    notFoundOptions: {},
    rateLimited: { client: clientOf(busyProxy.url, busyOrg.apiKey), options: {}, retryAfter: 50 },
    unavailable: (...operations) => {
      const missing = operations.filter((operation) => unbuilt.has(operation));
      return missing.length === 0
        ? undefined
        : `not built on the server yet (501 not_implemented): ${missing.join(', ')}`;
    },
  };
  // Two servers with their databases, then two Prism processes.
}, TIMEOUTS.hook + TIMEOUTS.process);
afterAll(async () => {
  await Promise.all([proxy?.stop(), busyProxy?.stop()]);
  await Promise.all([server?.close(), busyServer?.close()]);
  await tiktok?.close();
});
afterEach(() => {
  const found = violations;
  violations = [];
  expect(found, 'exchanges Prism found breaking the contract').toEqual([]);
});

describeContract('the real server behind Prism’s validating proxy', () => target);

describe('@service/sdk against the real server: answers that depend on its data', () => {
  it('tells which organization the key acts for', async () => {
    const status = await target.client().isConnected();
    expect(status).toEqual({
      connected: true,
      organization: { id: org.id, name: org.name },
      credential: { type: 'api_key', role: 'owner' },
    });
  });

  it('refuses TikTok operations on a channel that is not a TikTok channel, and unknown channels', async (ctx) => {
    const reason = target.unavailable('tiktokCreatorInfo', 'tiktokAnalytics');
    ctx.skip(!!reason, reason);
    const service = target.client();
    await expect(service.tiktokCreatorInfo(target.sandboxChannelId)).rejects.toMatchObject({
      status: 422,
      code: 'unprocessable',
    });
    await expect(service.tiktokAnalytics(target.sandboxChannelId, { days: 7 })).rejects.toMatchObject({
      status: 422,
      code: 'unprocessable',
    });
    await expect(service.tiktokCreatorInfo('ch_doesNotExist0000000')).rejects.toMatchObject({
      status: 404,
      code: 'not_found',
    });
  });

  it('reads a connected TikTok channel’s creator info and analytics, as the contract declares them', async () => {
    const session = new BrowserSession(server);
    await session.logIn(org.email, org.password);
    expect((await connectTikTok(session)).headers.get('location')).toBe('/settings/channels?done=connected');
    const service = target.client();
    const channel = (await service.channels()).data.find((c) => c.provider === 'tiktok')!;
    const info = await service.tiktokCreatorInfo(channel.id);
    expect(info).toMatchObject({
      channelId: channel.id,
      canPost: true,
      creatorUsername: 'contract',
      maxVideoPostDurationSec: 600,
    });
    tiktok.addVideos([
      {
        id: '7300000000000000001',
        title: 'From the contract',
        createTime: Math.floor(Date.now() / 1000) - 3600,
        duration: 15,
        coverImageUrl: 'https://p16.tiktokcdn.example/cover/1.jpeg',
        shareUrl: 'https://www.tiktok.com/@contract/video/7300000000000000001',
        viewCount: 10,
        likeCount: 2,
        commentCount: 1,
        shareCount: 0,
      },
    ]);
    const analytics = await service.tiktokAnalytics(channel.id, { days: 7 });
    expect(analytics).toMatchObject({
      channelId: channel.id,
      days: 7,
      nextCursor: null,
      data: [{ id: '7300000000000000001', title: 'From the contract', durationSec: 15 }],
    });
  });

  it('manages a webhook endpoint through every webhook operation, as the contract declares them', async () => {
    const service = target.client();
    const created = await service.createWebhook({
      url: 'http://127.0.0.1:9/hooks',
      eventTypes: ['post.published', 'channel.needs_reconnect'],
      description: 'Contract receiver',
    });
    expect(created.secret).toMatch(/^whsec_/);
    expect((await service.listWebhooks()).data.map((w) => w.id)).toContain(created.id);
    expect(await service.getWebhook(created.id)).toMatchObject({ id: created.id, enabled: true });
    expect(await service.updateWebhook(created.id, { description: '', eventTypes: ['post.failed'] })).toMatchObject({
      description: null,
      eventTypes: ['post.failed'],
    });
    const rotated = await service.rotateWebhookSecret(created.id);
    expect(rotated.secret).not.toBe(created.secret);
    const delivery = await service.testWebhook(created.id);
    expect(delivery).toMatchObject({ eventType: 'webhook.test', status: 'pending', attempts: 0 });
    const page = await service.webhookDeliveries(created.id, { limit: 5 });
    expect(page).toEqual({ data: [delivery], nextCursor: null });
    // This installation runs no worker: the delivery is still pending, and cannot be sent again yet.
    await expect(service.retryWebhookDelivery(created.id, delivery.id)).rejects.toMatchObject({
      status: 409,
      code: 'conflict',
    });
    await expect(
      service.createWebhook({ url: 'http://10.0.0.1/hooks', eventTypes: ['post.failed'] }),
    ).rejects.toMatchObject({ status: 422, code: 'unprocessable' });
    await service.deleteWebhook(created.id);
    await expect(service.getWebhook(created.id)).rejects.toMatchObject({ status: 404, code: 'not_found' });
  });

  it('refuses to create media from a loopback address', async (ctx) => {
    const reason = target.unavailable('uploadFromUrl');
    ctx.skip(!!reason, reason);
    await expect(target.client().uploadFromUrl('http://127.0.0.1:9/poster.jpg')).rejects.toMatchObject({
      status: 422,
      code: 'unprocessable',
    });
  });
});
