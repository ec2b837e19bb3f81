import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodyOf } from './support/api.js';
import { eventually } from './support/eventually.js';
import { startFakeInstagramLogin, type FakeInstagramLogin } from './support/fake-instagram-login.js';
import { jpeg, mp4, png } from './support/media-samples.js';
import { startRemoteServer, type RemoteServer } from './support/remote-server.js';

// The fake Instagram (API with Instagram Login) the Instagram tests rely on, held to what
// developers.facebook.com documents for Business Login for Instagram, tokens, content publishing (containers,
// their status, media_publish, the publishing limit), comments and the error codes, so that what passes
// against it would pass against Instagram.
const REDIRECT_URI = 'http://127.0.0.1:9/channels/callback/instagram';
const PUBLISHING = 'instagram_business_basic,instagram_business_content_publish,instagram_business_manage_comments';
let instagram: FakeInstagramLogin;
let media: RemoteServer;

/** The Graph API's error envelope. */
interface GraphFailure {
  error: {
    message: string;
    type: string;
    code: number;
    error_subcode?: number;
    error_user_msg?: string;
    is_transient?: boolean;
    fbtrace_id: string;
  };
}
interface ContainerStatus {
  id: string;
  status_code: string;
  status: string;
}

beforeAll(async () => {
  instagram = await startFakeInstagramLogin({ redirectUris: [REDIRECT_URI] });
  media = await startRemoteServer((req, res) => {
    if (req.url === '/photo.jpg') res.writeHead(200, { 'Content-Type': 'image/jpeg' }).end(jpeg());
    else if (req.url === '/photo.png') res.writeHead(200, { 'Content-Type': 'image/png' }).end(png());
    else if (req.url === '/large.jpg')
      res.writeHead(200, { 'Content-Type': 'image/jpeg' }).end(jpeg(8 * 1024 * 1024 + 1));
    else if (req.url === '/reel.mp4') res.writeHead(200, { 'Content-Type': 'video/mp4' }).end(mp4());
    else res.writeHead(403, { 'Content-Type': 'text/plain' }).end('signature expired');
  });
});
afterAll(async () => {
  await instagram?.close();
  await media?.close();
});

async function consent(params: Record<string, string> = {}): Promise<URL> {
  const query = new URLSearchParams({
    client_id: instagram.appId,
    redirect_uri: REDIRECT_URI,
    scope: PUBLISHING,
    response_type: 'code',
    state: 'st-ig',
    ...params,
  });
  const response = await fetch(`${instagram.authorizeUrl}?${query.toString()}`, { redirect: 'manual' });
  expect(response.status).toBe(302);
  return new URL(response.headers.get('location')!);
}

