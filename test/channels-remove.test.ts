import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataOf, publicApi } from './support/api.js';
import { createChannel, createOrganization, insertPost, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';

let server: TestServer;
let acme: TestOrganization;
let globex: TestOrganization;

beforeAll(async () => {
  server = await startTestServer({ env: { RATE_LIMIT_MAX: '10000' } });
  acme = await createOrganization(server.ctx.db, 'Acme');
  globex = await createOrganization(server.ctx.db, 'Globex');
});
afterAll(async () => {
  await server?.close();
});

const api = (org: TestOrganization) => publicApi(server, org.auth);
const listed = async (org: TestOrganization) => (await dataOf(api(org).GET('/public/v1/channels'), 200)).data;
const post = (id: string) => dataOf(api(acme).GET('/public/v1/posts/{id}', { params: { path: { id } } }), 200);
const removeChannel = (org: TestOrganization, id: string) =>
  api(org).DELETE('/public/v1/channels/{id}', { params: { path: { id } } });
const tomorrow = () => new Date(Date.now() + 86_400_000);

describe('channel status', () => {
  it('lists a channel as active, or disabled with disabled: true', async () => {
    const active = await createChannel(server.ctx.db, acme.id, 'sandbox', 'On');
    const off = await createChannel(server.ctx.db, acme.id, 'sandbox', 'Off');
    await server.ctx.db.updateTable('channels').set({ status: 'disabled' }).where('id', '=', off.id).execute();
    const channels = await listed(acme);
    expect(channels.find((c) => c.id === active.id)).toMatchObject({ status: 'active', disabled: false });
    expect(channels.find((c) => c.id === off.id)).toMatchObject({ status: 'disabled', disabled: true });
  });
});

describe('DELETE /public/v1/channels/{id}', () => {
  it('removes the channel, turns its scheduled and failed posts into drafts and keeps the rest', async () => {
    const channel = await createChannel(server.ctx.db, acme.id, 'sandbox', 'Going away');
    const created = await dataOf(
      api(acme).POST('/public/v1/posts', {
        body: { type: 'schedule', date: tomorrow().toISOString(), content: 'Due tomorrow', channelIds: [channel.id] },
      }),
      201,
    );
    const scheduled = created.data[0]!.id;
    const failed = await insertPost(server.ctx.db, {
      organizationId: acme.id,
      channelId: channel.id,
      status: 'failed',
      scheduledAt: tomorrow().toISOString(),
    });
    const published = await insertPost(server.ctx.db, {
      organizationId: acme.id,
      channelId: channel.id,
      status: 'published',
      scheduledAt: tomorrow().toISOString(),
    });
    const draft = await insertPost(server.ctx.db, {
      organizationId: acme.id,
      channelId: channel.id,
      status: 'draft',
      scheduledAt: tomorrow().toISOString(),
    });

    const removed = await removeChannel(acme, channel.id);
    expect(removed.response.status).toBe(204);
    expect((await listed(acme)).map((c) => c.id)).not.toContain(channel.id);
    expect((await post(scheduled)).status).toBe('draft');
    expect((await post(failed)).status).toBe('draft');
    expect((await post(published)).status).toBe('published');
    expect((await post(draft)).status).toBe('draft');
    const history = await dataOf(
      api(acme).GET('/public/v1/posts/{id}/history', { params: { path: { id: scheduled } } }),
      200,
    );
    expect(history.data.at(-1)).toMatchObject({
      type: 'drafted',
      status: 'draft',
      reason: 'its channel Going away was removed',
    });

    // Gone: it takes no posts, and removing it again is a 404.
    const refused = await api(acme).POST('/public/v1/posts', {
      body: { type: 'draft', content: 'Hi', channelIds: [channel.id] },
    });
    expect(refused.response.status).toBe(422);
    expect((await removeChannel(acme, channel.id)).response.status).toBe(404);
    // Its drafts cannot be scheduled on it any more.
    const again = await api(acme).POST('/public/v1/posts/{id}/schedule', {
      params: { path: { id: scheduled } },
      body: { scheduledAt: tomorrow().toISOString() },
    });
    expect(again.response.status).toBe(422);
  });

  it('refuses while a post of the channel is publishing, and changes nothing', async () => {
    const channel = await createChannel(server.ctx.db, acme.id, 'sandbox', 'Busy');
    const publishing = await insertPost(server.ctx.db, {
      organizationId: acme.id,
      channelId: channel.id,
      status: 'publishing',
      scheduledAt: tomorrow().toISOString(),
    });
    const refused = await removeChannel(acme, channel.id);
    expect(refused.response.status).toBe(409);
    expect(refused.error?.error.code).toBe('conflict');
    expect((await listed(acme)).map((c) => c.id)).toContain(channel.id);
    expect((await post(publishing)).status).toBe('publishing');
  });

  it('answers 404 for an unknown channel and for another organization’s, which stays', async () => {
    const theirs = await createChannel(server.ctx.db, globex.id, 'sandbox', 'Theirs');
    expect((await removeChannel(acme, 'ch_unknown')).response.status).toBe(404);
    const foreign = await removeChannel(acme, theirs.id);
    expect(foreign.response.status).toBe(404);
    expect(foreign.error?.error.code).toBe('not_found');
    expect((await listed(globex)).map((c) => c.id)).toContain(theirs.id);
  });
});
