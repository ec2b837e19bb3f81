import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addReturnOrigin } from '../src/channels/return-origins.js';
import Service from '../src/sdk/src/index.js';
import { publicApi, type Schemas } from './support/api.js';
import { BrowserSession, inputValue } from './support/browser-session.js';
import { pinterestEnv, startFakePinterest, type FakePinterest } from './support/fake-pinterest.js';
import { eventually } from './support/eventually.js';
import { createChannel, createOrganization, type TestOrganization } from './support/fixtures.js';
import { jpeg, mp4WithDuration, png, webp } from './support/media-samples.js';
import { startTestServer, type TestServer } from './support/server.js';
import { scaled, TIMEOUTS } from './support/timeouts.js';
import { dataOf } from './support/typed-answers.js';
import { startUpload } from './support/uploads.js';

// Pinterest end to end against the fake Pinterest: an account connected through
// POST /public/v1/channels/connect and in Settings → Channels, its boards and their sections listed through
// the Public API and the SDK, page by page; then, through the Public API, an image pin Pinterest downloads
// from this server with its title, link, alt text and section, a video pin whose processing takes polls
// asked as queued jobs, a carousel, what the rules refuse at create, an expired access token refreshed, a
// pin whose answer was lost found on the board and published once, and an account whose user removed the
// app (needs_reconnect).
const RETURN_URL = 'https://app.example.org/pinterest/done';
let pinterest: FakePinterest;
let server: TestServer;
let org: TestOrganization;
let channelId: string;

const api = () => publicApi(server, org.auth);
const byId = (id: string) => ({ params: { path: { id } } });

/** Pinterest's consent page, which consents at once: where it sends the browser back. */
async function followConsent(url: string): Promise<{ status: number; location: string }> {
  const answer = await new Promise<{ status: number; location: string }>((resolve, reject) => {
    http
      .get(url, { agent: false }, (response) => {
        response.resume();
        resolve({ status: response.statusCode!, location: response.headers.location! });
      })
      .on('error', reject);
  });
  expect(answer.status).toBe(302);
  return answer;
}

/** The user's browser: to Pinterest's consent page, back to this server's callback, and on to the return URL. */
async function connectAccount(): Promise<URL> {
  const { authorizationUrl } = dataOf(
    await api().POST('/public/v1/channels/connect', { body: { provider: 'pinterest', returnUrl: RETURN_URL } }),
  );
  const atPinterest = await followConsent(authorizationUrl);
  const callback = new URL(atPinterest.location);
  const back = await server.fetch(callback.pathname + callback.search, { redirect: 'manual' });
  expect(back.status).toBe(303);
  return new URL(back.headers.get('location')!);
}

async function upload(name: string, bytes: Buffer, contentType: string): Promise<string> {
  const started = await startUpload(server, org, name, contentType, bytes.length);
  expect((await fetch(started.uploadUrl, { method: 'PUT', headers: started.headers, body: bytes })).status).toBe(200);
  const completed = await api().POST('/public/v1/media/uploads/{uploadId}/complete', {
    params: { path: { uploadId: started.uploadId } },
  });
  return dataOf(completed).id;
}

type PostItem = Omit<Schemas['CreatePostPerChannel']['posts'][number], 'channelId'>;

async function publishNow(item: PostItem): Promise<string> {
  const created = await api().POST('/public/v1/posts', { body: { type: 'now', posts: [{ channelId, ...item }] } });
  return dataOf(created, 201).data[0]!.id;
}

/**
 * The post once it is published or failed. A video still processed is asked about again as a queued job
 * a few seconds on: the server's clock is moved past that each time instead of waiting.
 */
function settled(id: string, stepSeconds = 60): Promise<Schemas['Post']> {
  return eventually(
    async () => {
      // Pinterest's clock moves with the server's: a pin's creation time is compared with the server's.
      await server.clock.advance(stepSeconds * 1000);
      pinterest.advanceClock(stepSeconds);
      const post = dataOf(await api().GET('/public/v1/posts/{id}', byId(id)));
      expect(['published', 'failed'], `post ${id} is ${post.status}`).toContain(post.status);
      return post;
    },
    { timeout: scaled(30_000), interval: 200 },
  );
}

const board = (name: string) => pinterest.boards.find((candidate) => candidate.name === name)!;

