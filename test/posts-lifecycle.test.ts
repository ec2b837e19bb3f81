import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { PostStatus } from '../src/core/contract.js';
import type { AppContext } from '../src/http/context.js';
import { editPost } from '../src/posts/lifecycle.js';
import { errorOf, publicApi, type Schemas } from './support/api.js';
import {
  createChannel,
  createOrganization,
  insertMedia,
  insertPost,
  type TestOrganization,
} from './support/fixtures.js';
import { FakeTikTok, POSTS_TEST_ENV, send } from './support/posts.js';
import { startTestServer, type TestServer } from './support/server.js';
import { dataOf, refusalOf } from './support/typed-answers.js';
import { stringContaining } from './support/typed-matchers.js';

const NOW = '2026-11-21T12:00:00.000Z';
const FUTURE = '2026-12-01T09:30:00.000Z';
const PAST = '2026-11-20T08:00:00.000Z';

let server: TestServer;
let tiktok: FakeTikTok;
let acme: TestOrganization;
let globex: TestOrganization;
let sandbox: string;
let tiktokChannel: string;
let video: string;

beforeAll(async () => {
  tiktok = new FakeTikTok();
  server = await startTestServer({
    env: { ...POSTS_TEST_ENV, DAILY_POST_LIMIT_SANDBOX: '2' },
    providers: { tiktok: { creatorInfo: tiktok } },
  });
  acme = await createOrganization(server.ctx.db, 'Acme');
  globex = await createOrganization(server.ctx.db, 'Globex');
  sandbox = (await createChannel(server.ctx.db, acme.id, 'sandbox')).id;
  tiktokChannel = (await createChannel(server.ctx.db, acme.id, 'tiktok')).id;
  video = await insertMedia(server.ctx.db, acme.id, 'video');
});
afterAll(() => server?.close());
beforeEach(() => server.setNow(NOW));

/** A post of the organization in the given state, on a channel of its own so that quotas never interfere. */
async function postIn(status: PostStatus, scheduledAt: string | null, options: { error?: string } = {}) {
  const error = options.error === undefined ? null : { code: 'rejected_by_network', message: options.error };
  const channelId = (await createChannel(server.ctx.db, acme.id, 'sandbox', `${status} channel`)).id;
  const id = await insertPost(server.ctx.db, { organizationId: acme.id, channelId, status, scheduledAt, error });
  return { id, channelId };
}

const api = (org: TestOrganization) => publicApi(server, org.auth);
const byId = (id: string) => ({ params: { path: { id } } });
const get = (id: string, org = acme) => api(org).GET('/public/v1/posts/{id}', byId(id));
const changeStatus = (id: string, status: 'draft' | 'scheduled', org = acme) =>
  api(org).PATCH('/public/v1/posts/{id}/status', { ...byId(id), body: { status } });
const schedule = (id: string, scheduledAt: string, org = acme) =>
  api(org).POST('/public/v1/posts/{id}/schedule', { ...byId(id), body: { scheduledAt } });
const edit = (id: string, body: Schemas['UpdatePostRequest'], org = acme) =>
  api(org).PATCH('/public/v1/posts/{id}', { ...byId(id), body });
const remove = (id: string, org = acme) => api(org).DELETE('/public/v1/posts/{id}', byId(id));

describe('GET /public/v1/posts/{id}', () => {
  it('answers the post, and 404 for unknown ids', async () => {
    const { id, channelId } = await postIn('published', PAST);
    const body = dataOf(await get(id));
    expect(body).toMatchObject({ id, channelId, provider: 'sandbox', status: 'published', scheduledAt: PAST });
    const unknown = refusalOf(await get('post_unknown'), 404, 'not_found');
    expect(unknown.message).toBe('There is no post post_unknown in this organization.');
  });
});