async function exchangeCode(code: string) {
  const response = await fetch(`${instagram.url}/oauth/access_token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      client_id: instagram.appId,
      client_secret: instagram.appSecret,
      grant_type: 'authorization_code',
      redirect_uri: REDIRECT_URI,
      code,
    }),
  });
  return { status: response.status, text: await response.text() };
}

async function shortLived(scope = PUBLISHING): Promise<string> {
  const code = (await consent({ scope })).searchParams.get('code')!;
  return (JSON.parse((await exchangeCode(code)).text) as { access_token: string }).access_token;
}

/** A Graph call, the token in the Authorization header as the Instagram Platform allows. */
async function graph<T>(method: 'GET' | 'POST', path: string, token: string, params: Record<string, string> = {}) {
  const query = new URLSearchParams(params);
  const headers = { Authorization: `Bearer ${token}` };
  const response =
    method === 'GET'
      ? await fetch(`${instagram.url}${path}?${query.toString()}`, { headers })
      : await fetch(`${instagram.url}${path}`, {
          method,
          headers: { ...headers, 'Content-Type': 'application/x-www-form-urlencoded' },
          body: query,
        });
  return { status: response.status, body: await bodyOf<T & Partial<GraphFailure>>(response) };
}

const account = () => `/v23.0/${instagram.account.userId}`;

async function container(token: string, params: Record<string, string>): Promise<string> {
  const created = await graph<{ id: string }>('POST', `${account()}/media`, token, params);
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  return created.body.id;
}

async function status(token: string, id: string) {
  return (await graph<ContainerStatus>('GET', `/v23.0/${id}`, token, { fields: 'status_code,status' })).body;
}

async function publish(token: string, creationId: string) {
  return graph<{ id: string }>('POST', `${account()}/media_publish`, token, { creation_id: creationId });
}

describe('Business Login for Instagram and tokens', () => {
  it('consents as the account with the instagram_business permissions, and gives a code once', async () => {
    const back = await consent();
    expect(back.hash).toBe('#_');
    expect(back.searchParams.get('state')).toBe('st-ig');
    expect(instagram.consents.at(-1)).toMatchObject({ redirectUri: REDIRECT_URI, scopes: PUBLISHING.split(',') });
    const code = back.searchParams.get('code')!;
    const granted = await exchangeCode(code);
    expect(granted.status).toBe(200);
    expect(/"user_id":(\d+)/.exec(granted.text)?.[1]).toBe(instagram.account.userId);
    expect((JSON.parse(granted.text) as { permissions: string[] }).permissions).toEqual(PUBLISHING.split(','));
    expect(JSON.parse((await exchangeCode(code)).text)).toMatchObject({ error_type: 'OAuthException', code: 400 });

    instagram.tokenAnswerInData(true);
    const inData = JSON.parse((await exchangeCode((await consent()).searchParams.get('code')!)).text) as {
      data: { user_id: string; permissions: string }[];
    };
    instagram.tokenAnswerInData(false);
    expect(inData.data[0]).toMatchObject({ user_id: instagram.account.userId, permissions: PUBLISHING });
  });

  it('redirects with access_denied when the user cancels, and refuses a window without instagram_business_basic', async () => {
    instagram.deny();
    const back = await consent();
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('code')).toBeNull();
    const query = new URLSearchParams({
      client_id: instagram.appId,
      redirect_uri: REDIRECT_URI,
      scope: 'instagram_business_content_publish',
      response_type: 'code',
    });
    expect((await fetch(`${instagram.authorizeUrl}?${query.toString()}`, { redirect: 'manual' })).status).toBe(400);
  });

  it('exchanges for a 60-day token (ig_exchange_token), refreshes it after a day, and answers 190 once expired', async () => {
    const short = await shortLived();
    const query = new URLSearchParams({
      grant_type: 'ig_exchange_token',
      client_secret: instagram.appSecret,
      access_token: short,
    });
    const exchanged = await bodyOf<{ access_token: string; token_type: string; expires_in: number }>(
      await fetch(`${instagram.url}/access_token?${query.toString()}`),
    );
    expect(exchanged).toMatchObject({ token_type: 'bearer', expires_in: 5_184_000 });
    const refresh = () =>
      fetch(
        `${instagram.url}/refresh_access_token?${new URLSearchParams({ grant_type: 'ig_refresh_token', access_token: exchanged.access_token }).toString()}`,
      );
    expect((await refresh()).status).toBe(400);
    instagram.advanceClock(86_400);
    instagram.failNext(503, 'refreshToken');
    expect((await refresh()).status).toBe(503);
    const refreshed = await bodyOf<{ access_token: string; expires_in: number }>(await refresh());
    expect(refreshed.expires_in).toBe(5_184_000);
    instagram.advanceClock(61 * 86_400);
    const expired = await graph('GET', '/v23.0/me', refreshed.access_token);
    expect(expired.body.error).toMatchObject({ code: 190, error_subcode: 463, type: 'OAuthException' });
    expect(instagram.errors.at(-1)?.fbtrace_id).toBe(expired.body.error?.fbtrace_id);
  });

  it('answers /me with the account’s ids, versioned or not, and refuses another version', async () => {
    const token = await shortLived();
    const fields = { fields: 'user_id,username,account_type' };
    const expected = {
      id: instagram.account.id,
      user_id: instagram.account.userId,
      username: instagram.account.username,
      account_type: 'BUSINESS',
    };
    expect((await graph('GET', '/v23.0/me', token, fields)).body).toEqual(expected);
    expect((await graph('GET', '/me', token, fields)).body).toEqual(expected);
    expect((await graph('GET', '/v19.0/me', token, fields)).status).toBe(400);
    instagram.expireTokens();
    expect((await graph('GET', '/me', token)).body.error?.code).toBe(190);
  });
});

describe('content publishing', () => {
  let token: string;
  beforeAll(async () => {
    token = await shortLived();
  });

  it('fetches a JPEG from its URL; a PNG or a URL Instagram cannot fetch fails the container with 9004/2207052', async () => {
    const id = await container(token, { image_url: `${media.origin}/photo.jpg`, caption: 'A photo' });
    expect(await status(token, id)).toEqual({
      id,
      status_code: 'FINISHED',
      status: 'Finished: Media container is ready to be published.',
    });
    for (const path of ['/photo.png', '/private.jpg']) {
      const refused = await graph('POST', `${account()}/media`, token, { image_url: `${media.origin}${path}` });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toMatchObject({ code: 9004, error_subcode: 2207052, is_transient: false });
      expect(refused.body.error?.error_user_msg).toContain(`${media.origin}${path}`);
    }
    expect(instagram.downloads.slice(-2).map((d) => d.status)).toEqual([200, 403]);
    const large = await graph('POST', `${account()}/media`, token, { image_url: `${media.origin}/large.jpg` });
    expect(large.body.error).toMatchObject({ code: 36000, error_subcode: 2207004 });
    const published = await publish(token, id);
    const photo = await graph('GET', `/v23.0/${published.body.id}`, token, { fields: 'permalink,media_type,caption' });
    expect(photo.body).toEqual({
      id: published.body.id,
      permalink: `https://www.instagram.com/p/${instagram.media.at(-1)!.shortcode}/`,
      media_type: 'IMAGE',
      caption: 'A photo',
    });
    const twice = await publish(token, id);
    expect(twice.status).toBe(400);
    expect(instagram.media.filter((m) => m.containerId === id)).toHaveLength(1);
  });

  it('holds a caption to 2,200 characters, 30 hashtags and 20 @ tags', async () => {
    const image = `${media.origin}/photo.jpg`;
    await container(token, { image_url: image, caption: 'a'.repeat(2200) });
    await container(token, { image_url: image, caption: Array.from({ length: 30 }, (_, i) => `#tag${i}`).join(' ') });
    for (const caption of [
      'a'.repeat(2201),
      Array.from({ length: 31 }, (_, i) => `#tag${i}`).join(' '),
      Array.from({ length: 21 }, (_, i) => `@friend${i}`).join(' '),
    ]) {
      const refused = await graph('POST', `${account()}/media`, token, { image_url: image, caption });
      expect(refused.status).toBe(400);
      expect(refused.body.error?.code).toBe(100);
    }
  });

  it('processes a reel for the polls it is told; media_publish before answers 9007/2207027', async () => {
    instagram.processingPolls(2);
    const id = await container(token, { media_type: 'REELS', video_url: `${media.origin}/reel.mp4`, caption: 'Reel' });
    instagram.processingPolls(undefined);
    const early = await publish(token, id);
    expect(early.body.error).toMatchObject({ code: 9007, error_subcode: 2207027 });
    expect(await status(token, id)).toMatchObject({ status_code: 'IN_PROGRESS' });
    expect(await status(token, id)).toMatchObject({ status_code: 'IN_PROGRESS' });
    expect(await status(token, id)).toMatchObject({ status_code: 'FINISHED' });
    const published = await publish(token, id);
    const reel = await graph('GET', `/v23.0/${published.body.id}`, token, { fields: 'media_product_type,permalink' });
    expect(reel.body).toMatchObject({
      media_product_type: 'REELS',
      permalink: expect.stringMatching(/\/reel\//) as string,
    });
    expect((await status(token, id)).status_code).toBe('PUBLISHED');

    const unreachable = await container(token, { media_type: 'REELS', video_url: `${media.origin}/gone.mp4` });
    expect((await status(token, unreachable)).status_code).toBe('IN_PROGRESS');
    expect(await status(token, unreachable)).toMatchObject({
      status_code: 'ERROR',
      status: 'Error: Media upload has failed with error code 2207052',
    });
  });

  it('publishes a carousel of three with collaborators on the carousel, and a first comment on it', async () => {
    const items: string[] = [];
    for (let i = 0; i < 3; i++)
      items.push(await container(token, { image_url: `${media.origin}/photo.jpg`, is_carousel_item: 'true' }));
    const onItem = await graph('POST', `${account()}/media`, token, {
      image_url: `${media.origin}/photo.jpg`,
      is_carousel_item: 'true',
      collaborators: JSON.stringify(['friend']),
    });
    expect(onItem.status).toBe(400);
    const eleven = await graph('POST', `${account()}/media`, token, {
      media_type: 'CAROUSEL',
      children: Array.from({ length: 11 }, () => items[0]).join(','),
    });
    expect(eleven.body.error?.error_subcode).toBe(2207028);
    const carousel = await container(token, {
      media_type: 'CAROUSEL',
      children: items.join(','),
      caption: 'Three',
      collaborators: JSON.stringify(['friend']),
    });
    await status(token, carousel);
    expect((await status(token, carousel)).status_code).toBe('FINISHED');
    const published = (await publish(token, carousel)).body.id;
    const album = await graph<{ children: { data: { id: string }[] } }>('GET', `/v23.0/${published}`, token, {
      fields: 'media_type,children',
    });
    expect(album.body).toMatchObject({ media_type: 'CAROUSEL_ALBUM' });
    expect(album.body.children.data).toHaveLength(3);

    const first = await graph<{ id: string }>('POST', `/v23.0/${published}/comments`, token, { message: 'First!' });
    expect(first.status).toBe(200);
    const listed = await graph<{ data: { id: string; text: string }[] }>('GET', `/v23.0/${published}/comments`, token, {
      fields: 'id,text',
    });
    expect(listed.body.data).toEqual([{ id: first.body.id, text: 'First!' }]);
    const withoutComments = await shortLived('instagram_business_basic,instagram_business_content_publish');
    expect(
      (await graph('POST', `/v23.0/${published}/comments`, withoutComments, { message: 'x' })).body.error?.code,
    ).toBe(10);
  });

  it('publishes a story, which has no comments', async () => {
    const story = await container(token, { media_type: 'STORIES', image_url: `${media.origin}/photo.jpg` });
    const published = (await publish(token, story)).body.id;
    const read = await graph('GET', `/v23.0/${published}`, token, { fields: 'media_product_type,permalink' });
    expect(read.body).toEqual({
      id: published,
      media_product_type: 'STORY',
      permalink: `https://www.instagram.com/stories/${instagram.account.username}/${published}/`,
    });
    expect((await graph('POST', `/v23.0/${published}/comments`, token, { message: 'x' })).status).toBe(400);
  });

  it('ends a container in ERROR or EXPIRED by switch, and refuses to publish either', async () => {
    instagram.endNextContainer('ERROR', '2207026');
    const failing = await container(token, { image_url: `${media.origin}/photo.jpg` });
    expect(await status(token, failing)).toMatchObject({
      status_code: 'ERROR',
      status: 'Error: Media upload has failed with error code 2207026',
    });
    expect((await publish(token, failing)).body.error?.code).toBe(9007);
    instagram.endNextContainer('EXPIRED');
    const expiring = await container(token, { image_url: `${media.origin}/photo.jpg` });
    expect((await status(token, expiring)).status_code).toBe('EXPIRED');
    expect((await publish(token, expiring)).body.error).toMatchObject({ code: -2, error_subcode: 2207020 });
  });

  it('counts publications against the rolling day at content_publishing_limit, and refuses past it', async () => {
    const limit = await graph<{ data: { quota_usage: number; config: object }[] }>(
      'GET',
      `${account()}/content_publishing_limit`,
      token,
      { fields: 'quota_usage,config' },
    );
    expect(limit.body.data[0]).toEqual({
      quota_usage: instagram.media.filter((m) => !m.carouselItem).length,
      config: { quota_total: 100, quota_duration: 86_400 },
    });
    instagram.usePublishingQuota(100);
    const refused = await publish(token, await container(token, { image_url: `${media.origin}/photo.jpg` }));
    expect(refused.body.error).toMatchObject({ code: 9, error_subcode: 2207042 });
    instagram.advanceClock(86_400);
    token = await shortLived();
    expect((await publish(token, await container(token, { image_url: `${media.origin}/photo.jpg` }))).status).toBe(200);
  });
});