beforeAll(async () => {
  pinterest = await startFakePinterest({ account: { username: 'acmestudio', businessName: 'Acme Studio' } });
  pinterest.addBoard({ name: 'Summer recipes', description: 'Salads and soups', sections: ['Salads', 'Soups'] });
  pinterest.addBoard({ name: 'Winter collection', privacy: 'SECRET' });
  pinterest.addBoard({ name: 'Behind the scenes' });
  server = await startTestServer({
    worker: true,
    env: { ...pinterestEnv(pinterest), PUBLISH_RETRY_BASE_MS: '200', RATE_LIMIT_MAX: '100000' },
  });
  org = await createOrganization(server.ctx.db, 'Acme');
  await addReturnOrigin(server.ctx.db, org.id, new URL(RETURN_URL).origin);
}, TIMEOUTS.hook);
afterAll(async () => {
  await server?.close();
  await pinterest?.close();
});

describe('a Pinterest account connected through the API', () => {
  it('lands on the return URL with its channel, named as Pinterest names the account', async () => {
    const landed = await connectAccount();
    expect(landed.origin + landed.pathname).toBe(RETURN_URL);
    channelId = landed.searchParams.get('channelId')!;
    const channel = dataOf(await api().GET('/public/v1/channels')).data.find((c) => c.id === channelId);
    expect(channel).toMatchObject({
      provider: 'pinterest',
      name: 'Acme Studio',
      username: 'acmestudio',
      picture: pinterest.account.profileImage,
      status: 'active',
    });
    expect(pinterest.grantedScopes()).toEqual([
      'boards:read',
      'boards:write',
      'pins:read',
      'pins:write',
      'user_accounts:read',
    ]);
  });
});

describe('a Pinterest account connected in Settings → Channels', () => {
  it('shows Connect Pinterest, sends the user to Pinterest’s consent page, and lists the channel', async () => {
    const other = await createOrganization(server.ctx.db, 'Acme Web');
    const session = new BrowserSession(server);
    await session.logIn(other.email, other.password);
    const page = await session.get('/settings/channels');
    const html = await page.text();
    expect(html).toContain('action="/settings/channels/connect/pinterest"');
    expect(html).toContain('Connect Pinterest</button>');
    expect(page.headers.get('content-security-policy')).toContain(pinterest.url);
    const started = await session.submit('/settings/channels', '/settings/channels/connect/pinterest', {});
    const consent = await followConsent(started.headers.get('location')!);
    const back = new URL(consent.location);
    const finished = await session.get(back.pathname + back.search);
    expect(finished.headers.get('location')).toBe('/settings/channels?done=connected');
    expect(await (await session.get('/settings/channels')).text()).toContain('Acme Studio');
  });
});

describe('the boards of a Pinterest account', () => {
  it('are listed with their sections, page by page, through the API and the SDK', async () => {
    const first = dataOf(
      await api().GET('/public/v1/channels/{id}/pinterest/boards', {
        params: { path: { id: channelId }, query: { limit: 2 } },
      }),
    );
    const [summer, winter] = pinterest.boards;
    expect(first.data).toEqual([
      {
        id: summer!.id,
        name: 'Summer recipes',
        description: 'Salads and soups',
        privacy: 'PUBLIC',
        sections: summer!.sections,
      },
      { id: winter!.id, name: 'Winter collection', description: null, privacy: 'SECRET', sections: [] },
    ]);
    expect(first.nextCursor).toEqual(expect.any(String));
    const rest = dataOf(
      await api().GET('/public/v1/channels/{id}/pinterest/boards', {
        params: { path: { id: channelId }, query: { limit: 2, cursor: first.nextCursor! } },
      }),
    );
    expect([rest.data.map((board) => board.name), rest.nextCursor]).toEqual([['Behind the scenes'], null]);

    const sdk = new Service(org.apiKey, server.baseUrl, { maxRetries: 0 });
    const names: string[] = [];
    for await (const board of sdk.iteratePinterestBoards(channelId, { limit: 1 })) names.push(board.name);
    expect(names).toEqual(['Summer recipes', 'Winter collection', 'Behind the scenes']);
  });

  it('answer 502 when the access token cannot be refreshed for a moment, the channel still active', async () => {
    pinterest.expireAccessTokens();
    pinterest.failNext('token', 503);
    const answer = await api().GET('/public/v1/channels/{id}/pinterest/boards', {
      params: { path: { id: channelId }, query: { limit: 1 } },
    });
    expect(answer.response.status).toBe(502);
    expect(answer.error).toMatchObject({ error: { code: 'provider_error' } });
    // Refreshed on the next use.
    expect(
      dataOf(await api().GET('/public/v1/channels/{id}/pinterest/boards', { params: { path: { id: channelId } } }))
        .data,
    ).not.toHaveLength(0);
  });

  it('answer 404 for a channel of another organization and 422 for a channel of another network', async () => {
    const other = await createOrganization(server.ctx.db, 'Elsewhere');
    const foreign = await publicApi(server, other.auth).GET(
      '/public/v1/channels/{id}/pinterest/boards',
      byId(channelId),
    );
    expect(foreign.response.status).toBe(404);
    expect((foreign.error as Schemas['Error']).error.code).toBe('not_found');
    const sandbox = await createChannel(server.ctx.db, org.id, 'sandbox', 'Sandbox');
    const wrong = await api().GET('/public/v1/channels/{id}/pinterest/boards', byId(sandbox.id));
    expect(wrong.response.status).toBe(422);
  });
});

