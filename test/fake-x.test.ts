import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodyOf } from './support/api.js';
import { eventually } from './support/eventually.js';
import { startFakeX, type FakeX } from './support/fake-x.js';
import { gif, mp4, png } from './support/media-samples.js';
import { anyNumber, anyString } from './support/typed-matchers.js';

// The fake X that the X adapter's tests will rely on, held to what docs.x.com documents for OAuth 2.0 with
// PKCE, the media upload, posts and the account's timeline, and to the errors and limits X answers with, so
// that what passes against it would pass against X.
const REDIRECT_URI = 'http://127.0.0.1:9/channels/callback/x';
const SCOPES = 'tweet.read tweet.write users.read media.write offline.access';
const INVALID_TOKEN = { error: 'invalid_request', error_description: 'Value passed for the token was invalid.' };
const UNAUTHORIZED = { title: 'Unauthorized', type: 'about:blank', status: 401, detail: 'Unauthorized' };
const KB = 1024;
let x: FakeX;

/** The token endpoint's answer: the tokens, or an OAuth error. */
interface TokenAnswer {
  token_type: string;
  expires_in: number;
  access_token: string;
  scope: string;
  refresh_token?: string;
  error?: string;
  error_description?: string;
}
/** X's problem object, with the `errors` array of an invalid request. */
interface Problem {
  title?: string;
  detail?: string;
  type?: string;
  status?: number;
  errors?: { message?: string; detail?: string; parameters?: Record<string, unknown[]>; resource_type?: string }[];
}
interface Tweet {
  id: string;
  text: string;
  edit_history_tweet_ids: string[];
  author_id?: string;
  created_at?: string;
  conversation_id?: string;
  in_reply_to_user_id?: string;
  referenced_tweets?: { type: string; id: string }[];
  reply_settings?: string;
  attachments?: { media_keys: string[] };
  entities?: { urls: { start: number; end: number; url: string; expanded_url: string; display_url: string }[] };
}
interface Media {
  id: string;
  media_key: string;
  size?: number;
  expires_after_secs?: number;
  processing_info?: { state: string; check_after_secs?: number; progress_percent?: number };
  image?: { image_type: string; w?: number; h?: number };
  video?: { video_type: string };
}
/** An answer of API v2: `data`, or a problem. */
interface Answer<Data> extends Problem {
  data: Data;
  includes?: { media?: { media_key: string; type: string; alt_text?: string; width?: number }[]; users?: unknown[] };
  meta?: { result_count: number; newest_id?: string; oldest_id?: string; next_token?: string };
}

beforeAll(async () => {
  x = await startFakeX({ account: { username: 'acme', name: 'Acme on X' } });
});
afterAll(async () => {
  await x?.close();
});

function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** The consent page's answer: where X sends the browser back. */
async function consent(params: Record<string, string>): Promise<Response> {
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: x.clientId,
    redirect_uri: REDIRECT_URI,
    scope: SCOPES,
    state: 'st-1',
    code_challenge_method: 'S256',
    ...params,
  });
  return fetch(`${x.authorizeUrl}?${query.toString()}`, { redirect: 'manual' });
}

async function consentBack(params: Record<string, string>): Promise<URL> {
  const response = await consent(params);
  expect(response.status).toBe(302);
  return new URL(response.headers.get('location')!);
}

/** A call of the token or revocation endpoint, as the confidential app (HTTP Basic) or with no credentials. */
async function oauth<T = TokenAnswer>(path: 'token' | 'revoke', form: Record<string, string>, basic = true) {
  const response = await fetch(`${x.url}/2/oauth2/${path}`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/x-www-form-urlencoded',
      ...(basic ? { Authorization: `Basic ${Buffer.from(`${x.clientId}:${x.clientSecret}`).toString('base64')}` } : {}),
    },
    body: new URLSearchParams(form),
  });
  return { status: response.status, body: await bodyOf<T>(response) };
}

/** The account connected with PKCE (S256): the token endpoint's answer. */
async function connected(scope = SCOPES): Promise<TokenAnswer> {
  const { verifier, challenge } = pkce();
  const code = (await consentBack({ scope, code_challenge: challenge })).searchParams.get('code')!;
  const granted = await oauth('token', {
    grant_type: 'authorization_code',
    code,
    redirect_uri: REDIRECT_URI,
    code_verifier: verifier,
  });
  expect(granted.status).toBe(200);
  return granted.body;
}