describe('PATCH /public/v1/posts/{id}/status: the transition table', () => {
  it('schedules a draft at its scheduledAt', async () => {
    const { id } = await postIn('draft', FUTURE);
    server.setNow('2026-11-22T00:00:00.000Z');
    const body = dataOf(await changeStatus(id, 'scheduled'));
    expect(body).toMatchObject({ status: 'scheduled', scheduledAt: FUTURE, updatedAt: '2026-11-22T00:00:00.000Z' });
  });

  it('schedules a draft whose time is less than a minute past', async () => {
    const { id } = await postIn('draft', '2026-11-21T11:59:00.000Z');
    expect(dataOf(await changeStatus(id, 'scheduled')).status).toBe('scheduled');
  });

  it('refuses to schedule a draft without a time or with one more than a minute past (422)', async () => {
    for (const scheduledAt of [null, '2026-11-21T11:58:59.999Z']) {
      const { id } = await postIn('draft', scheduledAt);
      const body = refusalOf(await changeStatus(id, 'scheduled'), 422, 'unprocessable');
      expect(body.details).toEqual([{ path: 'status', message: stringContaining('at most 1 minute in the past') }]);
      expect(body.message).toContain('/schedule');
      expect(dataOf(await get(id)).status).toBe('draft');
    }
  });

  it('makes a scheduled post a draft again, keeping its time', async () => {
    const { id } = await postIn('scheduled', FUTURE);
    expect(dataOf(await changeStatus(id, 'draft'))).toMatchObject({
      status: 'draft',
      scheduledAt: FUTURE,
    });
  });

  it('retries a failed post now when its time has passed, and clears the error', async () => {
    const { id } = await postIn('failed', PAST, { error: 'The sandbox provider failed this post.' });
    expect(dataOf(await changeStatus(id, 'scheduled'))).toMatchObject({
      status: 'scheduled',
      scheduledAt: NOW,
      error: null,
    });
  });

  it('retries a failed post at its time when that is still ahead', async () => {
    const { id } = await postIn('failed', FUTURE, { error: 'boom' });
    expect(dataOf(await changeStatus(id, 'scheduled'))).toMatchObject({
      status: 'scheduled',
      scheduledAt: FUTURE,
      error: null,
    });
  });

  it('parks a failed post as a draft, clearing the error', async () => {
    const { id } = await postIn('failed', PAST, { error: 'boom' });
    expect(dataOf(await changeStatus(id, 'draft'))).toMatchObject({
      status: 'draft',
      scheduledAt: PAST,
      error: null,
    });
  });

  it('changes nothing when the status is the same', async () => {
    for (const [status, scheduledAt] of [
      ['draft', null],
      ['scheduled', PAST],
    ] as const) {
      const { id } = await postIn(status, scheduledAt);
      const before = dataOf(await get(id));
      server.setNow('2026-11-22T00:00:00.000Z');
      expect(dataOf(await changeStatus(id, status))).toEqual(before);
      server.setNow(NOW);
    }
  });

  it('refuses any change to a publishing or published post (409)', async () => {
    for (const status of ['publishing', 'published'] as const) {
      const { id } = await postIn(status, PAST);
      for (const to of ['draft', 'scheduled'] as const) {
        const body = refusalOf(await changeStatus(id, to), 409, 'conflict');
        expect(body.message).toContain(`The post is ${status}`);
      }
      expect(dataOf(await get(id)).status).toBe(status);
    }
  });

  it('accepts only draft and scheduled as targets (400)', async () => {
    const { id } = await postIn('draft', FUTURE);
    // Statuses the contract does not take here, sent as a client could.
    for (const to of ['published', 'failed', 'publishing', 'deleted']) {
      const response = await send(server, acme.auth, 'PATCH', `/public/v1/posts/${id}/status`, { status: to });
      expect(response.status).toBe(400);
      const error = await errorOf(response);
      expect(error.code).toBe('validation_failed');
      expect(error.details?.[0]?.path).toBe('status');
    }
  });

  it('refuses to schedule a draft whose media was deleted meanwhile (422 naming the media)', async () => {
    const image = await insertMedia(server.ctx.db, acme.id, 'image');
    const created = dataOf(
      await api(acme).POST('/public/v1/posts', {
        body: { type: 'draft', date: FUTURE, content: 'with a picture', channelIds: [sandbox], mediaIds: [image] },
      }),
      201,
    );
    const id = created.data[0]!.id;
    // Only scheduled and publishing posts hold their media back, so a draft's media can go.
    dataOf(await api(acme).DELETE('/public/v1/media/{id}', { params: { path: { id: image } } }), 204);
    const refused = refusalOf(await changeStatus(id, 'scheduled'), 422, 'unprocessable');
    expect(refused.details).toEqual([{ path: 'mediaIds[0]', message: stringContaining(image) }]);
    expect(dataOf(await get(id)).status).toBe('draft');
  });

  it('checks the channel’s daily quota when scheduling', async () => {
    const { id, channelId } = await postIn('draft', FUTURE);
    for (let i = 0; i < 2; i++) {
      await insertPost(server.ctx.db, {
        organizationId: acme.id,
        channelId,
        status: 'scheduled',
        scheduledAt: '2026-12-01T20:00:00.000Z',
      });
    }
    const body = refusalOf(await changeStatus(id, 'scheduled'), 422, 'unprocessable');
    expect(body.details).toEqual([{ path: 'status', message: 'daily quota of 2 posts used up for 2026-12-01' }]);
  });
});