describe('publishing pins', () => {
  it('publishes an image pin, which Pinterest downloads, with its section, title, link and alt text', async () => {
    const image = await upload('salad.png', png(6, 9), 'image/png');
    const summer = board('Summer recipes');
    const id = await publishNow({
      content: 'A salad for hot days',
      mediaIds: [image],
      altTexts: { [image]: 'A green salad in a bowl' },
      settings: {
        __type: 'pinterest',
        boardId: summer.id,
        boardSectionId: summer.sections[0]!.id,
        title: 'Green salad',
        link: 'https://acme.example/recipes/green-salad',
      },
    });
    const post = await settled(id);
    const pin = pinterest.pins.at(-1)!;
    expect(post).toMatchObject({
      status: 'published',
      releaseId: pin.id,
      releaseUrl: `https://www.pinterest.com/pin/${pin.id}/`,
    });
    expect(pin).toMatchObject({
      boardId: summer.id,
      boardSectionId: summer.sections[0]!.id,
      title: 'Green salad',
      description: 'A salad for hot days',
      link: 'https://acme.example/recipes/green-salad',
      altText: 'A green salad in a bowl',
      mediaType: 'image',
    });
    expect(pin.images.map((one) => [one.via, one.bytes.equals(png(6, 9))])).toEqual([['url', true]]);
  });

  it('publishes a video pin: registered, uploaded as Pinterest’s form, processed over polls, with its cover frame', async () => {
    pinterest.processingChecks(3);
    const video = await upload('soup.mp4', mp4WithDuration(6), 'video/mp4');
    const id = await publishNow({
      content: 'Cold soup, step by step',
      mediaIds: [video],
      settings: { __type: 'pinterest', boardId: board('Summer recipes').id, coverImageKeyFrameTime: 2 },
    });
    const post = await settled(id);
    const pin = pinterest.pins.at(-1)!;
    expect(post).toMatchObject({ status: 'published', releaseId: pin.id });
    const registered = pinterest.media.find((one) => one.id === pin.video!.mediaId)!;
    expect(pin).toMatchObject({ mediaType: 'video', video: { cover: { keyFrameTime: 2 } } });
    expect(registered.bytes!.equals(mp4WithDuration(6))).toBe(true);
    // Processing answered three times before it succeeded, each status read a job of its own.
    const reads = pinterest.requests.filter((request) => request.path === `/v5/media/${registered.id}`);
    expect(reads).toHaveLength(4);
  });

  it('fails a video pin with Pinterest’s status when its processing fails', async () => {
    pinterest.processingChecks(0);
    pinterest.failNextProcessing();
    const video = await upload('broken.mp4', mp4WithDuration(5), 'video/mp4');
    const before = pinterest.pins.length;
    const id = await publishNow({
      content: 'Not to be',
      mediaIds: [video],
      settings: { __type: 'pinterest', boardId: board('Summer recipes').id },
    });
    const failed = await settled(id);
    expect([failed.status, failed.error?.code]).toEqual(['failed', 'rejected_by_network']);
    expect(failed.error?.message).toContain('could not process the video');
    expect(pinterest.pins).toHaveLength(before);
  });

  it('publishes a carousel of three images in their order', async () => {
    const images = [
      await upload('one.png', png(3, 3), 'image/png'),
      await upload('two.jpg', jpeg(), 'image/jpeg'),
      await upload('three.webp', webp(), 'image/webp'),
    ];
    const id = await publishNow({
      content: 'Three looks',
      mediaIds: images,
      settings: { __type: 'pinterest', boardId: board('Winter collection').id },
    });
    expect((await settled(id)).status).toBe('published');
    const pin = pinterest.pins.at(-1)!;
    expect(pin.mediaType).toBe('multiple_images');
    expect(pin.images.map((one) => one.contentType)).toEqual(['image/png', 'image/jpeg', 'image/webp']);
  });

  it('refuses at create what Pinterest would not publish, each problem naming its field', async () => {
    const images = await Promise.all(
      Array.from({ length: 6 }, (_, index) => upload(`many-${index}.png`, png(2, 2), 'image/png')),
    );
    const video = await upload('short.mp4', mp4WithDuration(2), 'video/mp4');
    const refused = await api().POST('/public/v1/posts', {
      body: {
        type: 'now',
        posts: [
          {
            channelId,
            content: 'x'.repeat(501),
            mediaIds: images,
            altTexts: { [images[0]!]: 'One of six' },
            settings: { __type: 'pinterest', boardId: board('Summer recipes').id },
            firstComment: { content: 'Pinterest has no comments' },
          },
          { channelId, content: 'Too short', mediaIds: [video], settings: { __type: 'pinterest', boardId: '1' } },
        ],
      },
    });
    expect(refused.response.status).toBe(422);
    const paths = ((refused.error as Schemas['Error']).error.details ?? []).map((detail) => detail.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'posts[0].content',
        'posts[0].mediaIds',
        'posts[0].altTexts',
        'posts[0].firstComment',
        'posts[1].mediaIds[0]',
      ]),
    );
    // The board is required by the contract itself.
    const boardless = await api().POST('/public/v1/posts', {
      body: {
        type: 'now',
        posts: [{ channelId, content: 'No board', mediaIds: [images[0]!], settings: { __type: 'pinterest' } as never }],
      },
    });
    expect(boardless.response.status).toBe(400);
  });
});

