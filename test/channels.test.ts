import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/core/ids.js';
import { dataOf, publicApi } from './support/api.js';
import { createChannel, createOrganization, insertPost, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';

let server: TestServer;
let acme: TestOrganization;
let globex: TestOrganization;

beforeAll(async () => {
  server = await startTestServer({ env: { DAILY_POST_LIMIT_TIKTOK: '2' } });
  acme = await createOrganization(server.ctx.db, 'Acme');
  globex = await createOrganization(server.ctx.db, 'Globex');
});
afterAll(() => server?.close());

describe('GET /public/v1/channels', () => {
  it('lists only the caller’s organization’s channels', async () => {
    const youtube = await createChannel(server.ctx.db, acme.id, 'youtube', 'Acme on YouTube');
    const tiktok = await createChannel(server.ctx.db, acme.id, 'tiktok', 'Acme on TikTok');
    const foreign = await createChannel(server.ctx.db, globex.id, 'sandbox', 'Globex sandbox');

    const { data } = await dataOf(publicApi(server, acme.auth).GET('/public/v1/channels'), 200);
    expect(data.map((c) => c.id)).toEqual([youtube.id, tiktok.id]);
    expect(data[0]).toEqual({
      id: youtube.id,
      provider: 'youtube',
      name: 'Acme on YouTube',
      username: null,
      picture: null,
      status: 'active',
      disabled: false,
      createdAt: youtube.created_at.toISOString(),
    });

    const theirs = await dataOf(publicApi(server, globex.auth).GET('/public/v1/channels'), 200);
    expect(theirs.data.map((c) => c.id)).toEqual([foreign.id]);
  });
});

describe('GET /public/v1/channels/quota', () => {
  it('counts each channel’s posts of the current UTC day against its provider’s cap', async () => {
    const org = await createOrganization(server.ctx.db, 'Quota');
    const tiktok = await createChannel(server.ctx.db, org.id, 'tiktok');
    const sandbox = await createChannel(server.ctx.db, org.id, 'sandbox');
    await insertPost(server.ctx.db, {
      organizationId: org.id,
      channelId: tiktok.id,
      status: 'scheduled',
      scheduledAt: '2026-11-21T08:00:00.000Z',
    });
    await insertPost(server.ctx.db, {
      organizationId: org.id,
      channelId: tiktok.id,
      status: 'published',
      scheduledAt: '2026-11-21T00:00:00.000Z',
    });
    await insertPost(server.ctx.db, {
      organizationId: org.id,
      channelId: tiktok.id,
      status: 'publishing',
      scheduledAt: '2026-11-21T23:59:59.999Z',
    });
    await insertPost(server.ctx.db, {
      organizationId: org.id,
      channelId: tiktok.id,
      status: 'draft',
      scheduledAt: '2026-11-21T09:00:00.000Z',
    }); // drafts do not count
    await insertPost(server.ctx.db, {
      organizationId: org.id,
      channelId: tiktok.id,
      status: 'failed',
      scheduledAt: '2026-11-21T09:00:00.000Z',
    }); // nor failures
    await insertPost(server.ctx.db, {
      organizationId: org.id,
      channelId: tiktok.id,
      status: 'scheduled',
      scheduledAt: '2026-11-22T00:00:00.000Z',
    }); // tomorrow
    await insertPost(server.ctx.db, {
      organizationId: org.id,
      channelId: tiktok.id,
      status: 'published',
      scheduledAt: '2026-11-20T23:59:59.999Z',
    }); // yesterday
    await insertPost(server.ctx.db, {
      organizationId: org.id,
      channelId: sandbox.id,
      status: 'scheduled',
      scheduledAt: '2026-11-21T12:00:00.000Z',
    });

    server.setNow('2026-11-21T15:30:00.000Z');
    try {
      const body = await dataOf(publicApi(server, org.auth).GET('/public/v1/channels/quota'), 200);
      body.data.sort((a, b) => b.provider.localeCompare(a.provider));
      expect(body).toEqual({
        data: [
          {
            channelId: tiktok.id,
            provider: 'tiktok',
            window: 'day',
            limit: 2,
            used: 3,
            remaining: 0,
            resetsAt: '2026-11-22T00:00:00.000Z',
          },
          {
            channelId: sandbox.id,
            provider: 'sandbox',
            window: 'day',
            limit: 100,
            used: 1,
            remaining: 99,
            resetsAt: '2026-11-22T00:00:00.000Z',
          },
        ],
      });
    } finally {
      server.setNow(undefined);
    }
  });
});

describe('contract enforcement', () => {
  it('turns a response that breaks the contract into a 500 instead of sending it', async () => {
    const org = await createOrganization(server.ctx.db, 'Broken data');
    // A picture that is not a URL can only come from bad data; the contract says `format: uri`.
    await server.ctx.db
      .insertInto('channels')
      .values({
        id: newId('ch'),
        organization_id: org.id,
        provider: 'sandbox',
        name: 'x',
        username: null,
        picture: 'not a url',
      })
      .execute();
    const { error, response } = await publicApi(server, org.auth).GET('/public/v1/channels');
    expect(response.status).toBe(500);
    expect(error?.error.code).toBe('internal');
    expect(JSON.stringify(error)).not.toMatch(/picture|format|stack/i);
  });
});
