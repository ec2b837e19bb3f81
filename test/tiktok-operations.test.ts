import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChannel, createOrganization, type TestOrganization } from './support/fixtures.js';
import { json } from './support/http.js';
import { FakeTikTok, OPEN_CREATOR, POSTS_TEST_ENV, send } from './support/posts.js';
import { startTestServer, type TestServer } from './support/server.js';

let server: TestServer;
let unconfigured: TestServer;
let tiktok: FakeTikTok;
let acme: TestOrganization;
let globex: TestOrganization;
let channels: { tiktok: string; unreachable: string; sandbox: string; foreign: string };

beforeAll(async () => {
  tiktok = new FakeTikTok();
  server = await startTestServer({ env: POSTS_TEST_ENV, providers: { tiktok: { creatorInfo: tiktok } } });
  unconfigured = await startTestServer({ env: POSTS_TEST_ENV });
  acme = await createOrganization(server.ctx.db, 'Acme');
  globex = await createOrganization(server.ctx.db, 'Globex');
  channels = {
    tiktok: (await createChannel(server.ctx.db, acme.id, 'tiktok')).id,
    unreachable: (await createChannel(server.ctx.db, acme.id, 'tiktok')).id,
    sandbox: (await createChannel(server.ctx.db, acme.id, 'sandbox')).id,
    foreign: (await createChannel(server.ctx.db, globex.id, 'tiktok')).id,
  };
  tiktok.set(channels.tiktok, { canPost: false, cannotPostReason: 'Daily limit reached.', duetDisabled: true });
  tiktok.failFor(channels.unreachable);
});
afterAll(async () => {
  await server?.close();
  await unconfigured?.close();
});

async function failure(response: Response, status: number, code: string) {
  const body = await json(response);
  expect(response.status, JSON.stringify(body)).toBe(status);
  expect(body.error.code).toBe(code);
  return body.error;
}

describe('GET /public/v1/channels/{id}/tiktok/creator-info', () => {
  const path = (id: string) => `/public/v1/channels/${id}/tiktok/creator-info`;

  it('answers what the TikTok account allows, as the adapter read it', async () => {
    const response = await send(server, acme.auth, 'GET', path(channels.tiktok));
    expect(response.status).toBe(200);
    expect(await json(response)).toEqual({
      ...OPEN_CREATOR,
      channelId: channels.tiktok,
      canPost: false,
      cannotPostReason: 'Daily limit reached.',
      duetDisabled: true,
    });
  });

  it('404 for an unknown or foreign channel, 422 for a channel of another provider', async () => {
    await failure(await send(server, acme.auth, 'GET', path('ch_unknown')), 404, 'not_found');
    await failure(await send(server, acme.auth, 'GET', path(channels.foreign)), 404, 'not_found');
    const error = await failure(await send(server, acme.auth, 'GET', path(channels.sandbox)), 422, 'unprocessable');
    expect(error.message).toBe(`Channel ${channels.sandbox} is a sandbox channel, not a TikTok channel.`);
  });

  it('502 when TikTok cannot be reached, 422 on a server without a TikTok app', async () => {
    await failure(await send(server, acme.auth, 'GET', path(channels.unreachable)), 502, 'provider_error');
    const org = await createOrganization(unconfigured.ctx.db);
    const channel = (await createChannel(unconfigured.ctx.db, org.id, 'tiktok')).id;
    const error = await failure(await send(unconfigured, org.auth, 'GET', path(channel)), 422, 'unprocessable');
    expect(error.message).toContain('not configured');
  });
});

describe('GET /public/v1/channels/{id}/tiktok/analytics', () => {
  const path = (id: string) => `/public/v1/channels/${id}/tiktok/analytics?days=7`;

  it('checks the channel like creator info, then says it is not offered here (501)', async () => {
    await failure(await send(server, acme.auth, 'GET', path(channels.foreign)), 404, 'not_found');
    await failure(await send(server, acme.auth, 'GET', path(channels.sandbox)), 422, 'unprocessable');
    await failure(await send(server, acme.auth, 'GET', path(channels.tiktok)), 501, 'not_implemented');
  });
});