describe('the composer', () => {
  it('offers the account’s boards and sections, and makes a draft pin with its board, section, title and link', async () => {
    const session = new BrowserSession(server);
    await session.logIn(org.email, org.password);
    const html = await (await session.get('/compose')).text();
    const summer = board('Summer recipes');
    const field = (name: string) => `settings.${channelId}.${name}`;
    expect(html).toContain(`name="${field('board')}"`);
    expect(html).toContain(`<option value="${summer.id}">Summer recipes</option>`);
    expect(html).toContain(`<option value="${summer.id}/${summer.sections[1]!.id}">Summer recipes › Soups</option>`);
    expect(html).toContain(`name="${field('title')}"`);
    const image = await upload('composer.jpg', jpeg(), 'image/jpeg');
    const form = new URLSearchParams({
      csrf_token: inputValue(html, 'csrf_token')!,
      idempotency_key: inputValue(html, 'idempotency_key')!,
      channel: channelId,
      content: 'Soup season',
      media: image,
      date: '2030-03-20',
      time: '09:30',
      action: 'draft',
      [field('board')]: `${summer.id}/${summer.sections[1]!.id}`,
      [field('title')]: 'Cold soups',
      [field('link')]: 'https://acme.example/soups',
    });
    const sent = await session.request('/compose', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
    });
    expect(sent.status, await sent.clone().text()).toBe(303);
    const id = /^\/posts\/([^?]+)\?created=1$/.exec(sent.headers.get('location')!)![1]!;
    const post = dataOf(await api().GET('/public/v1/posts/{id}', byId(id)));
    expect(post.settings).toEqual({
      __type: 'pinterest',
      boardId: summer.id,
      boardSectionId: summer.sections[1]!.id,
      title: 'Cold soups',
      link: 'https://acme.example/soups',
    });
    // The edit form shows the choice made.
    const edit = await (await session.get(`/posts/${id}/edit`)).text();
    expect(edit).toContain(`<option value="${summer.id}/${summer.sections[1]!.id}" selected>`);
  });
});

