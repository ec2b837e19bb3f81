import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicApi, type ApiError } from './support/api.js';
import { createChannel, createOrganization, type TestOrganization } from './support/fixtures.js';
import { FakeTikTok, OPEN_CREATOR, POSTS_TEST_ENV } from './support/posts.js';
import { startTestServer, type TestServer } from './support/server.js';

let server: TestServer;
let unconfigured: TestServer;
let tiktok: FakeTikTok;
let acme: TestOrganization;
let globex: TestOrganization;
let channels: { tiktok: string; unreachable: string; sandbox: string; foreign: string };

// One server per hook: a hook's time is a server's start, however busy the machine.
beforeAll(async () => {
  unconfigured = await startTestServer({ env: POSTS_TEST_ENV });
});
beforeAll(async () => {
  tiktok = new FakeTikTok();
  server = await startTestServer({ env: POSTS_TEST_ENV, providers: { tiktok: { creatorInfo: tiktok } } });
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

/** The refusal of a typed request: its status and the code of its error envelope. */
function failure(answer: { error?: ApiError; response: Response }, status: number, code: string): ApiError['error'] {
  expect(answer.response.status, JSON.stringify(answer.error)).toBe(status);
  expect(answer.error?.error.code).toBe(code);
  return answer.error!.error;
}

const creatorInfo = (id: string, org = acme, target = server) =>
  publicApi(target, org.auth).GET('/public/v1/channels/{id}/tiktok/creator-info', { params: { path: { id } } });

const analytics = (id: string) =>
  publicApi(server, acme.auth).GET('/public/v1/channels/{id}/tiktok/analytics', {
    params: { path: { id }, query: { days: 7 } },
  });

describe('GET /public/v1/channels/{id}/tiktok/creator-info', () => {
  it('answers what the TikTok account allows, as the adapter read it', async () => {
    const { data, response } = await creatorInfo(channels.tiktok);
    expect(response.status).toBe(200);
    expect(data).toEqual({
      ...OPEN_CREATOR,
      channelId: channels.tiktok,
      canPost: false,
      cannotPostReason: 'Daily limit reached.',
      duetDisabled: true,
    });
  });

  it('404 for an unknown or foreign channel, 422 for a channel of another provider', async () => {
    failure(await creatorInfo('ch_unknown'), 404, 'not_found');
    failure(await creatorInfo(channels.foreign), 404, 'not_found');
    const error = failure(await creatorInfo(channels.sandbox), 422, 'unprocessable');
    expect(error.message).toBe(`Channel ${channels.sandbox} is a sandbox channel, not a TikTok channel.`);
  });

  it('502 when TikTok cannot be reached, 422 on a server without a TikTok app', async () => {
    failure(await creatorInfo(channels.unreachable), 502, 'provider_error');
    const org = await createOrganization(unconfigured.ctx.db);
    const channel = (await createChannel(unconfigured.ctx.db, org.id, 'tiktok')).id;
    const error = failure(await creatorInfo(channel, org, unconfigured), 422, 'unprocessable');
    expect(error.message).toContain('not configured');
  });
});

describe('GET /public/v1/channels/{id}/tiktok/analytics', () => {
  it('checks the channel like creator info, then says it is not offered here (501)', async () => {
    failure(await analytics(channels.foreign), 404, 'not_found');
    failure(await analytics(channels.sandbox), 422, 'unprocessable');
    failure(await analytics(channels.tiktok), 501, 'not_implemented');
  });
});
