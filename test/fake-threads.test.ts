import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodyOf } from './support/api.js';
import { eventually } from './support/eventually.js';
import { startFakeThreads, type FakeThreads } from './support/fake-threads.js';
import { jpeg, mp4 } from './support/media-samples.js';
import { startRemoteServer, type RemoteServer } from './support/remote-server.js';
import { threadsTextLength } from './support/threads-text.js';

// The fake Threads the Threads tests rely on, held to what developers.facebook.com documents for the
// Threads API (authorization window, tokens, containers and their status, publishing, quotas, errors), so
// that what passes against it would pass against Threads.
const REDIRECT_URI = 'http://127.0.0.1:9/channels/callback/threads';
const PUBLISHING = 'threads_basic,threads_content_publish,threads_manage_replies,threads_read_replies';
let threads: FakeThreads;
let media: RemoteServer;

/** The Graph API's error envelope. */
interface GraphFailure {
  error: { message: string; type: string; code: number; error_subcode?: number; fbtrace_id: string };
}
interface Container {
  id: string;
  status?: string;
  error_message?: string;
}

beforeAll(async () => {
  threads = await startFakeThreads({ redirectUris: [REDIRECT_URI] });
  media = await startRemoteServer((req, res) => {
    if (req.url === '/photo.jpg') res.writeHead(200, { 'Content-Type': 'image/jpeg' }).end(jpeg());
    else if (req.url === '/large.jpg')
      res.writeHead(200, { 'Content-Type': 'image/jpeg' }).end(jpeg(8 * 1024 * 1024 + 1));
    else if (req.url === '/clip.mp4') res.writeHead(200, { 'Content-Type': 'video/mp4' }).end(mp4());
    else res.writeHead(403, { 'Content-Type': 'text/plain' }).end('signature expired');
  });
});
afterAll(async () => {
  await threads?.close();
  await media?.close();
});

async function consent(params: Record<string, string> = {}): Promise<URL> {
  const query = new URLSearchParams({
    client_id: threads.appId,
    redirect_uri: REDIRECT_URI,
    scope: PUBLISHING,
    response_type: 'code',
    state: 'st-1',
    ...params,
  });
  const response = await fetch(`${threads.authorizeUrl}?${query.toString()}`, { redirect: 'manual' });
  expect(response.status).toBe(302);
  return new URL(response.headers.get('location')!);
}