describe('when Pinterest does not answer as hoped', () => {
  it('refreshes an expired access token, storing the rotated refresh token, and publishes', async () => {
    pinterest.expireAccessTokens();
    const granted = pinterest.refreshes.granted;
    const image = await upload('after-expiry.jpg', jpeg(), 'image/jpeg');
    const id = await publishNow({
      content: 'After the token expired',
      mediaIds: [image],
      settings: { __type: 'pinterest', boardId: board('Behind the scenes').id },
    });
    expect((await settled(id)).status).toBe('published');
    expect(pinterest.refreshes.granted).toBe(granted + 1);
    expect(pinterest.refreshes.refused).toBe(0);
  });

  it('finds a pin whose answer was lost among the board’s pins, and publishes it once', async () => {
    pinterest.loseNextAnswer('createPin');
    const image = await upload('lost.jpg', jpeg(), 'image/jpeg');
    const before = pinterest.pins.length;
    const id = await publishNow({
      content: 'Lost on the way back',
      mediaIds: [image],
      settings: { __type: 'pinterest', boardId: board('Behind the scenes').id, title: 'Lost' },
    });
    const post = await settled(id);
    expect(pinterest.pins).toHaveLength(before + 1);
    expect(post).toMatchObject({ status: 'published', releaseId: pinterest.pins.at(-1)!.id });
    const events = dataOf(await api().GET('/public/v1/posts/{id}/history', byId(id))).data;
    expect(events.map((event) => event.type)).toEqual(['created', 'scheduled', 'publishing', 'retrying', 'published']);
    expect(pinterest.requests.some((request) => request.operation === 'listBoardPins')).toBe(true);
  });

  it('sends a pin again after an absent look-up as a step of its own: a second lost answer makes no third pin', async () => {
    // A new pin shows among the board's pins only 110 seconds after it was made, within the minute the
    // adapter gives the board after the call's own; the clocks move by 20 seconds at a time.
    pinterest.pinsShowAfter(110);
    try {
      // The first sending is answered by a 5xx that made nothing, the second's answer is lost.
      pinterest.failNext('createPin', 502);
      pinterest.loseNextAnswer('createPin');
      const image = await upload('twice.jpg', jpeg(), 'image/jpeg');
      const before = pinterest.pins.length;
      const id = await publishNow({
        content: 'Lost twice on the way back',
        mediaIds: [image],
        settings: { __type: 'pinterest', boardId: board('Behind the scenes').id, title: 'Twice' },
      });
      const post = await settled(id, 20);
      expect(pinterest.pins).toHaveLength(before + 1);
      expect(post).toMatchObject({ status: 'published', releaseId: pinterest.pins.at(-1)!.id });
    } finally {
      pinterest.pinsShowAfter(0);
    }
  });

  it('does not take the pin of another post with the same content for one whose answer may hide a pin', async () => {
    const settings = { __type: 'pinterest' as const, boardId: board('Behind the scenes').id, title: 'Same' };
    const before = pinterest.pins.length;
    const first = await settled(
      await publishNow({ content: 'Said twice', mediaIds: [await upload('a.jpg', jpeg(), 'image/jpeg')], settings }),
      // Moments before the second, on the clocks: its pin is among those the second's look-up reads.
      5,
    );
    expect(first.status).toBe('published');
    // The second post's pin is answered by a 5xx that made nothing: the board shows only the first's.
    pinterest.failNext('createPin', 502);
    const second = await settled(
      await publishNow({ content: 'Said twice', mediaIds: [await upload('b.jpg', jpeg(), 'image/jpeg')], settings }),
      20,
    );
    expect(pinterest.pins).toHaveLength(before + 2);
    expect(second).toMatchObject({ status: 'published', releaseId: pinterest.pins.at(-1)!.id });
    expect(second.releaseId).not.toBe(first.releaseId);
  });

  it('fails a pin with the setting to change when the operator’s app has Trial access, the channel still active', async () => {
    pinterest.trialAccess(true);
    const image = await upload('trial.jpg', jpeg(), 'image/jpeg');
    const id = await publishNow({
      content: 'With Trial access',
      mediaIds: [image],
      settings: { __type: 'pinterest', boardId: board('Behind the scenes').id },
    });
    const failed = await settled(id);
    pinterest.trialAccess(false);
    expect([failed.status, failed.error?.code]).toEqual(['failed', 'rejected_by_network']);
    expect(failed.error?.message).toContain('PINTEREST_API_URL');
    const channel = dataOf(await api().GET('/public/v1/channels')).data.find((c) => c.id === channelId);
    expect(channel!.status).toBe('active');
  });

  it('marks the channel needs_reconnect when the user removed the app at Pinterest', async () => {
    pinterest.revokeAll();
    const image = await upload('revoked.jpg', jpeg(), 'image/jpeg');
    const id = await publishNow({
      content: 'After the app was removed',
      mediaIds: [image],
      settings: { __type: 'pinterest', boardId: board('Behind the scenes').id },
    });
    expect(await settled(id)).toMatchObject({ status: 'failed', error: { code: 'channel_needs_reconnect' } });
    const channel = dataOf(await api().GET('/public/v1/channels')).data.find((c) => c.id === channelId);
    expect(channel!.status).toBe('needs_reconnect');
  });
});