describe('POST /public/v1/posts/{id}/schedule', () => {
  it('sets a new time and makes drafts, scheduled and failed posts scheduled', async () => {
    for (const status of ['draft', 'scheduled', 'failed'] as const) {
      const { id } = await postIn(status, PAST, { error: status === 'failed' ? 'boom' : undefined });
      const body = dataOf(await schedule(id, '2026-12-02T10:00:00+01:00'));
      expect(body).toMatchObject({
        status: 'scheduled',
        scheduledAt: '2026-12-02T09:00:00.000Z',
        error: null,
        updatedAt: NOW,
      });
    }
  });

  it('refuses a time more than a minute in the past (422)', async () => {
    const { id } = await postIn('draft', null);
    const body = refusalOf(await schedule(id, '2026-11-21T11:58:00.000Z'), 422, 'unprocessable');
    expect(body.details).toEqual([
      { path: 'scheduledAt', message: stringContaining('more than 1 minute in the past') },
    ]);
  });

  it('refuses publishing and published posts (409)', async () => {
    for (const status of ['publishing', 'published'] as const) {
      const { id } = await postIn(status, PAST);
      refusalOf(await schedule(id, FUTURE), 409, 'conflict');
    }
  });

  it('lets a post move within a full day, but not into one', async () => {
    const { id, channelId } = await postIn('scheduled', '2026-12-03T08:00:00.000Z');
    await insertPost(server.ctx.db, {
      organizationId: acme.id,
      channelId,
      status: 'scheduled',
      scheduledAt: '2026-12-03T09:00:00.000Z',
    });
    expect(dataOf(await schedule(id, '2026-12-03T18:00:00.000Z')).scheduledAt).toBe('2026-12-03T18:00:00.000Z');

    const draft = await insertPost(server.ctx.db, {
      organizationId: acme.id,
      channelId,
      status: 'draft',
      scheduledAt: null,
    });
    const body = refusalOf(await schedule(draft, '2026-12-03T12:00:00.000Z'), 422, 'unprocessable');
    expect(body.details).toEqual([{ path: 'scheduledAt', message: 'daily quota of 2 posts used up for 2026-12-03' }]);
    expect(dataOf(await schedule(draft, '2026-12-04T12:00:00.000Z')).status).toBe('scheduled');
  });
});

