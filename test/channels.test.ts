import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/core/ids.js';
import { createChannel, createOrganization, insertPost, type TestOrganization } from './support/fixtures.js';
import { json } from './support/http.js';
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

    const response = await server.fetch('/public/v1/channels', { headers: acme.auth });
    expect(response.status).toBe(200);
    const { data } = await json(response);
    expect(data.map((c: { id: string }) => c.id)).toEqual([youtube.id, tiktok.id]);
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

    const theirs = await json(await server.fetch('/public/v1/channels', { headers: globex.auth }));
    expect(theirs.data.map((c: { id: string }) => c.id)).toEqual([foreign.id]);
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
      const response = await server.fetch('/public/v1/channels/quota', { headers: org.auth });
      expect(response.status).toBe(200);
      const body = await json(response);
      body.data.sort((a: { provider: string }, b: { provider: string }) => b.provider.localeCompare(a.provider));
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
    const response = await server.fetch('/public/v1/channels', { headers: org.auth });
    expect(response.status).toBe(500);
    const body = await json(response);
    expect(body.error.code).toBe('internal');
    expect(JSON.stringify(body)).not.toMatch(/picture|format|stack/i);
  });
});