/** A call of API v2 with an access token; a JSON body, or a multipart form as it is. */
async function api<Data = unknown>(token: string, method: string, path: string, body?: unknown) {
  const json = body !== undefined && !(body instanceof FormData);
  const response = await fetch(`${x.url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(json ? { 'Content-Type': 'application/json' } : {}) },
    ...(body === undefined ? {} : { body: json ? JSON.stringify(body) : body }),
  });
  return { status: response.status, headers: response.headers, body: await bodyOf<Answer<Data>>(response) };
}

const post = (token: string, body: Record<string, unknown>) => api<Tweet>(token, 'POST', '/2/tweets', body);

/** A multipart form of these fields; a Buffer goes as a file. */
function form(fields: Record<string, string | Buffer>): FormData {
  const data = new FormData();
  for (const [name, value] of Object.entries(fields))
    if (typeof value === 'string') data.set(name, value);
    else data.set(name, new Blob([new Uint8Array(value)]), name);
  return data;
}

/** An image through the one-shot upload: its id. */
async function uploadImage(token: string, bytes = png(2, 2)): Promise<string> {
  const uploaded = await api<Media>(
    token,
    'POST',
    '/2/media/upload',
    form({ media: bytes, media_category: 'tweet_image' }),
  );
  expect(uploaded.status).toBe(200);
  return uploaded.body.data.id;
}

/** A chunked upload through finalize, in segments of `segment` bytes: its id and finalize's answer. */
async function uploadChunked(token: string, bytes: Buffer, mediaType: string, category: string, segment = 256 * KB) {
  const started = await api<Media>(token, 'POST', '/2/media/upload/initialize', {
    media_type: mediaType,
    total_bytes: bytes.length,
    media_category: category,
  });
  expect(started.status).toBe(200);
  const id = started.body.data.id;
  for (let index = 0; index * segment < bytes.length; index++) {
    const chunk = bytes.subarray(index * segment, (index + 1) * segment);
    const appended = await api(
      token,
      'POST',
      `/2/media/upload/${id}/append`,
      form({ segment_index: String(index), media: chunk }),
    );
    expect(appended.status).toBe(200);
  }
  const finalized = await api<Media>(token, 'POST', `/2/media/upload/${id}/finalize`);
  return { id, finalized };
}

const status = (token: string, id: string) => api<Media>(token, 'GET', `/2/media/upload?media_id=${id}&command=STATUS`);

describe('OAuth 2.0 with PKCE', () => {
  it('gives a code with the state, and exchanges it once, for the app authenticated with HTTP Basic and the PKCE verifier', async () => {
    const { verifier, challenge } = pkce();
    const back = await consentBack({ code_challenge: challenge });
    expect(back.origin + back.pathname).toBe(REDIRECT_URI);
    expect(back.searchParams.get('state')).toBe('st-1');
    const exchange = {
      grant_type: 'authorization_code',
      code: back.searchParams.get('code')!,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
    };
    // A confidential client's secret goes in the Authorization header, never in the body.
    const inBody = await oauth('token', { ...exchange, client_id: x.clientId, client_secret: x.clientSecret }, false);
    expect(inBody).toEqual({
      status: 401,
      body: { error: 'unauthorized_client', error_description: 'Missing valid authorization header' },
    });
    const granted = await oauth('token', exchange);
    expect(granted).toEqual({
      status: 200,
      body: {
        token_type: 'bearer',
        expires_in: 7200,
        access_token: anyString(),
        refresh_token: anyString(),
        scope: SCOPES,
      },
    });
    expect(await oauth('token', exchange)).toEqual({ status: 400, body: INVALID_TOKEN });
    expect(x.requests.filter((r) => r.operation === 'token').at(-1)).toEqual({
      method: 'POST',
      path: '/2/oauth2/token',
      operation: 'token',
      auth: 'basic',
    });
  });

  it('spends a code shown with the wrong verifier, lets one live 30 seconds, and answers access_denied when the user cancels', async () => {
    const { verifier, challenge } = pkce();
    const code = (await consentBack({ code_challenge: challenge })).searchParams.get('code')!;
    const exchange = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI };
    expect(await oauth('token', { ...exchange, code_verifier: pkce().verifier })).toEqual({
      status: 400,
      body: INVALID_TOKEN,
    });
    expect((await oauth('token', { ...exchange, code_verifier: verifier })).body).toEqual(INVALID_TOKEN);

    const late = pkce();
    const lateCode = (await consentBack({ code_challenge: late.challenge })).searchParams.get('code')!;
    x.advanceClock(31);
    expect((await oauth('token', { ...exchange, code: lateCode, code_verifier: late.verifier })).body).toEqual(
      INVALID_TOKEN,
    );

    x.deny();
    const cancelled = await consentBack({ code_challenge: challenge });
    expect(cancelled.searchParams.get('error')).toBe('access_denied');
    expect(cancelled.searchParams.get('state')).toBe('st-1');
    expect(cancelled.searchParams.get('code')).toBeNull();
  });

  it('shows its error page, sending nothing back, for a request without PKCE or to a callback the app did not register', async () => {
    const withoutPkce = await consent({});
    expect(withoutPkce.status).toBe(400);
    expect(await withoutPkce.text()).toContain('Something went wrong');
    x.clients[0]!.callbackUrls.push(REDIRECT_URI);
    try {
      const elsewhere = await consent({
        code_challenge: pkce().challenge,
        redirect_uri: 'http://127.0.0.1:9/elsewhere',
      });
      expect(elsewhere.status).toBe(400);
      expect(elsewhere.headers.get('location')).toBeNull();
      expect((await consent({ code_challenge: pkce().challenge })).status).toBe(302);
    } finally {
      x.clients[0]!.callbackUrls.length = 0;
    }
  });

  it('lets a public client name itself with client_id alone, and keeps each app to its own codes', async () => {
    const app = x.addClient({ clientId: 'cHVibGljLWFwcDoxOmNp', clientSecret: null });
    const { verifier, challenge } = pkce();
    const code = (await consentBack({ client_id: app.clientId, code_challenge: challenge })).searchParams.get('code')!;
    const exchange = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier };
    // The confidential app may not redeem the public app's code.
    expect((await oauth('token', exchange)).body).toEqual(INVALID_TOKEN);
    const granted = await oauth('token', { ...exchange, client_id: app.clientId }, false);
    expect(granted.status).toBe(200);
    expect(x.grants.at(-1)!.clientId).toBe(app.clientId);
    const refreshed = await oauth(
      'token',
      { grant_type: 'refresh_token', refresh_token: granted.body.refresh_token!, client_id: app.clientId },
      false,
    );
    expect(refreshed.status).toBe(200);
  });

  it('gives a refresh token only with offline.access', async () => {
    const tokens = await connected('tweet.read users.read');
    expect(tokens.refresh_token).toBeUndefined();
    expect(tokens.scope).toBe('tweet.read users.read');
  });

  it('rotates refresh tokens: a refresh answers a new pair, and the refresh token used is refused from then on', async () => {
    const first = await connected();
    const refreshed = await oauth('token', { grant_type: 'refresh_token', refresh_token: first.refresh_token! });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.refresh_token).toEqual(anyString());
    expect(refreshed.body.refresh_token).not.toBe(first.refresh_token);
    expect(refreshed.body.access_token).not.toBe(first.access_token);
    const refused = x.refreshes.refused;
    expect(await oauth('token', { grant_type: 'refresh_token', refresh_token: first.refresh_token! })).toEqual({
      status: 400,
      body: INVALID_TOKEN,
    });
    expect(x.refreshes.refused).toBe(refused + 1);
    const grant = x.grants.find((g) => g.refreshTokens.some((t) => t.value === first.refresh_token))!;
    expect(grant.refreshTokens.map((t) => t.used)).toEqual([true, false]);
    expect(
      (await oauth('token', { grant_type: 'refresh_token', refresh_token: refreshed.body.refresh_token! })).status,
    ).toBe(200);

    // An access token lives two hours, refreshed or not.
    expect((await api(first.access_token, 'GET', '/2/users/me')).status).toBe(200);
    x.advanceClock(7201);
    const expired = await api(first.access_token, 'GET', '/2/users/me');
    expect(expired.status).toBe(401);
    expect(expired.body).toEqual(UNAUTHORIZED);
  });

  it('revokes: an access token at once, a refresh token with its grant, and every grant when the user removes the app', async () => {
    const tokens = await connected();
    expect(await oauth('revoke', { token: tokens.access_token })).toEqual({ status: 200, body: { revoked: true } });
    expect((await api(tokens.access_token, 'GET', '/2/users/me')).body).toEqual(UNAUTHORIZED);
    const refreshed = await oauth('token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! });
    expect(refreshed.status).toBe(200);

    expect((await oauth('revoke', { token: refreshed.body.refresh_token! })).status).toBe(200);
    expect((await api(refreshed.body.access_token, 'GET', '/2/users/me')).status).toBe(401);
    expect(
      (await oauth('token', { grant_type: 'refresh_token', refresh_token: refreshed.body.refresh_token! })).body,
    ).toEqual(INVALID_TOKEN);

    const other = await connected();
    x.revokeAll();
    expect((await api(other.access_token, 'GET', '/2/users/me')).body).toEqual(UNAUTHORIZED);
    expect((await oauth('token', { grant_type: 'refresh_token', refresh_token: other.refresh_token! })).body).toEqual(
      INVALID_TOKEN,
    );
    // Consent given again makes a new grant.
    expect((await api((await connected()).access_token, 'GET', '/2/users/me')).status).toBe(200);
  });
});

describe('the signed-in user', () => {
  it('answers users/me with X’s default fields or those asked for, and 403 to a token without the scopes', async () => {
    const tokens = await connected();
    const me = await api(tokens.access_token, 'GET', '/2/users/me');
    expect(me.body).toEqual({ data: { id: x.account.id, name: 'Acme on X', username: 'acme' } });
    expect(me.headers.get('x-rate-limit-limit')).toBe('75');
    const fields = await api(tokens.access_token, 'GET', '/2/users/me?user.fields=profile_image_url,subscription_type');
    expect(fields.body.data).toEqual({
      id: x.account.id,
      name: 'Acme on X',
      username: 'acme',
      profile_image_url: x.account.profileImageUrl,
      subscription_type: 'None',
    });
    const unknown = await api(tokens.access_token, 'GET', '/2/users/me?user.fields=shoe_size');
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors![0]!.message).toContain('[shoe_size]');

    const narrow = await connected('tweet.read tweet.write');
    expect((await api(narrow.access_token, 'GET', '/2/users/me')).body).toEqual({
      title: 'Forbidden',
      detail: 'You are not permitted to perform this action.',
      type: 'about:blank',
      status: 403,
    });
    expect((await api(narrow.access_token, 'POST', '/2/media/upload/initialize', {})).status).toBe(403);
  });
});

describe('the media upload', () => {
  it('takes a video in segments in any order, and says through STATUS how processing goes until it succeeds', async () => {
    const { access_token: token } = await connected();
    const video = mp4(600 * KB);
    const started = await api<Media>(token, 'POST', '/2/media/upload/initialize', {
      media_type: 'video/mp4',
      total_bytes: video.length,
      media_category: 'tweet_video',
    });
    expect(started.body).toEqual({ data: { id: anyString(), media_key: anyString(), expires_after_secs: 86_400 } });
    const id = started.body.data.id;
    expect(started.body.data.media_key).toBe(`7_${id}`);
    const segment = (index: number) => video.subarray(index * 256 * KB, (index + 1) * 256 * KB);
    for (const index of [2, 0, 1, 0]) {
      const appended = await api(
        token,
        'POST',
        `/2/media/upload/${id}/append`,
        form({ segment_index: String(index), media: segment(index) }),
      );
      expect(appended.body).toEqual({ data: { expires_at: anyNumber() } });
    }
    x.processingChecks(2);
    try {
      const finalized = await api<Media>(token, 'POST', `/2/media/upload/${id}/finalize`);
      expect(finalized.body).toEqual({
        data: {
          id,
          media_key: `7_${id}`,
          size: video.length,
          expires_after_secs: anyNumber(),
          processing_info: { state: 'pending', check_after_secs: 1, progress_percent: 0 },
          video: { video_type: 'video/mp4' },
        },
      });
      // Not yet usable in a post.
      const early = await post(token, { text: 'Our video, early', media: { media_ids: [id] } });
      expect(early.status).toBe(400);
      expect(early.body.errors![0]!.message).toBe('Your media IDs are invalid.');
      const states = [];
      for (let i = 0; i < 3; i++) states.push((await status(token, id)).body.data.processing_info!.state);
      expect(states).toEqual(['in_progress', 'in_progress', 'succeeded']);
    } finally {
      x.processingChecks(1);
    }
    expect((await post(token, { text: 'Our video', media: { media_ids: [id] } })).status).toBe(201);
    expect(x.mediaBytes(id)!.equals(video)).toBe(true);
    expect(x.media.find((m) => m.id === id)).toMatchObject({
      type: 'video',
      upload: 'chunked',
      appended: [2, 0, 1, 0],
      received: video.length + 256 * KB,
      stored: video.length,
      finalized: true,
      state: 'succeeded',
      statusChecks: 3,
    });
  });

  it('refuses segments that do not add up and segments after finalize, and fails processing bytes that are not the video announced', async () => {
    const { access_token: token } = await connected();
    const started = await api<Media>(token, 'POST', '/2/media/upload/initialize', {
      media_type: 'video/mp4',
      total_bytes: 3000,
      media_category: 'tweet_video',
    });
    const id = started.body.data.id;
    const bytes = mp4(3000);
    // JSON takes the segment base64.
    const first = await api(token, 'POST', `/2/media/upload/${id}/append`, {
      segment_index: 0,
      media: bytes.subarray(0, 1000).toString('base64'),
    });
    expect(first.status).toBe(200);
    const short = await api(token, 'POST', `/2/media/upload/${id}/finalize`);
    expect(short.status).toBe(400);
    expect(short.body.errors![0]!.message).toBe('Segments do not add up to provided total file size.');
    const rest = form({ segment_index: '1', media: bytes.subarray(1000) });
    expect((await api(token, 'POST', `/2/media/upload/${id}/append`, rest)).status).toBe(200);
    expect((await api(token, 'POST', `/2/media/upload/${id}/finalize`)).status).toBe(200);
    expect((await api(token, 'POST', `/2/media/upload/${id}/append`, rest)).status).toBe(400);

    const fake = await uploadChunked(token, png(8, 8), 'video/mp4', 'tweet_video');
    expect(fake.finalized.body.data.processing_info!.state).toBe('pending');
    expect((await status(token, fake.id)).body.data.processing_info!.state).toBe('in_progress');
    expect((await status(token, fake.id)).body.data.processing_info).toEqual({
      state: 'failed',
      progress_percent: anyNumber(),
    });
    expect((await post(token, { text: 'Not a video', media: { media_ids: [fake.id] } })).status).toBe(400);

    const tooLarge = await api(token, 'POST', '/2/media/upload/initialize', {
      media_type: 'image/png',
      total_bytes: 5 * 1024 * KB + 1,
      media_category: 'tweet_image',
    });
    expect(tooLarge.status).toBe(400);
  });

  it('uploads an image at once and takes alt text for it, up to 1,000 characters, but not for a video', async () => {
    const { access_token: token } = await connected();
    const uploaded = await api<Media>(
      token,
      'POST',
      '/2/media/upload',
      form({ media: png(4, 3), media_category: 'tweet_image' }),
    );
    const id = uploaded.body.data.id;
    expect(uploaded.body).toEqual({
      data: {
        id,
        media_key: `3_${id}`,
        size: png(4, 3).length,
        expires_after_secs: 86_400,
        image: { image_type: 'image/png', w: 4, h: 3 },
      },
    });
    // The command-style upload on this path is gone.
    const command = await api(
      token,
      'POST',
      '/2/media/upload',
      form({ command: 'INIT', media: png(), media_category: 'tweet_image' }),
    );
    expect(command.status).toBe(400);

    const described = await api(token, 'POST', '/2/media/metadata', {
      id,
      metadata: { alt_text: { text: 'A tiny square' } },
    });
    expect(described.body).toEqual({ data: { id, associated_metadata: { alt_text: { text: 'A tiny square' } } } });
    expect(x.media.find((m) => m.id === id)!.altText).toBe('A tiny square');
    const long = await api(token, 'POST', '/2/media/metadata', {
      id,
      metadata: { alt_text: { text: 'a'.repeat(1001) } },
    });
    expect(long.status).toBe(400);

    const video = await uploadChunked(token, mp4(4 * KB), 'video/mp4', 'tweet_video');
    const onVideo = await api(token, 'POST', '/2/media/metadata', {
      id: video.id,
      metadata: { alt_text: { text: 'A video' } },
    });
    expect(onVideo.status).toBe(400);
    expect(onVideo.body.errors![0]!.message).toBe('Alt text can only be added to images.');
  });
});

describe('posts', () => {
  it('creates a post with four images, answers X’s default fields, and shows the media and their alt text on request', async () => {
    const { access_token: token } = await connected();
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push(await uploadImage(token, png(i + 1, 1)));
    for (const [i, id] of ids.slice(0, 2).entries())
      await api(token, 'POST', '/2/media/metadata', { id, metadata: { alt_text: { text: `Picture ${i}` } } });
    const created = await post(token, { text: 'Four pictures', media: { media_ids: ids } });
    expect(created.status).toBe(201);
    const tweetId = created.body.data.id;
    expect(created.body).toEqual({ data: { id: tweetId, text: 'Four pictures', edit_history_tweet_ids: [tweetId] } });
    expect(created.headers.get('content-type')).toBe('application/json; charset=utf-8');

    const read = await api<Tweet>(
      token,
      'GET',
      `/2/tweets/${tweetId}?tweet.fields=attachments,author_id&expansions=attachments.media_keys&media.fields=alt_text,width`,
    );
    expect(read.body.data.attachments!.media_keys).toEqual(ids.map((id) => `3_${id}`));
    expect(read.body.data).toMatchObject({ author_id: x.account.id });
    expect(read.body.includes!.media).toEqual([
      { media_key: `3_${ids[0]}`, type: 'photo', alt_text: 'Picture 0', width: 1 },
      { media_key: `3_${ids[1]}`, type: 'photo', alt_text: 'Picture 1', width: 2 },
      { media_key: `3_${ids[2]}`, type: 'photo', width: 3 },
      { media_key: `3_${ids[3]}`, type: 'photo', width: 4 },
    ]);
    // The newest reference calls the parameter post.fields: both names are taken.
    expect((await api<Tweet>(token, 'GET', `/2/tweets/${tweetId}?post.fields=author_id`)).body.data.author_id).toBe(
      x.account.id,
    );

    const five = await post(token, { text: 'Five pictures', media: { media_ids: [...ids, ids[0]] } });
    expect(five.status).toBe(400);
    const animated = (await uploadChunked(token, gif(), 'image/gif', 'tweet_gif')).id;
    await status(token, animated);
    expect((await status(token, animated)).body.data.processing_info!.state).toBe('succeeded');
    const mixed = await post(token, { text: 'A GIF and a picture', media: { media_ids: [animated, ids[0]] } });
    expect(mixed.status).toBe(400);
    expect((await post(token, { text: 'A GIF', media: { media_ids: [animated] } })).status).toBe(201);
  });

  it('threads replies: each part answers the one before, all in the first one’s conversation', async () => {
    const { access_token: token } = await connected();
    const root = await post(token, { text: 'Thread 1/3', reply_settings: 'following' });
    const second = await post(token, { text: 'Thread 2/3', reply: { in_reply_to_tweet_id: root.body.data.id } });
    const third = await post(token, { text: 'Thread 3/3', reply: { in_reply_to_tweet_id: second.body.data.id } });
    expect([root.status, second.status, third.status]).toEqual([201, 201, 201]);
    const fields = 'tweet.fields=conversation_id,in_reply_to_user_id,referenced_tweets,reply_settings';
    const read = await api<Tweet>(token, 'GET', `/2/tweets/${third.body.data.id}?${fields}`);
    expect(read.body.data).toEqual({
      id: third.body.data.id,
      text: 'Thread 3/3',
      edit_history_tweet_ids: [third.body.data.id],
      conversation_id: root.body.data.id,
      in_reply_to_user_id: x.account.id,
      referenced_tweets: [{ type: 'replied_to', id: second.body.data.id }],
      reply_settings: 'everyone',
    });
    expect((await api<Tweet>(token, 'GET', `/2/tweets/${root.body.data.id}?${fields}`)).body.data.reply_settings).toBe(
      'following',
    );
    expect((await post(token, { text: 'Nobody may reply', reply_settings: 'nobody' })).status).toBe(400);

    expect((await api(token, 'DELETE', `/2/tweets/${third.body.data.id}`)).body).toEqual({ data: { deleted: true } });
    expect((await api(token, 'DELETE', `/2/tweets/${third.body.data.id}`)).body).toEqual({ data: { deleted: false } });
    const gone = await api(token, 'GET', `/2/tweets/${third.body.data.id}`);
    expect(gone.status).toBe(200);
    expect(gone.body.errors![0]).toMatchObject({ resource_type: 'tweet', title: 'Not Found Error' });
    expect(
      (await post(token, { text: 'Thread 4/3', reply: { in_reply_to_tweet_id: third.body.data.id } })).body,
    ).toEqual({
      detail: 'You attempted to reply to a Tweet that is deleted or not visible to you.',
      type: 'about:blank',
      title: 'Forbidden',
      status: 403,
    });
  });

  it('lists the account’s recent posts newest first, a page at a time, with their text as X shows it', async () => {
    const { access_token: token } = await connected();
    const marker = (await post(token, { text: 'Before the list' })).body.data.id;
    const texts = ['One', 'Two', 'Three', 'Four', 'Five', 'Six'].map((word) => `List ${word}`);
    const ids = [];
    for (const text of texts) ids.push((await post(token, { text })).body.data.id);
    const reply = await post(token, { text: 'List reply', reply: { in_reply_to_tweet_id: ids[0] } });
    const timeline = (query: string, since = marker) =>
      api<Tweet[]>(token, 'GET', `/2/users/${x.account.id}/tweets?since_id=${since}&${query}`);

    const first = await timeline('max_results=5&tweet.fields=created_at');
    expect(first.body.data.map((t) => t.id)).toEqual([reply.body.data.id, ...ids.slice(2).reverse()]);
    expect(first.body.data[0]!.created_at).toEqual(anyString());
    expect(first.body.meta).toEqual({
      result_count: 5,
      newest_id: reply.body.data.id,
      oldest_id: ids[2],
      next_token: anyString(),
    });
    const second = await timeline(`max_results=5&pagination_token=${first.body.meta!.next_token}`);
    expect(second.body.data.map((t) => t.text)).toEqual(['List Two', 'List One']);
    expect(second.body.meta!.next_token).toBeUndefined();
    expect((await timeline('exclude=replies')).body.data.map((t) => t.id)).toEqual([...ids].reverse());
    expect((await timeline('max_results=4')).status).toBe(400);
    const stranger = await api(token, 'GET', '/2/users/2244994945/tweets');
    expect(stranger.body.errors![0]).toMatchObject({ resource_type: 'user', resource_id: '2244994945' });

    // URLs become t.co links, and &, < and > are escaped.
    const sent = 'Fish & chips <3 https://example.com/a/rather/long/path/to/the/menu';
    const linked = await post(token, { text: sent });
    expect(linked.body.data.text).toMatch(/^Fish &amp; chips &lt;3 https:\/\/t\.co\/[A-Za-z0-9]{10}$/);
    const listed = await timeline('tweet.fields=entities', reply.body.data.id);
    const shown = listed.body.data.find((t) => t.id === linked.body.data.id)!;
    expect(shown.entities!.urls).toEqual([
      {
        start: 23,
        end: 46,
        url: shown.text.slice(23),
        expanded_url: 'https://example.com/a/rather/long/path/to/the/menu',
        display_url: 'example.com/a/rather/long…',
      },
    ]);

    // A new post may show in the timeline only after a while.
    x.timelineDelay(30);
    try {
      const late = (await post(token, { text: 'List late' })).body.data.id;
      expect((await timeline('', linked.body.data.id)).body.meta).toEqual({ result_count: 0 });
      x.advanceClock(31);
      expect((await timeline('', linked.body.data.id)).body.data.map((t) => t.id)).toEqual([late]);
    } finally {
      x.timelineDelay(0);
    }
  });

  it('creates a post whose answer is lost; the timeline shows it, and the same text again is a duplicate', async () => {
    const { access_token: token } = await connected();
    x.loseNextAnswer('createPosts');
    await expect(post(token, { text: 'Lost in transit' })).rejects.toThrow();
    const created = x.tweets.at(-1)!;
    expect(created).toMatchObject({ sentText: 'Lost in transit', answerLost: true, deleted: false });
    const recent = await api<Tweet[]>(token, 'GET', `/2/users/${x.account.id}/tweets?max_results=5`);
    expect(recent.body.data[0]).toEqual({
      id: created.id,
      text: 'Lost in transit',
      edit_history_tweet_ids: [created.id],
    });
    expect((await post(token, { text: 'Lost in transit' })).body).toEqual({
      detail: 'You are not allowed to create a Tweet with duplicate content.',
      type: 'about:blank',
      title: 'Forbidden',
      status: 403,
    });
    expect(x.tweets.filter((t) => t.sentText === 'Lost in transit')).toHaveLength(1);

    x.refuseNextAsDuplicate();
    expect((await post(token, { text: 'Never said before' })).status).toBe(403);
    expect((await post(token, { text: 'Never said before' })).status).toBe(201);
  });

  it('creates a slow post though its caller went away while it waited; the timeline shows it', async () => {
    const { access_token: token } = await connected();
    x.slowPosts(1000);
    try {
      const gone = new AbortController();
      const sent = fetch(`${x.url}/2/tweets`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ text: 'Slow and steady' }),
        signal: gone.signal,
      });
      await eventually(() => expect(x.postsInFlight()).toBe(1));
      gone.abort();
      await expect(sent).rejects.toThrow();
      await eventually(() => expect(x.postsInFlight()).toBe(0));
      const [created] = x.tweets.filter((t) => t.sentText === 'Slow and steady');
      const recent = await api<Tweet[]>(token, 'GET', `/2/users/${x.account.id}/tweets?max_results=5`);
      expect(recent.body.data[0]!.id).toBe(created!.id);
    } finally {
      x.slowPosts(0);
    }
  });

  it('counts a text by its weighted length: 280 passes, more is refused; a URL counts 23, emoji and CJK 2', async () => {
    const { access_token: token } = await connected();
    const tooLong = await post(token, { text: 'b'.repeat(281) });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body).toMatchObject({
      title: 'Invalid Request',
      type: 'https://api.x.com/2/problems/invalid-request',
    });
    expect(tooLong.body.errors![0]!.message).toMatch(/^Your Tweet text is too long\./);
    const statuses = async (texts: string[]) =>
      Promise.all(texts.map(async (text) => (await post(token, { text })).status));
    expect(await statuses(['a'.repeat(280), '漢'.repeat(140), '👍'.repeat(140)])).toEqual([201, 201, 201]);
    expect(await statuses(['漢'.repeat(141), '👍'.repeat(141)])).toEqual([400, 400]);
    // 256 + a space + 23 for the URL, however long it is.
    const withUrl = `${'c'.repeat(256)} https://example.com/${'p'.repeat(200)}`;
    expect((await post(token, { text: withUrl })).status).toBe(201);
    expect((await post(token, { text: `${withUrl}!` })).status).toBe(400);
  });

  it('refuses what is not X’s request: a body that is not JSON, a field X does not know, one the fake does not model', async () => {
    const { access_token: token } = await connected();
    const response = await fetch(`${x.url}/2/tweets`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'text/plain' },
      body: 'Hello',
    });
    expect(response.status).toBe(400);
    expect((await bodyOf<Problem>(response)).errors![0]!.message).toBe(
      'Requests with bodies must have content-type of application/json.',
    );
    expect((await post(token, { text: 'Hello', colour: 'blue' })).status).toBe(400);
    const poll = await post(token, { text: 'Which?', poll: { options: ['A', 'B'], duration_minutes: 60 } });
    expect(poll.body.errors![0]!.message).toBe('The fake X does not model `poll`.');
    expect((await post(token, {})).status).toBe(400);
  });
});