async function exchangeCode(code: string) {
  const response = await fetch(`${threads.url}/oauth/access_token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      client_id: threads.appId,
      client_secret: threads.appSecret,
      grant_type: 'authorization_code',
      redirect_uri: REDIRECT_URI,
      code,
    }),
  });
  return { status: response.status, text: await response.text() };
}

/** A short-lived token for the permissions given, through the window and the code. */
async function shortLived(scope = PUBLISHING): Promise<string> {
  const code = (await consent({ scope })).searchParams.get('code')!;
  return (JSON.parse((await exchangeCode(code)).text) as { access_token: string }).access_token;
}

/** A Graph call: parameters in the query for GET, in a form body for POST, the token with them. */
async function graph<T>(method: 'GET' | 'POST', path: string, token: string, params: Record<string, string> = {}) {
  const query = new URLSearchParams({ ...params, access_token: token });
  const response =
    method === 'GET'
      ? await fetch(`${threads.url}${path}?${query.toString()}`)
      : await fetch(`${threads.url}${path}`, {
          method,
          headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
          body: query,
        });
  return {
    status: response.status,
    headers: response.headers,
    body: await bodyOf<T & Partial<GraphFailure>>(response),
  };
}

const me = () => `/v1.0/${threads.account.id}`;

async function container(token: string, params: Record<string, string>): Promise<string> {
  const created = await graph<Container>('POST', `${me()}/threads`, token, params);
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  return created.body.id;
}

async function publish(token: string, creationId: string) {
  return graph<{ id: string }>('POST', `${me()}/threads_publish`, token, { creation_id: creationId });
}

async function status(token: string, id: string) {
  return (await graph<Container>('GET', `/v1.0/${id}`, token, { fields: 'status,error_message' })).body;
}

describe('the authorization window and tokens', () => {
  it('consents as the account, recording state, redirect URI and permissions, and gives a code once', async () => {
    const back = await consent();
    expect(back.origin + back.pathname).toBe(REDIRECT_URI);
    expect(back.hash).toBe('#_');
    expect(back.searchParams.get('state')).toBe('st-1');
    expect(threads.consents.at(-1)).toEqual({
      clientId: threads.appId,
      redirectUri: REDIRECT_URI,
      scopes: PUBLISHING.split(','),
      state: 'st-1',
      outcome: 'granted',
      granted: PUBLISHING.split(','),
    });
    const code = back.searchParams.get('code')!;
    const granted = await exchangeCode(code);
    expect(granted.status).toBe(200);
    // The id is a JSON number beyond a double's precision: it is read from the text, not from JSON.parse.
    expect(/"user_id":(\d+)/.exec(granted.text)?.[1]).toBe(threads.account.id);
    const again = await exchangeCode(code);
    expect(again.status).toBe(400);
    expect(JSON.parse(again.text)).toEqual({
      error_type: 'OAuthException',
      code: 400,
      error_message: 'This authorization code has been used.',
    });
  });

  it('redirects with access_denied when the user cancels, and refuses a redirect URI not registered', async () => {
    threads.deny();
    const back = await consent();
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('error_reason')).toBe('user_denied');
    expect(back.searchParams.get('code')).toBeNull();
    expect(threads.consents.at(-1)?.outcome).toBe('denied');
    const elsewhere = await fetch(
      `${threads.authorizeUrl}?${new URLSearchParams({ client_id: threads.appId, redirect_uri: 'https://evil.example/cb', scope: 'threads_basic', response_type: 'code' }).toString()}`,
      { redirect: 'manual' },
    );
    expect(elsewhere.status).toBe(400);
  });

  it('exchanges a short-lived token for 60 days, refreshes it once a day old, and answers 190 when expired', async () => {
    const short = await shortLived();
    const exchanged = await graph<{ access_token: string; token_type: string; expires_in: number }>(
      'GET',
      '/access_token',
      short,
      { grant_type: 'th_exchange_token', client_secret: threads.appSecret },
    );
    expect(exchanged.body).toMatchObject({ token_type: 'bearer', expires_in: 5_184_000 });
    const long = exchanged.body.access_token;
    const early = await graph('GET', '/refresh_access_token', long, { grant_type: 'th_refresh_token' });
    expect(early.status).toBe(400);
    threads.advanceClock(86_400);
    const refreshed = await graph<{ access_token: string; expires_in: number }>('GET', '/refresh_access_token', long, {
      grant_type: 'th_refresh_token',
    });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.expires_in).toBe(5_184_000);
    // The short-lived token died after its hour.
    const stale = await graph('GET', '/v1.0/me', short);
    expect(stale.status).toBe(400);
    expect(stale.body.error).toMatchObject({ code: 190, error_subcode: 463, type: 'OAuthException' });

    threads.expireTokens();
    const expired = await graph('GET', '/v1.0/me', refreshed.body.access_token);
    expect(expired.body.error).toMatchObject({ code: 190, error_subcode: 463 });
    expect(threads.errors.at(-1)).toMatchObject({ code: 190, fbtrace_id: expired.body.error!.fbtrace_id });
  });

  it('answers /me with the fields asked for, only under /v1.0', async () => {
    const token = await shortLived();
    const profile = await graph('GET', '/v1.0/me', token, { fields: 'id,username,threads_biography' });
    expect(profile.body).toEqual({
      id: threads.account.id,
      username: threads.account.username,
      threads_biography: threads.account.biography,
    });
    expect((await graph('GET', '/v9.0/me', token)).status).toBe(400);
    threads.revokeTokens();
    expect((await graph('GET', '/v1.0/me', token)).body.error).toMatchObject({ code: 190, error_subcode: 458 });
  });
});

describe('containers and publishing', () => {
  let token: string;
  beforeAll(async () => {
    token = await shortLived();
  });

  it('publishes a text post once: its permalink, and a second publication is refused', async () => {
    const id = await container(token, { media_type: 'TEXT', text: 'Hello Threads', reply_control: 'mentioned_only' });
    expect(await status(token, id)).toEqual({ id, status: 'FINISHED' });
    const published = await publish(token, id);
    expect(published.status).toBe(200);
    const post = await graph<{ permalink: string; text: string; media_type: string }>(
      'GET',
      `/v1.0/${published.body.id}`,
      token,
      { fields: 'permalink,text,media_type,reply_audience' },
    );
    expect(post.body).toEqual({
      id: published.body.id,
      permalink: `https://www.threads.net/@${threads.account.username}/post/${threads.posts.at(-1)!.shortcode}`,
      text: 'Hello Threads',
      media_type: 'TEXT_POST',
      reply_audience: 'MENTIONED_ONLY',
    });
    expect((await status(token, id)).status).toBe('PUBLISHED');
    const twice = await publish(token, id);
    expect(twice.status).toBe(400);
    expect(twice.body.error).toMatchObject({ code: 24, error_subcode: 4279009 });
    expect(threads.posts.filter((p) => p.containerId === id)).toHaveLength(1);
  });

  it('holds text to 500 characters, an emoji counted as its UTF-8 bytes', async () => {
    expect(threadsTextLength('é👍🏽')).toBe(1 + 8);
    expect(threadsTextLength('🇫🇷')).toBe(8);
    await container(token, { media_type: 'TEXT', text: 'a'.repeat(500) });
    const over = await graph('POST', `${me()}/threads`, token, { media_type: 'TEXT', text: `${'a'.repeat(497)}👍` });
    expect(over.status).toBe(400);
    expect(over.body.error).toMatchObject({ code: 100, type: 'THApiException' });
  });

  it('fetches an image from its URL, and refuses the container when the URL cannot be fetched', async () => {
    const id = await container(token, { media_type: 'IMAGE', image_url: `${media.origin}/photo.jpg`, text: 'A photo' });
    expect(threads.downloads.at(-1)).toMatchObject({
      url: `${media.origin}/photo.jpg`,
      status: 200,
      sniffed: 'image/jpeg',
    });
    expect((await status(token, id)).status).toBe('FINISHED');
    const hidden = await graph('POST', `${me()}/threads`, token, {
      media_type: 'IMAGE',
      image_url: `${media.origin}/private.jpg`,
    });
    expect(hidden.status).toBe(400);
    expect(hidden.body.error).toMatchObject({ code: 9004, error_subcode: 2207052 });
    expect(threads.downloads.at(-1)).toMatchObject({ status: 403, sniffed: null });
    const large = await graph('POST', `${me()}/threads`, token, {
      media_type: 'IMAGE',
      image_url: `${media.origin}/large.jpg`,
    });
    expect(large.body.error).toMatchObject({ code: 36000, error_subcode: 2207004 });
  });

  it('processes a video for the polls it is told, and will not publish it before', async () => {
    threads.processingPolls(3);
    const id = await container(token, { media_type: 'VIDEO', video_url: `${media.origin}/clip.mp4` });
    expect((await publish(token, id)).body.error?.code).toBe(24);
    for (let poll = 0; poll < 3; poll++) expect((await status(token, id)).status).toBe('IN_PROGRESS');
    expect((await status(token, id)).status).toBe('FINISHED');
    threads.processingPolls(undefined);
    expect((await publish(token, id)).status).toBe(200);

    // Threads' own pace: a video answers IN_PROGRESS once.
    const unreachable = await container(token, { media_type: 'VIDEO', video_url: `${media.origin}/private.mp4` });
    expect((await status(token, unreachable)).status).toBe('IN_PROGRESS');
    expect(await status(token, unreachable)).toEqual({
      id: unreachable,
      status: 'ERROR',
      error_message: 'FAILED_DOWNLOADING_VIDEO',
    });
  });

  it('ends a container in ERROR or EXPIRED by switch, and expires one left a day', async () => {
    threads.endNextContainer('ERROR', 'INVALID_ASPEC_RATIO');
    const failing = await container(token, { media_type: 'TEXT', text: 'fails' });
    expect(await status(token, failing)).toMatchObject({ status: 'ERROR', error_message: 'INVALID_ASPEC_RATIO' });
    threads.endNextContainer('EXPIRED');
    const expiring = await container(token, { media_type: 'TEXT', text: 'expires' });
    expect((await status(token, expiring)).status).toBe('EXPIRED');
    expect((await publish(token, expiring)).status).toBe(400);

    const left = await container(token, { media_type: 'TEXT', text: 'left for a day' });
    threads.advanceClock(86_400);
    token = await shortLived();
    expect((await status(token, left)).status).toBe('EXPIRED');
  });

  it('publishes a carousel of finished items as one post with children', async () => {
    const items = [
      await container(token, { media_type: 'IMAGE', image_url: `${media.origin}/photo.jpg`, is_carousel_item: 'true' }),
      await container(token, { media_type: 'IMAGE', image_url: `${media.origin}/photo.jpg`, is_carousel_item: 'true' }),
    ];
    const tooFew = await graph('POST', `${me()}/threads`, token, { media_type: 'CAROUSEL', children: items[0]! });
    expect(tooFew.status).toBe(400);
    const carousel = await container(token, { media_type: 'CAROUSEL', children: items.join(','), text: 'Two' });
    expect((await status(token, carousel)).status).toBe('IN_PROGRESS');
    expect((await status(token, carousel)).status).toBe('FINISHED');
    const before = (await graph<{ data: { quota_usage: number }[] }>('GET', `${me()}/threads_publishing_limit`, token))
      .body.data[0]!.quota_usage;
    const published = await publish(token, carousel);
    const album = await graph<{ media_type: string; children: { data: { id: string }[] } }>(
      'GET',
      `/v1.0/${published.body.id}`,
      token,
      { fields: 'media_type,children' },
    );
    expect(album.body.media_type).toBe('CAROUSEL_ALBUM');
    expect(album.body.children.data).toHaveLength(2);
    const after = (await graph<{ data: { quota_usage: number }[] }>('GET', `${me()}/threads_publishing_limit`, token))
      .body.data[0]!.quota_usage;
    expect(after).toBe(before + 1);
  });

  it('chains replies with reply_to_id, each knowing its parent and the thread’s first post', async () => {
    const first = (await publish(token, await container(token, { media_type: 'TEXT', text: 'Part 1' }))).body.id;
    const second = (
      await publish(token, await container(token, { media_type: 'TEXT', text: 'Part 2', reply_to_id: first }))
    ).body.id;
    const third = (
      await publish(token, await container(token, { media_type: 'TEXT', text: 'Part 3', reply_to_id: second }))
    ).body.id;
    const last = await graph('GET', `/v1.0/${third}`, token, { fields: 'is_reply,replied_to,root_post' });
    expect(last.body).toEqual({ id: third, is_reply: true, replied_to: { id: second }, root_post: { id: first } });
    const replies = await graph<{ data: { id: string }[] }>('GET', `${me()}/replies`, token);
    expect(replies.body.data.slice(0, 2).map((r) => r.id)).toEqual([third, second]);
    const recent = await graph<{ data: { id: string }[] }>('GET', `${me()}/threads`, token, { limit: '1' });
    expect(recent.body.data.map((r) => r.id)).toEqual([first]);
    const direct = await graph<{ data: { id: string }[] }>('GET', `/v1.0/${first}/replies`, token);
    expect(direct.body.data.map((r) => r.id)).toEqual([second]);
    const conversation = await graph<{ data: { id: string; text: string }[]; paging: { next?: string } }>(
      'GET',
      `/v1.0/${first}/conversation`,
      token,
      { fields: 'id,text', reverse: 'false', limit: '1' },
    );
    expect(conversation.body.data).toEqual([{ id: second, text: 'Part 2' }]);
    // `paging.next` is the same request for the next page, token included.
    const next = await bodyOf<{ data: { id: string }[]; paging: { next?: string } }>(
      await fetch(conversation.body.paging.next!),
    );
    expect(next.data).toEqual([{ id: third, text: 'Part 3' }]);
    expect(next.paging.next).toBeUndefined();

    const gone = await graph('POST', `${me()}/threads`, token, { media_type: 'TEXT', text: 'x', reply_to_id: '123' });
    expect(gone.body.error).toMatchObject({ code: 100, error_subcode: 33 });
    // Replying under the account's own post needs no permission more; reading the replies' quota does.
    const publishing = await shortLived('threads_basic,threads_content_publish');
    expect((await container(publishing, { media_type: 'TEXT', text: 'Part 4', reply_to_id: third })).length).toBe(17);
    const quota = await graph('GET', `${me()}/threads_publishing_limit`, publishing, { fields: 'reply_quota_usage' });
    expect(quota.body.error?.code).toBe(10);
  });

  it('allows 250 posts and 1,000 replies a rolling day, and says so at threads_publishing_limit', async () => {
    const limits = await graph('GET', `${me()}/threads_publishing_limit`, token, {
      fields: 'quota_usage,config,reply_quota_usage,reply_config',
    });
    expect(limits.body).toEqual({
      data: [
        {
          quota_usage: expect.any(Number) as number,
          config: { quota_total: 250, quota_duration: 86_400 },
          reply_quota_usage: expect.any(Number) as number,
          reply_config: { quota_total: 1000, quota_duration: 86_400 },
        },
      ],
    });
    const parent = (await publish(token, await container(token, { media_type: 'TEXT', text: 'Parent' }))).body.id;
    threads.usePublishingQuota(250);
    const refused = await publish(token, await container(token, { media_type: 'TEXT', text: 'One too many' }));
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 9, error_subcode: 2207042 });
    // Replies count apart.
    const reply = await publish(
      token,
      await container(token, { media_type: 'TEXT', text: 'Still', reply_to_id: parent }),
    );
    expect(reply.status).toBe(200);
    threads.advanceClock(86_400);
    const later = await shortLived();
    expect((await publish(later, await container(later, { media_type: 'TEXT', text: 'Next day' }))).status).toBe(200);
    token = later;
  });
});

