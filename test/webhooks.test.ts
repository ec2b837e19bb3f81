import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keepHouse } from '../src/housekeeping.js';
import { revokeGrant } from '../src/oauth/grants.js';
import { verifyWebhook, WebhookVerificationError } from '../src/sdk/src/index.js';
import { publicApi, type Schemas } from './support/api.js';
import { BrowserSession } from './support/browser-session.js';
import { eventually } from './support/eventually.js';
import { startFakeNetwork, type FakeNetwork } from './support/fake-network.js';
import { connectTikTok, startFakeTikTok, tiktokEnv, type FakeTikTok } from './support/fake-tiktok.js';
import { approve, createOAuthApp, exchange } from './support/oauth.js';
import { createChannel, createOrganization, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';
import { scaled } from './support/timeouts.js';
import { dataOf, refusalOf } from './support/typed-answers.js';
import { anyString } from './support/typed-matchers.js';
import { startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver } from './support/webhook-receiver.js';

// Webhooks end to end: endpoints managed through the Public API, events of real sandbox posts
// delivered to a receiver on loopback (the operator allowed 127.0.0.1 for receivers on its own
// network), signed per Standard Webhooks and checked with the `standardwebhooks` verifier. Retries
// wait a fraction of a second here instead of the day-long schedule.
let network: FakeNetwork;
let server: TestServer;
let strict: TestServer;
let org: TestOrganization;
let other: TestOrganization;
let receiver: WebhookReceiver;
let channelId: string;
let tiktok: FakeTikTok;

// One server per hook: a hook's time is a server's start, however busy the machine.
beforeAll(async () => {
  // As installed by default: receivers must be on public addresses.
  strict = await startTestServer({ env: { WEBHOOK_ALLOW_RANGES: '' } });
});
beforeAll(async () => {
  network = await startFakeNetwork();
  tiktok = await startFakeTikTok({ account: { displayName: 'Acme on TikTok', username: 'acme' } });
  receiver = await startWebhookReceiver();
  server = await startTestServer({
    worker: true,
    env: {
      ...tiktokEnv(tiktok),
      SANDBOX_NETWORK_URL: network.url,
      WEBHOOK_ALLOW_RANGES: '127.0.0.1/32',
      WEBHOOK_RETRY_SCHEDULE: '0.3,0.3',
      RATE_LIMIT_MAX: '100000',
      DAILY_POST_LIMIT_SANDBOX: '1000',
    },
  });
  org = await createOrganization(server.ctx.db, 'Acme');
  other = await createOrganization(server.ctx.db, 'Globex');
  channelId = (await createChannel(server.ctx.db, org.id, 'sandbox', 'Acme sandbox')).id;
});
afterAll(async () => {
  await Promise.all([server?.close(), strict?.close()]);
  await Promise.all([network?.close(), receiver?.close(), tiktok?.close()]);
});

/** The Public API as the organization (by default), an OAuth app's token, or on another server. */
const api = (as: { auth: { Authorization: string } } = org, on: TestServer = server) => publicApi(on, as.auth);
const byId = (id: string) => ({ params: { path: { id } } });
const remove = (webhookId: string) => api().DELETE('/public/v1/webhooks/{id}', byId(webhookId));
const sendTest = (webhookId: string) => api().POST('/public/v1/webhooks/{id}/test', byId(webhookId));
const webhookIds = async (as = api()) => dataOf(await as.GET('/public/v1/webhooks')).data.map((w) => w.id);

async function createEndpoint(eventTypes: Schemas['CreateWebhookRequest']['eventTypes'], url = receiver.url) {
  const created = await api().POST('/public/v1/webhooks', {
    body: { url, eventTypes, description: 'Test receiver' },
  });
  return dataOf(created, 201);
}

type WebhookEvent =
  | Schemas['PostWebhookEvent']
  | Schemas['ChannelWebhookEvent']
  | Schemas['ChannelExpiringWebhookEvent']
  | Schemas['TestWebhookEvent'];

/** The event a message carries, once the Standard Webhooks verifier accepts its signature. */
const verify = <T extends WebhookEvent = WebhookEvent>(secret: string, message: ReceivedWebhook) =>
  new Webhook(secret).verify(message.body, message.headers) as T;

async function publishNow(content: string): Promise<string> {
  const created = await api().POST('/public/v1/posts', {
    body: { type: 'now', content, channelIds: [channelId] },
  });
  return dataOf(created, 201).data[0]!.id;
}

async function deliveries(webhookId: string) {
  const page = await api().GET('/public/v1/webhooks/{id}/deliveries', {
    params: { path: { id: webhookId }, query: { limit: 100 } },
  });
  return dataOf(page).data;
}

/** The endpoint's deliveries once there are `count` and none is pending (retries wait 0.3 s here). */
function untilSettled(webhookId: string, count: number) {
  return eventually(
    async () => {
      const list = await deliveries(webhookId);
      expect(list.length).toBeGreaterThanOrEqual(count);
      expect(list.filter((delivery) => delivery.status === 'pending')).toEqual([]);
      return list;
    },
    { timeout: scaled(15_000) },
  );
}

describe('managing webhook endpoints', () => {
  it('creates an endpoint with its secret shown once, lists, reads, updates and deletes it; another organization sees none of it', async () => {
    const created = await createEndpoint(['post.published']);
    expect(created).toMatchObject({
      url: receiver.url,
      eventTypes: ['post.published'],
      description: 'Test receiver',
      enabled: true,
      disabledReason: null,
      previousSecretExpiresAt: null,
    });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    const read = dataOf(await api().GET('/public/v1/webhooks/{id}', byId(created.id)));
    expect(read).not.toHaveProperty('secret');
    expect(await webhookIds()).toContain(created.id);
    // The secret is stored encrypted.
    const row = await server.ctx.db
      .selectFrom('webhook_endpoints')
      .select('secret')
      .where('id', '=', created.id)
      .executeTakeFirstOrThrow();
    expect(row.secret).not.toContain(created.secret.slice(6));

    const updated = await api().PATCH('/public/v1/webhooks/{id}', {
      ...byId(created.id),
      body: { eventTypes: ['post.failed', 'post.published'], description: '', enabled: false },
    });
    expect(dataOf(updated)).toMatchObject({
      eventTypes: ['post.failed', 'post.published'],
      description: null,
      enabled: false,
    });

    refusalOf(await api(other).GET('/public/v1/webhooks/{id}', byId(created.id)), 404);
    refusalOf(await api(other).POST('/public/v1/webhooks/{id}/test', byId(created.id)), 404);
    expect(await webhookIds(api(other))).toEqual([]);

    dataOf(await remove(created.id), 204);
    refusalOf(await api().GET('/public/v1/webhooks/{id}', byId(created.id)), 404);
  });

  it('gives an OAuth app its own endpoints, which revoking the app removes', async () => {
    const app = await createOAuthApp(server.ctx.db, other.id, { name: 'Hooks app' });
    const token = {
      auth: { Authorization: `Bearer ${await exchange(server, app, await approve(server.ctx.db, app, org))}` },
    };
    const mine = await createEndpoint(['post.published']);
    const theirs = dataOf(
      await api(token).POST('/public/v1/webhooks', { body: { url: receiver.url, eventTypes: ['post.failed'] } }),
      201,
    );
    // The app sees its own; the organization's API key sees both.
    expect(await webhookIds(api(token))).toEqual([theirs.id]);
    refusalOf(await api(token).GET('/public/v1/webhooks/{id}', byId(mine.id)), 404);
    expect(await webhookIds()).toEqual(expect.arrayContaining([mine.id, theirs.id]));

    const grant = await server.ctx.db
      .selectFrom('oauth_grants')
      .select('id')
      .where('app_id', '=', app.app.id)
      .where('organization_id', '=', org.id)
      .executeTakeFirstOrThrow();
    await revokeGrant(server.ctx.db, org.userId, grant.id);
    refusalOf(await api().GET('/public/v1/webhooks/{id}', byId(theirs.id)), 404);
    dataOf(await api().GET('/public/v1/webhooks/{id}', byId(mine.id)));
    await remove(mine.id);
  });

  it('refuses receivers on loopback, private, link-local and metadata addresses, and names resolving to them', async () => {
    for (const url of [
      'http://127.0.0.1:8080/h',
      'http://[::1]/h',
      'http://10.0.0.1/h',
      'http://169.254.169.254/latest/meta-data',
      'http://localhost:8080/h',
      'http://user:pw@hooks.example.com/h',
    ]) {
      const refused = await api(await strictOrg(), strict).POST('/public/v1/webhooks', {
        body: { url, eventTypes: ['post.published'] },
      });
      expect(refusalOf(refused, 422).details?.[0]?.path, url).toBe('url');
    }
    // An operator's allowed range never opens the metadata address.
    const metadata = await api().POST('/public/v1/webhooks', {
      body: { url: 'http://169.254.169.254/h', eventTypes: ['post.published'] },
    });
    expect(refusalOf(metadata, 422).message).toMatch(/metadata/);
  });
});

let strictOrganization: TestOrganization | undefined;
async function strictOrg(): Promise<TestOrganization> {
  strictOrganization ??= await createOrganization(strict.ctx.db, 'Strict');
  return strictOrganization;
}

describe('delivering events', () => {
  it('sends the events of a published post, in order, signed so that the Standard Webhooks verifier accepts them', async () => {
    const endpoint = await createEndpoint(['post.scheduled', 'post.publishing', 'post.published']);
    const before = receiver.received.length;
    const postId = await publishNow('Hello, webhooks');
    const messages = (await receiver.untilReceived(before + 3)).slice(before);
    const events = messages.map((message) => verify(endpoint.secret, message));
    expect(events.map((event) => event.type)).toEqual(['post.scheduled', 'post.publishing', 'post.published']);
    expect(events[2]!.data).toMatchObject({ id: postId, status: 'published', releaseId: anyString() });
    // The post as the API returns it.
    expect(events[2]!.data).toEqual(dataOf(await api().GET('/public/v1/posts/{id}', byId(postId))));
    expect(messages[0]!.headers['webhook-id']).toMatch(/^msg_/);

    // A body altered on the way, or an old timestamp, fails verification.
    const tampered = { ...messages[2]!, body: messages[2]!.body.replace('published', 'failed') };
    expect(() => verify(endpoint.secret, tampered)).toThrow();
    const old = {
      ...messages[2]!,
      headers: { ...messages[2]!.headers, 'webhook-timestamp': String(Math.floor(Date.now() / 1000) - 3600) },
    };
    expect(() => verify(endpoint.secret, old)).toThrow();

    // The SDK verifies the same way, and says why it refuses.
    expect(verifyWebhook(messages[2]!.body, messages[2]!.headers, endpoint.secret)).toMatchObject({
      type: 'post.published',
      data: { id: postId },
    });
    expect(
      verifyWebhook(Buffer.from(messages[2]!.body), new Headers(messages[2]!.headers), [
        'whsec_' + Buffer.alloc(24).toString('base64'),
        endpoint.secret,
      ]).type,
    ).toBe('post.published');
    for (const refused of [tampered, old]) {
      const error = (() => {
        try {
          verifyWebhook(refused.body, refused.headers, endpoint.secret);
        } catch (caught) {
          return caught;
        }
      })();
      expect(error).toBeInstanceOf(WebhookVerificationError);
      expect(error).toMatchObject({ status: 400, code: 'invalid_webhook' });
    }
    expect(() => verifyWebhook(messages[2]!.body, {}, endpoint.secret)).toThrow(/no webhook-id header/);
    await remove(endpoint.id);
  });

  it('tries again after failures with the same webhook-id, keeps the post’s later events waiting, and lists the attempts', async () => {
    const endpoint = await createEndpoint(['post.scheduled', 'post.published']);
    const before = receiver.received.length;
    receiver.answerNext(500, 503);
    await publishNow('Flaky receiver');
    const messages = (await receiver.untilReceived(before + 4)).slice(before);
    const types = messages.map((message) => verify(endpoint.secret, message).type);
    // The scheduled event three times (two failures, then 200), and only then the published one.
    expect(types).toEqual(['post.scheduled', 'post.scheduled', 'post.scheduled', 'post.published']);
    expect(new Set(messages.slice(0, 3).map((m) => m.headers['webhook-id'])).size).toBe(1);

    const list = await untilSettled(endpoint.id, 2);
    expect(list.map((d) => [d.eventType, d.status, d.attempts, d.lastStatusCode, d.lastResponseBody])).toEqual([
      ['post.published', 'succeeded', 1, 200, 'ok'],
      ['post.scheduled', 'succeeded', 3, 200, 'ok'],
    ]);
    expect(list[1]!.id).toBe(messages[0]!.headers['webhook-id']);
    await remove(endpoint.id);
  });

  it('fails a delivery after the last retry, without following a redirect, and sends it again on request', async () => {
    const endpoint = await createEndpoint(['post.published']);
    const elsewhere = await startWebhookReceiver();
    try {
      receiver.answerNext(500, 500, { redirect: `${elsewhere.url}/moved` });
      const test = dataOf(await sendTest(endpoint.id), 202);
      expect(test).toMatchObject({ eventType: 'webhook.test', status: 'pending' });
      const [failed] = await untilSettled(endpoint.id, 1);
      expect(failed).toMatchObject({
        status: 'failed',
        attempts: 3,
        lastStatusCode: 302,
        lastError: `the receiver answered 302, a redirect to ${elsewhere.url}/moved, which is not followed: register the URL that answers`,
      });
      expect(elsewhere.received).toEqual([]);

      const before = receiver.received.length;
      const retried = await api().POST('/public/v1/webhooks/{id}/deliveries/{deliveryId}/retry', {
        params: { path: { id: endpoint.id, deliveryId: failed!.id } },
      });
      dataOf(retried, 202);
      const [again] = (await receiver.untilReceived(before + 1)).slice(before);
      expect(again!.headers['webhook-id']).toBe(failed!.id);
      expect(verify(endpoint.secret, again!)).toMatchObject({ type: 'webhook.test', data: { webhookId: endpoint.id } });
      expect((await untilSettled(endpoint.id, 1))[0]).toMatchObject({ status: 'succeeded', attempts: 4 });
    } finally {
      await elsewhere.close();
      await remove(endpoint.id);
    }
  });

  it('signs with both secrets for a day after a rotation, then with the new one only', async () => {
    const endpoint = await createEndpoint(['post.published']);
    const rotated = dataOf(await api().POST('/public/v1/webhooks/{id}/rotate-secret', byId(endpoint.id)));
    expect(rotated.secret).not.toBe(endpoint.secret);
    expect(Date.parse(rotated.previousSecretExpiresAt) - Date.now()).toBeGreaterThan(23.9 * 3_600_000);

    let before = receiver.received.length;
    await sendTest(endpoint.id);
    const [during] = (await receiver.untilReceived(before + 1)).slice(before);
    expect(during!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(verify(rotated.secret, during!).type).toBe('webhook.test');
    expect(verify(endpoint.secret, during!).type).toBe('webhook.test');

    // A day later.
    await server.ctx.db
      .updateTable('webhook_endpoints')
      .set({ previous_secret_expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', endpoint.id)
      .execute();
    before = receiver.received.length;
    await sendTest(endpoint.id);
    const [after] = (await receiver.untilReceived(before + 1)).slice(before);
    expect(verify(rotated.secret, after!).type).toBe('webhook.test');
    expect(() => verify(endpoint.secret, after!)).toThrow();
    const read = dataOf(await api().GET('/public/v1/webhooks/{id}', byId(endpoint.id)));
    expect(read.previousSecretExpiresAt).toBeNull();
    await remove(endpoint.id);
  });

  it('turns off an endpoint that failed every delivery for 3 days', async () => {
    const endpoint = await createEndpoint(['post.published']);
    await server.ctx.db
      .updateTable('webhook_endpoints')
      .set({ failing_since: new Date(Date.now() - 3 * 86_400_000 - 60_000) })
      .where('id', '=', endpoint.id)
      .execute();
    receiver.answerNext(500);
    await sendTest(endpoint.id);
    await untilSettled(endpoint.id, 1);
    expect(dataOf(await api().GET('/public/v1/webhooks/{id}', byId(endpoint.id)))).toMatchObject({
      enabled: false,
      disabledReason: 'failing',
    });
    // Turned on again by its owner, it starts afresh.
    const enabled = await api().PATCH('/public/v1/webhooks/{id}', { ...byId(endpoint.id), body: { enabled: true } });
    expect(dataOf(enabled)).toMatchObject({ enabled: true, disabledReason: null });
    await remove(endpoint.id);
  });

  it('reports a channel connected, and a channel that needs to be connected again', async () => {
    const endpoint = await createEndpoint(['channel.connected', 'channel.needs_reconnect']);
    const before = receiver.received.length;
    const session = new BrowserSession(server);
    await session.logIn(org.email, org.password);
    expect((await connectTikTok(session)).headers.get('location')).toBe('/settings/channels?done=connected');
    const [connected] = (await receiver.untilReceived(before + 1)).slice(before);
    const event = verify<Schemas['ChannelWebhookEvent']>(endpoint.secret, connected!);
    expect(event).toMatchObject({
      type: 'channel.connected',
      data: { provider: 'tiktok', name: 'Acme on TikTok', username: 'acme', status: 'active' },
    });

    tiktok.revokeAll();
    tiktok.advanceClock(86_400 + 60);
    server.setNow(new Date(Date.now() + 86_400_000 + 60_000));
    try {
      const creatorInfo = await api().GET('/public/v1/channels/{id}/tiktok/creator-info', byId(event.data.id));
      refusalOf(creatorInfo, 422);
    } finally {
      server.setNow(undefined);
    }
    const [marked] = (await receiver.untilReceived(before + 2)).slice(before + 1);
    expect(verify(endpoint.secret, marked!)).toMatchObject({
      type: 'channel.needs_reconnect',
      data: { id: event.data.id, status: 'needs_reconnect' },
    });
    await remove(endpoint.id);
  });

  it('warns once per connection of a channel whose access ends within a week, only the endpoints subscribed', async () => {
    const subscribed = await createEndpoint(['channel.expiring']);
    const elsewhere = await createEndpoint(['channel.connected', 'channel.needs_reconnect', 'post.published']);
    const session = new BrowserSession(server);
    await session.logIn(org.email, org.password);
    await connectTikTok(session);
    const channel = await server.ctx.db
      .selectFrom('channels')
      .select('id')
      .where('organization_id', '=', org.id)
      .where('provider', '=', 'tiktok')
      .executeTakeFirstOrThrow();
    // The end of access a network names at connection and no refresh moves (Meta's data access), 6 days away.
    const endIn6Days = async () => {
      const endsAt = new Date(server.ctx.clock.now().getTime() + 6 * 86_400_000);
      await server.ctx.db
        .insertInto('channel_access_ends')
        .values({ channel_id: channel.id, ends_at: endsAt })
        .onConflict((oc) => oc.column('channel_id').doUpdateSet({ ends_at: endsAt }))
        .execute();
      return endsAt;
    };
    const expiring = () =>
      receiver.received.filter((message) => (JSON.parse(message.body) as WebhookEvent).type === 'channel.expiring');
    // Housekeeping's events all turned into deliveries, so that a delivery not made is one never to come.
    const dispatched = () =>
      eventually(async () => {
        const waiting = await server.ctx.db
          .selectFrom('channel_events')
          .select('id')
          .where('organization_id', '=', org.id)
          .where('webhooks_dispatched_at', 'is', null)
          .execute();
        expect(waiting).toEqual([]);
      });

    const firstEnd = await endIn6Days();
    const before = expiring().length;
    await keepHouse(server.ctx);
    await eventually(() => expect(expiring()).toHaveLength(before + 1));
    expect(verify<Schemas['ChannelExpiringWebhookEvent']>(subscribed.secret, expiring()[before]!)).toMatchObject({
      type: 'channel.expiring',
      data: { id: channel.id, provider: 'tiktok', status: 'active', accessEndsAt: firstEnd.toISOString() },
    });
    // Later housekeeping runs say nothing more of the same connection.
    await keepHouse(server.ctx);
    await keepHouse(server.ctx);
    await dispatched();
    expect((await untilSettled(subscribed.id, 1)).map((d) => d.eventType)).toEqual(['channel.expiring']);

    // Connected again, the channel's access starts anew: a new end within a week is a new warning.
    await connectTikTok(session);
    await keepHouse(server.ctx);
    await dispatched();
    expect(expiring()).toHaveLength(before + 1);
    const secondEnd = await endIn6Days();
    await keepHouse(server.ctx);
    await eventually(() => expect(expiring()).toHaveLength(before + 2));
    expect(
      verify<Schemas['ChannelExpiringWebhookEvent']>(subscribed.secret, expiring()[before + 1]!).data,
    ).toMatchObject({ id: channel.id, accessEndsAt: secondEnd.toISOString() });
    await dispatched();
    expect((await untilSettled(subscribed.id, 2)).map((d) => d.eventType)).toEqual([
      'channel.expiring',
      'channel.expiring',
    ]);
    // An endpoint subscribed to other events gets its channel.connected events, and none of these.
    expect((await deliveries(elsewhere.id)).map((d) => d.eventType)).toEqual([
      'channel.connected',
      'channel.connected',
    ]);
    await remove(subscribed.id);
    await remove(elsewhere.id);
  });

  it('housekeeping sends a pending delivery that lost its job, and forgets settled ones after 30 days', async () => {
    const endpoint = await createEndpoint(['post.published']);
    const lost = 'msg_lostItsJob000000000';
    const payload = JSON.stringify({
      type: 'webhook.test',
      timestamp: new Date().toISOString(),
      data: { webhookId: endpoint.id },
    });
    await server.ctx.db
      .insertInto('webhook_deliveries')
      .values({
        id: lost,
        endpoint_id: endpoint.id,
        event_type: 'webhook.test',
        ordering_key: null,
        payload,
        next_attempt_at: new Date(Date.now() - 20 * 60_000),
      })
      .execute();
    await server.ctx.db
      .insertInto('webhook_deliveries')
      .values({
        id: 'msg_settledLongAgo0000000',
        endpoint_id: endpoint.id,
        event_type: 'webhook.test',
        ordering_key: null,
        payload,
        status: 'succeeded',
        next_attempt_at: null,
        created_at: new Date(Date.now() - 31 * 86_400_000),
      })
      .execute();
    const before = receiver.received.length;
    await keepHouse(server.ctx);
    const [sent] = (await receiver.untilReceived(before + 1)).slice(before);
    expect(sent!.headers['webhook-id']).toBe(lost);
    expect((await untilSettled(endpoint.id, 1)).map((d) => [d.id, d.status])).toEqual([[lost, 'succeeded']]);
    await remove(endpoint.id);
  });
});
