import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/core/logger.js';
import { eventually } from './support/eventually.js';
import { startFakeNetwork, type FakeNetwork } from './support/fake-network.js';
import { createChannel, createOrganization, type TestOrganization } from './support/fixtures.js';
import { bodyOf, type Schemas } from './support/api.js';
import { send } from './support/posts.js';
import { startTestServer, type TestServer } from './support/server.js';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.js';

// What an operator reads in the log when a publication does not go through or a webhook endpoint
// is turned off: one line each, at warn or error, naming the post, channel and network.
const lines: Record<string, unknown>[] = [];
let network: FakeNetwork;
let receiver: WebhookReceiver;
let server: TestServer;
let org: TestOrganization;
let channelId: string;

beforeAll(async () => {
  network = await startFakeNetwork();
  receiver = await startWebhookReceiver();
  const logger = createLogger(
    { logLevel: 'info' },
    { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  server = await startTestServer({
    logger,
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