describe('failure switches', () => {
  it('refuses with the rate-limit codes 4, 17, 32 and 613, and fails with code 2 on a server error', async () => {
    const token = await shortLived();
    for (const code of [4, 17, 32, 613] as const) {
      instagram.rateLimitNext(code, 'publish');
      const refused = await publish(token, await container(token, { image_url: `${media.origin}/photo.jpg` }));
      expect(refused.status).toBe(400);
      expect(refused.body.error).toMatchObject({ code, type: 'OAuthException', is_transient: true });
      expect(instagram.errors.at(-1)?.fbtrace_id).toBe(refused.body.error?.fbtrace_id);
    }
    instagram.failNext(503, 'me');
    const failed = await graph('GET', '/me', token);
    expect(failed.status).toBe(503);
    expect(failed.body.error?.code).toBe(2);
  });

  it('publishes and cuts the connection when told to lose media_publish’s answer: one media, found by its container', async () => {
    const token = await shortLived();
    const id = await container(token, { image_url: `${media.origin}/photo.jpg`, caption: 'Lost answer' });
    instagram.loseNextAnswer('publish');
    await expect(publish(token, id)).rejects.toThrow();
    expect(instagram.media.filter((m) => m.containerId === id)).toEqual([
      expect.objectContaining({ answerLost: true, caption: 'Lost answer' }),
    ]);
    expect((await status(token, id)).status_code).toBe('PUBLISHED');
    const recent = await graph<{ data: { caption: string }[] }>('GET', `${account()}/media`, token, {
      fields: 'caption,timestamp',
      limit: '1',
    });
    expect(recent.body.data[0]?.caption).toBe('Lost answer');

    const published = instagram.media.at(-1)!.id;
    instagram.loseNextAnswer('comment');
    await expect(graph('POST', `/v23.0/${published}/comments`, token, { message: 'Once' })).rejects.toThrow();
    expect(instagram.comments.filter((c) => c.mediaId === published)).toEqual([
      expect.objectContaining({ text: 'Once', answerLost: true }),
    ]);
  });

  it('holds media_publish’s answer once the media is made, and drops it when the caller goes away', async () => {
    const token = await shortLived();
    const id = await container(token, { image_url: `${media.origin}/photo.jpg`, caption: 'Never answered' });
    instagram.holdNextAnswer('publish');
    const caller = new AbortController();
    const waiting = fetch(`${instagram.url}${account()}/media_publish`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}` },
      body: new URLSearchParams({ creation_id: id }),
      signal: caller.signal,
    });
    await eventually(() => expect(instagram.heldAnswers()).toBe(1));
    expect(instagram.media.filter((m) => m.containerId === id)).toHaveLength(1);
    caller.abort();
    await expect(waiting).rejects.toThrow();
    await eventually(() => expect(instagram.heldAnswers()).toBe(0));
    expect((await status(token, id)).status_code).toBe('PUBLISHED');
  });
});