describe('failure switches', () => {
  it('refuses with the rate-limit codes 4, 17, 32 and 613 in the Graph envelope, fbtrace_id kept', async () => {
    const token = await shortLived();
    for (const code of [4, 17, 32, 613] as const) {
      threads.rateLimitNext(code, 'createContainer');
      const refused = await graph('POST', `${me()}/threads`, token, { media_type: 'TEXT', text: `limited ${code}` });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toMatchObject({ code, type: 'OAuthException' });
      expect(refused.headers.get('x-app-usage') !== null).toBe(code === 4);
      expect(refused.body.error?.fbtrace_id).toMatch(/^\S{6,}$/);
      expect(threads.errors.at(-1)?.fbtrace_id).toBe(refused.body.error?.fbtrace_id);
    }
    expect(threads.containers.some((c) => c.params.text?.startsWith('limited'))).toBe(false);
    threads.failNext(503);
    expect((await graph('GET', '/v1.0/me', token)).body.error).toMatchObject({ code: 2, is_transient: true });
  });

  it('publishes and then cuts the connection when told to lose the answer; the post can be found after', async () => {
    const token = await shortLived();
    const id = await container(token, { media_type: 'TEXT', text: 'Lost answer' });
    threads.loseNextAnswer('publish');
    await expect(publish(token, id)).rejects.toThrow();
    expect(threads.posts.filter((p) => p.containerId === id)).toEqual([
      expect.objectContaining({ answerLost: true, text: 'Lost answer' }),
    ]);
    expect((await status(token, id)).status).toBe('PUBLISHED');
    const recent = await graph<{ data: { id: string; text: string }[] }>('GET', `${me()}/threads`, token, {
      fields: 'id,text',
      limit: '1',
    });
    expect(recent.body.data[0]?.text).toBe('Lost answer');
  });

  it('holds the answer of the publication it is told to, once the post is made: later, or never to a caller gone', async () => {
    const token = await shortLived();
    const first = await container(token, { media_type: 'TEXT', text: 'Answered at once' });
    const second = await container(token, { media_type: 'TEXT', text: 'Answered late' });
    // The first publication goes by; the one after it is answered 300 ms after the post is made.
    threads.holdNextAnswer('publish', { skip: 1, ms: 300 });
    expect((await publish(token, first)).status).toBe(200);
    expect(threads.heldAnswers()).toBe(0);
    const late = publish(token, second);
    await eventually(() => expect(threads.heldAnswers()).toBe(1));
    const made = threads.posts.find((p) => p.containerId === second);
    expect(made?.text).toBe('Answered late');
    expect((await late).body).toEqual({ id: made!.id });

    const third = await container(token, { media_type: 'TEXT', text: 'Never answered' });
    threads.holdNextAnswer('publish');
    const caller = new AbortController();
    const waiting = fetch(`${threads.url}${me()}/threads_publish`, {
      method: 'POST',
      body: new URLSearchParams({ creation_id: third, access_token: token }),
      signal: caller.signal,
    });
    await eventually(() => expect(threads.heldAnswers()).toBe(1));
    caller.abort();
    await expect(waiting).rejects.toThrow();
    // The caller went away without its answer; the post stays, and its container says it was published.
    await eventually(() => expect(threads.heldAnswers()).toBe(0));
    expect(threads.posts.filter((p) => p.containerId === third)).toHaveLength(1);
    expect((await status(token, third)).status).toBe('PUBLISHED');
  });
});
