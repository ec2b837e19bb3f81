import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChannel, createOrganization, insertPost, type TestOrganization } from './support/fixtures.js';
import { json } from './support/http.js';
import { send } from './support/posts.js';
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

const listed = async (org: TestOrganization) =>
  (await json(await send(server, org.auth, 'GET', '/public/v1/channels'))).data as {
    id: string;
    status: string;
    disabled: boolean;
  }[];
const post = async (id: string) => json(await send(server, acme.auth, 'GET', `/public/v1/posts/${id}`));
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
    const created = await send(server, acme.auth, 'POST', '/public/v1/posts', {
      type: 'schedule',
      date: tomorrow().toISOString(),
      content: 'Due tomorrow',
      channelIds: [channel.id],
    });
    expect(created.status).toBe(201);
    const scheduled = (await json(created)).data[0].id as string;
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

    const removed = await send(server, acme.auth, 'DELETE', `/public/v1/channels/${channel.id}`);
    expect(removed.status).toBe(204);
    expect((await listed(acme)).map((c) => c.id)).not.toContain(channel.id);
    expect((await post(scheduled)).status).toBe('draft');
    expect((await post(failed)).status).toBe('draft');
    expect((await post(published)).status).toBe('published');
    expect((await post(draft)).status).toBe('draft');
    const history = (await json(await send(server, acme.auth, 'GET', `/public/v1/posts/${scheduled}/history`))).data;
    expect(history.at(-1)).toMatchObject({
      type: 'drafted',
      status: 'draft',
      reason: 'its channel Going away was removed',
    });

    // Gone: it takes no posts, and removing it again is a 404.
    const refused = await send(server, acme.auth, 'POST', '/public/v1/posts', {
      type: 'draft',
      content: 'Hi',
      channelIds: [channel.id],
    });
    expect(refused.status).toBe(422);
    expect((await send(server, acme.auth, 'DELETE', `/public/v1/channels/${channel.id}`)).status).toBe(404);
    // Its drafts cannot be scheduled on it any more.
    const again = await send(server, acme.auth, 'POST', `/public/v1/posts/${scheduled}/schedule`, {
      scheduledAt: tomorrow().toISOString(),
    });
    expect(again.status).toBe(422);
  });

  it('refuses while a post of the channel is publishing, and changes nothing', async () => {
    const channel = await createChannel(server.ctx.db, acme.id, 'sandbox', 'Busy');
    const publishing = await insertPost(server.ctx.db, {
      organizationId: acme.id,
      channelId: channel.id,
      status: 'publishing',
      scheduledAt: tomorrow().toISOString(),
    });
    const refused = await send(server, acme.auth, 'DELETE', `/public/v1/channels/${channel.id}`);
    expect(refused.status).toBe(409);
    expect((await json(refused)).error.code).toBe('conflict');
    expect((await listed(acme)).map((c) => c.id)).toContain(channel.id);
    expect((await post(publishing)).status).toBe('publishing');
  });

  it('answers 404 for an unknown channel and for another organization’s, which stays', async () => {
    const theirs = await createChannel(server.ctx.db, globex.id, 'sandbox', 'Theirs');
    expect((await send(server, acme.auth, 'DELETE', '/public/v1/channels/ch_unknown')).status).toBe(404);
    const foreign = await send(server, acme.auth, 'DELETE', `/public/v1/channels/${theirs.id}`);
    expect(foreign.status).toBe(404);
    expect((await json(foreign)).error.code).toBe('not_found');
    expect((await listed(globex)).map((c) => c.id)).toContain(theirs.id);
  });
});