describe('limits and failures', () => {
  it('says in its headers how many posts are left, answers 429 with the reset when a limit is used up, and takes posts after it', async () => {
    let { access_token: token } = await connected();
    const one = await post(token, { text: 'Counting 1' });
    const two = await post(token, { text: 'Counting 2' });
    expect(one.headers.get('x-rate-limit-limit')).toBe('100');
    expect(Number(two.headers.get('x-rate-limit-remaining'))).toBe(
      Number(one.headers.get('x-rate-limit-remaining')) - 1,
    );
    expect(two.headers.get('x-app-limit-24hour-limit')).toBe('10000');
    expect(two.headers.get('x-user-limit-24hour-limit')).toBe('2400');
    const count = x.tweets.length;

    /** The reset X should give for a limit used up now for `seconds`, give or take the time the call took. */
    const refused = async (
      text: string,
      window: 'x-rate-limit' | 'x-user-limit-24hour' | 'x-app-limit-24hour',
      seconds: number,
    ) => {
      const before = Math.ceil((x.now() + seconds * 1000) / 1000);
      x.exhaustLimit(
        'createPosts',
        window === 'x-rate-limit' ? '15min' : window === 'x-app-limit-24hour' ? 'app-24hour' : 'user-24hour',
        seconds,
      );
      const answer = await post(token, { text });
      const after = Math.ceil((x.now() + seconds * 1000) / 1000);
      expect(answer.status).toBe(429);
      expect(answer.body).toEqual({
        title: 'Too Many Requests',
        detail: 'Too Many Requests',
        type: 'about:blank',
        status: 429,
      });
      expect(answer.headers.get(`${window}-remaining`)).toBe('0');
      const reset = Number(answer.headers.get(`${window}-reset`));
      expect(reset).toBeGreaterThanOrEqual(before);
      expect(reset).toBeLessThanOrEqual(after);
      return answer;
    };
    await refused('Counting 3', 'x-rate-limit', 600);
    x.advanceClock(601);
    expect((await post(token, { text: 'Counting 3' })).status).toBe(201);

    // The account's daily cap: the 15-minute window still has calls left.
    const daily = await refused('Counting 4', 'x-user-limit-24hour', 3600);
    expect(Number(daily.headers.get('x-rate-limit-remaining'))).toBeGreaterThan(0);
    x.advanceClock(3601);
    expect((await post(token, { text: 'Counting 4' })).status).toBe(201);

    await refused('Counting 5', 'x-app-limit-24hour', 7200);
    x.advanceClock(7201);
    // Two hours on, the access token has expired too.
    token = (await connected()).access_token;
    expect((await post(token, { text: 'Counting 5' })).status).toBe(201);
    // The refused calls created nothing.
    expect(x.tweets.length).toBe(count + 3);
  });

  it('fails the next call with a 5xx, having done nothing or, when applied, having created the post', async () => {
    const tokens = await connected();
    const count = x.tweets.length;
    x.failNext('createPosts', 503);
    const unavailable = await post(tokens.access_token, { text: 'Down for a moment' });
    expect(unavailable.status).toBe(503);
    expect(unavailable.body).toEqual({
      title: 'Service Unavailable',
      detail: 'Service Unavailable',
      type: 'about:blank',
      status: 503,
    });
    expect(x.tweets.length).toBe(count);
    x.failNext('createPosts', 500, { applied: true });
    expect((await post(tokens.access_token, { text: 'Done despite the error' })).status).toBe(500);
    expect(x.tweets.at(-1)!.sentText).toBe('Done despite the error');

    x.failNext('token', 503);
    const refresh = { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! };
    expect((await oauth('token', refresh)).status).toBe(503);
    expect((await oauth('token', refresh)).status).toBe(200);
  });

  it('rotates a refresh token whose answer is lost: the caller never hears of the new one, and the old one is dead', async () => {
    const tokens = await connected();
    x.loseNextAnswer('token');
    await expect(
      oauth('token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! }),
    ).rejects.toThrow();
    expect((await oauth('token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! })).body).toEqual(
      INVALID_TOKEN,
    );
  });
});