describe('PATCH /public/v1/posts/{id}', () => {
  async function createTikTokPost() {
    const created = await api(acme).POST('/public/v1/posts', {
      body: {
        type: 'schedule',
        date: FUTURE,
        posts: [
          {
            channelId: tiktokChannel,
            content: 'Winter',
            mediaIds: [video],
            settings: { __type: 'tiktok', postMode: 'direct', privacyLevel: 'SELF_ONLY' },
          },
        ],
      },
    });
    return dataOf(created, 201).data[0]!;
  }

  it('changes only the fields sent, replacing settings as a whole with their defaults', async () => {
    const post = await createTikTokPost();
    server.setNow('2026-11-22T08:00:00.000Z');
    const captioned = dataOf(await edit(post.id, { content: 'Winter is here' }));
    expect(captioned).toEqual({ ...post, content: 'Winter is here', updatedAt: '2026-11-22T08:00:00.000Z' });

    const settings = {
      __type: 'tiktok',
      postMode: 'inbox',
      privacyLevel: 'PUBLIC_TO_EVERYONE',
      isAiGenerated: true,
    } satisfies Schemas['TikTokSettings'];
    const resettled = dataOf(await edit(post.id, { settings }));
    expect(resettled.settings).toEqual({
      ...settings,
      disableComment: false,
      disableDuet: false,
      disableStitch: false,
      brandContentToggle: false,
      brandOrganicToggle: false,
    });
    expect(resettled).toMatchObject({ status: 'scheduled', scheduledAt: FUTURE, content: 'Winter is here' });
  });

  it('checks the result like a create, with details', async () => {
    const post = await createTikTokPost();
    const image = await insertMedia(server.ctx.db, acme.id, 'image');
    const body = refusalOf(
      await edit(post.id, {
        content: 'x'.repeat(2201),
        mediaIds: [image, 'med_unknown'],
        settings: { __type: 'sandbox' },
      }),
      422,
      'unprocessable',
    );
    expect(body.details).toEqual([
      { path: 'mediaIds[1]', message: 'There is no media med_unknown in this organization.' },
      {
        path: 'settings.__type',
        message: `Channel ${tiktokChannel} is a TikTok channel; its settings need __type "tiktok", not "sandbox".`,
      },
    ]);
    const caption = refusalOf(await edit(post.id, { content: 'x'.repeat(2201) }), 422, 'unprocessable');
    expect(caption.details).toEqual([
      {
        path: 'content',
        message: `TikTok allows a caption of 2200 characters (channel ${tiktokChannel}); this one has 2201.`,
      },
    ]);
    tiktok.set(tiktokChannel, { privacyLevelOptions: ['PUBLIC_TO_EVERYONE'] });
    try {
      const privacy = refusalOf(await edit(post.id, { content: 'ok' }), 422, 'unprocessable');
      expect(privacy.details).toEqual([{ path: 'settings.privacyLevel', message: stringContaining('not SELF_ONLY') }]);
    } finally {
      tiktok.set(tiktokChannel, {});
    }
    expect(dataOf(await get(post.id))).toEqual(post);
  });

  it('refuses (409) an edit when another edit changed the post after this one was checked', async () => {
    // YouTube takes the content as the description when settings have none, so content and settings
    // are judged together: each edit below is valid alone, the two together are not.
    const youtube = (await createChannel(server.ctx.db, acme.id, 'youtube')).id;
    const withDescription = {
      __type: 'youtube',
      title: 'Winter',
      description: 'Short',
      privacyStatus: 'unlisted',
      madeForKids: false,
    } satisfies Schemas['YouTubeSettings'];
    const created = await api(acme).POST('/public/v1/posts', {
      body: {
        type: 'schedule',
        date: FUTURE,
        posts: [{ channelId: youtube, content: 'Winter', mediaIds: [video], settings: withDescription }],
      },
    });
    const post = dataOf(created, 201).data[0]!;
    const longContent = 'x'.repeat(6000);
    // The other edit lands between this edit's checks and its transaction.
    const db = new Proxy(server.ctx.db, {
      get(target, name) {
        if (name !== 'transaction') {
          const value: unknown = Reflect.get(target, name, target);
          return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
        }
        return () => ({
          execute: async (work: (trx: AppContext['db']) => Promise<unknown>) => {
            dataOf(await edit(post.id, { content: longContent }));
            return target.transaction().execute(work);
          },
        });
      },
    });
    const { description: _dropped, ...withoutDescription } = withDescription;
    const edited = editPost({ ...server.ctx, db }, { organizationId: acme.id, role: 'owner' }, post.id, {
      settings: withoutDescription,
    });
    await expect(edited).rejects.toMatchObject({ status: 409, code: 'conflict' });
    const stored = dataOf(await get(post.id));
    expect(stored.settings).toMatchObject({ description: 'Short' });
    expect(stored.content).toBe(longContent);
  });

  it('edits draft, scheduled and failed posts, and refuses publishing and published ones (409)', async () => {
    for (const status of ['draft', 'scheduled', 'failed'] as const) {
      const { id } = await postIn(status, FUTURE);
      expect(dataOf(await edit(id, { content: `edited ${status}` })).content).toBe(`edited ${status}`);
    }
    for (const status of ['publishing', 'published'] as const) {
      const { id } = await postIn(status, PAST);
      refusalOf(await edit(id, { content: 'too late' }), 409, 'conflict');
      expect(dataOf(await get(id)).content).toBe('inserted by the test');
    }
  });

  it('needs at least one field (400)', async () => {
    const { id } = await postIn('draft', null);
    refusalOf(await edit(id, {}), 400, 'validation_failed');
  });
});

describe('DELETE /public/v1/posts/{id}', () => {
  it('deletes a post (204), after which it is unknown (404)', async () => {
    for (const status of ['draft', 'scheduled', 'failed', 'published'] as const) {
      const { id } = await postIn(status, PAST);
      dataOf(await remove(id), 204);
      refusalOf(await get(id), 404, 'not_found');
      refusalOf(await remove(id), 404, 'not_found');
    }
  });

  it('refuses a publishing post (409)', async () => {
    const { id } = await postIn('publishing', PAST);
    refusalOf(await remove(id), 409, 'conflict');
    expect(dataOf(await get(id)).status).toBe('publishing');
  });
});

describe('isolation between organizations', () => {
  it('answers 404 for another organization’s post on every operation, and changes nothing', async () => {
    const { id } = await postIn('draft', FUTURE);
    const before = dataOf(await get(id));
    const message = `There is no post ${id} in this organization.`;
    for (const response of [
      await get(id, globex),
      await edit(id, { content: 'hijacked' }, globex),
      await schedule(id, FUTURE, globex),
      await changeStatus(id, 'scheduled', globex),
      await remove(id, globex),
    ]) {
      const body = refusalOf(response, 404, 'not_found');
      expect(body.message).toBe(message);
    }
    expect(dataOf(await get(id))).toEqual(before);
  });
});
