import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodyOf } from './support/api.js';
import { chunkProblem, startFakeTikTok, type FakeTikTok } from './support/fake-tiktok.js';
import { anyString } from './support/typed-matchers.js';

// The fake TikTok the TikTok tests rely on, held to what TikTok documents for Login Kit, the Content
// Posting API (chunk rules, status sequence, per-token limits) and the Display API, so that what
// passes against it would pass against TikTok.
const MB = 1024 * 1024;
const REDIRECT_URI = 'http://127.0.0.1:9/channels/callback/tiktok';
const ALL_SCOPES = 'user.info.basic,user.info.stats,video.list,video.publish,video.upload';
let tiktok: FakeTikTok;

/** What TikTok's token endpoint answers: the tokens, or an error with its log id (Login Kit). */
interface TokenAnswer {
  access_token: string;
  refresh_token: string;
  open_id: string;
  expires_in: number;
  refresh_expires_in: number;
  scope: string;
  token_type: string;
  error?: string;
  log_id?: string;
}
/** TikTok's API envelope: `data`, and `error`, whose code is `ok` when there is none. */
interface Envelope<Data> {
  data: Data;
  error: { code: string; message: string; log_id: string };
}
interface PublishInit {
  publish_id: string;
  upload_url: string;
}
interface PublishStatus {
  status: string;
  uploaded_bytes?: number;
  fail_reason?: string;
}
interface VideoPage {
  videos: { id: string; create_time?: number }[];
  cursor: number;
  has_more: boolean;
}

beforeAll(async () => {
  tiktok = await startFakeTikTok({ account: { displayName: 'Acme on TikTok', username: 'acme' } });
});
afterAll(async () => {
  await tiktok?.close();
});

async function consent(params: Record<string, string> = {}): Promise<URL> {
  const query = new URLSearchParams({
    client_key: tiktok.clientKey,
    response_type: 'code',
    scope: ALL_SCOPES,
    redirect_uri: REDIRECT_URI,
    state: 'st-1',
    ...params,
  });
  const response = await fetch(`${tiktok.url}/v2/auth/authorize/?${query.toString()}`, { redirect: 'manual' });
  expect(response.status).toBe(302);
  return new URL(response.headers.get('location')!);
}

async function token(form: Record<string, string>) {
  const response = await fetch(`${tiktok.url}/v2/oauth/token/`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_key: tiktok.clientKey, client_secret: tiktok.clientSecret, ...form }),
  });
  return { status: response.status, body: await bodyOf<TokenAnswer>(response) };
}

async function connected(scope = ALL_SCOPES) {
  const code = (await consent({ scope })).searchParams.get('code')!;
  return (await token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI })).body;
}

/** A request to TikTok's API with the token; its answer's `data` is what the test names. */
async function api<Data = Record<string, unknown>>(accessToken: string, path: string, body?: unknown) {
  const response = await fetch(`${tiktok.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: {
      Authorization: `Bearer ${accessToken}`,
      ...(body === undefined ? {} : { 'Content-Type': 'application/json; charset=UTF-8' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: await bodyOf<Envelope<Data>>(response) };
}

describe('Login Kit', () => {
  it('gives a code and the granted scopes with state, and refuses a code twice or with another redirect URI', async () => {
    const back = await consent();
    expect(back.searchParams.get('state')).toBe('st-1');
    expect(back.searchParams.get('scopes')).toBe(ALL_SCOPES);
    const code = back.searchParams.get('code')!;
    expect(
      (await token({ grant_type: 'authorization_code', code, redirect_uri: 'http://127.0.0.1:9/elsewhere' })).body
        .error,
    ).toBe('invalid_request');
    const granted = await token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI });
    expect(granted.status).toBe(200);
    expect(granted.body).toMatchObject({
      open_id: tiktok.account.openId,
      expires_in: 86_400,
      refresh_expires_in: 31_536_000,
      scope: ALL_SCOPES,
      token_type: 'Bearer',
    });
    const again = await token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI });
    expect(again.status).toBe(400);
    expect(again.body).toMatchObject({ error: 'invalid_grant' });
    expect(again.body.log_id).toMatch(/^\d{14}[0-9A-F]+$/);
  });

  it('answers access_denied when the user cancels', async () => {
    tiktok.deny();
    const back = await consent();
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('state')).toBe('st-1');
    expect(back.searchParams.get('code')).toBeNull();
  });

  it('rotates refresh tokens: each refresh answers a new one, and a used one is refused', async () => {
    const first = await connected();
    const refreshed = await token({ grant_type: 'refresh_token', refresh_token: first.refresh_token });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.refresh_token).not.toBe(first.refresh_token);
    expect((await token({ grant_type: 'refresh_token', refresh_token: first.refresh_token })).body.error).toBe(
      'invalid_grant',
    );
    expect((await token({ grant_type: 'refresh_token', refresh_token: refreshed.body.refresh_token })).status).toBe(
      200,
    );
  });

  it('revokes a token: the account’s tokens stop working', async () => {
    const tokens = await connected();
    const revoked = await fetch(`${tiktok.url}/v2/oauth/revoke/`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        client_key: tiktok.clientKey,
        client_secret: tiktok.clientSecret,
        token: tokens.access_token,
      }),
    });
    expect(revoked.status).toBe(200);
    expect(await bodyOf<unknown>(revoked)).toEqual({});
    const refused = await api(tokens.access_token, '/v2/user/info/?fields=open_id');
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('access_token_invalid');
    expect((await token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token })).body.error).toBe(
      'invalid_grant',
    );
  });
});

describe('the API', () => {
  it('answers the envelope, only the fields asked for, and scope_not_authorized for a scope not granted', async () => {
    const tokens = await connected('user.info.basic,video.publish');
    const info = await api(tokens.access_token, '/v2/user/info/?fields=open_id,display_name');
    expect(info.body).toEqual({
      data: { user: { open_id: tiktok.account.openId, display_name: 'Acme on TikTok' } },
      error: { code: 'ok', message: '', log_id: anyString() },
    });
    const stats = await api(tokens.access_token, '/v2/user/info/?fields=follower_count');
    expect(stats.status).toBe(401);
    expect(stats.body.error.code).toBe('scope_not_authorized');
    expect((await api(tokens.access_token, '/v2/video/list/?fields=id', {})).body.error.code).toBe(
      'scope_not_authorized',
    );
  });

  it('allows 20 creator-info queries a minute per token, then 429 rate_limit_exceeded', async () => {
    const tokens = await connected();
    for (let i = 0; i < 20; i++)
      expect((await api(tokens.access_token, '/v2/post/publish/creator_info/query/', {})).status).toBe(200);
    const refused = await api(tokens.access_token, '/v2/post/publish/creator_info/query/', {});
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('rate_limit_exceeded');
    tiktok.advanceClock(61);
    expect((await api(tokens.access_token, '/v2/post/publish/creator_info/query/', {})).status).toBe(200);
  });

  it('holds chunk sizes to TikTok’s rules', () => {
    expect(chunkProblem(3 * MB, 3 * MB, 1)).toBeUndefined();
    expect(chunkProblem(3 * MB, 1 * MB, 3)).toMatch(/under 5 MB/);
    expect(chunkProblem(12 * MB, 5 * MB, 2)).toBeUndefined();
    expect(chunkProblem(12 * MB, 5 * MB, 3)).toMatch(/rounded down/);
    expect(chunkProblem(12 * MB, 4 * MB, 3)).toMatch(/5 MB to 64 MB/);
    expect(chunkProblem(200 * MB, 65 * MB, 3)).toMatch(/5 MB to 64 MB/);
    expect(chunkProblem(200 * MB, 64 * MB, 3)).toBeUndefined();
    expect(chunkProblem(250 * MB, 100 * MB, 2)).toMatch(/5 MB to 64 MB/);
  });

  it('takes a video in order, 206 until the last chunk and 201 then, and reports the publication’s status', async () => {
    const tokens = await connected();
    const size = 12 * MB;
    const init = await api<PublishInit>(tokens.access_token, '/v2/post/publish/video/init/', {
      post_info: { title: 'Hello', privacy_level: 'PUBLIC_TO_EVERYONE' },
      source_info: { source: 'FILE_UPLOAD', video_size: size, chunk_size: 5 * MB, total_chunk_count: 2 },
    });
    expect(init.status).toBe(200);
    const { publish_id: publishId, upload_url: uploadUrl } = init.body.data;
    const bytes = Buffer.alloc(size, 7);
    const put = (start: number, end: number) =>
      fetch(uploadUrl, {
        method: 'PUT',
        headers: { 'Content-Type': 'video/mp4', 'Content-Range': `bytes ${start}-${end}/${size}` },
        body: bytes.subarray(start, end + 1),
      });
    // Out of order: refused.
    expect((await put(5 * MB, size - 1)).status).toBe(416);
    expect((await put(0, 5 * MB - 1)).status).toBe(206);
    const status = async () =>
      (await api<PublishStatus>(tokens.access_token, '/v2/post/publish/status/fetch/', { publish_id: publishId })).body
        .data;
    expect(await status()).toMatchObject({ status: 'PROCESSING_UPLOAD', uploaded_bytes: 5 * MB });
    expect((await put(5 * MB, size - 1)).status).toBe(201);
    expect(await status()).toMatchObject({ status: 'PROCESSING_UPLOAD', uploaded_bytes: size });
    const done = await fetch(`${tiktok.url}/v2/post/publish/status/fetch/`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${tokens.access_token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ publish_id: publishId }),
    });
    const text = await done.text();
    // The post id is an int64, written as a JSON number.
    expect(text).toMatch(/"publicaly_available_post_id":\[7\d{18}\]/);
    expect((JSON.parse(text) as Envelope<PublishStatus>).data.status).toBe('PUBLISH_COMPLETE');
    expect(tiktok.videoBytes(publishId)!.equals(bytes)).toBe(true);
  });

  it('refuses a privacy level the creator does not allow, and anything but SELF_ONLY from an unaudited app', async () => {
    const tokens = await connected();
    const init = (privacy: string) =>
      api(tokens.access_token, '/v2/post/publish/video/init/', {
        post_info: { privacy_level: privacy },
        source_info: { source: 'FILE_UPLOAD', video_size: 1000, chunk_size: 1000, total_chunk_count: 1 },
      });
    expect((await init('FOLLOWER_OF_CREATOR')).body.error.code).toBe('privacy_level_option_mismatch');
    tiktok.unaudited(true);
    try {
      expect((await init('PUBLIC_TO_EVERYONE')).body.error.code).toBe(
        'unaudited_client_can_only_post_to_private_accounts',
      );
      const creator = await api<{ privacy_level_options: string[] }>(
        tokens.access_token,
        '/v2/post/publish/creator_info/query/',
        {},
      );
      expect(creator.body.data.privacy_level_options).toEqual(['SELF_ONLY']);
      expect((await init('SELF_ONLY')).status).toBe(200);
    } finally {
      tiktok.unaudited(false);
    }
  });

  it('allows 6 inits a minute per token, refuses an unverified PULL_FROM_URL, and fails a publication with its reason', async () => {
    const tokens = await connected();
    const pull = await api<PublishInit>(tokens.access_token, '/v2/post/publish/inbox/video/init/', {
      source_info: { source: 'PULL_FROM_URL', video_url: 'https://media.example/v.mp4' },
    });
    expect(pull.status).toBe(403);
    expect(pull.body.error.code).toBe('url_ownership_unverified');
    const inits: { status: number; body: Envelope<PublishInit> }[] = [];
    for (let i = 0; i < 6; i++) {
      inits.push(
        await api<PublishInit>(tokens.access_token, '/v2/post/publish/inbox/video/init/', {
          source_info: { source: 'FILE_UPLOAD', video_size: 10, chunk_size: 10, total_chunk_count: 1 },
        }),
      );
    }
    // The refused PULL_FROM_URL counted: the sixth is over the limit.
    expect(inits.map((i) => i.status)).toEqual([200, 200, 200, 200, 200, 429]);
    tiktok.failNextPublication('frame_rate_check_failed');
    const { publish_id: publishId, upload_url: uploadUrl } = inits[0]!.body.data;
    expect(
      (
        await fetch(uploadUrl, {
          method: 'PUT',
          headers: { 'Content-Type': 'video/mp4', 'Content-Range': 'bytes 0-9/10' },
          body: Buffer.alloc(10),
        })
      ).status,
    ).toBe(201);
    const status = async () =>
      (await api<PublishStatus>(tokens.access_token, '/v2/post/publish/status/fetch/', { publish_id: publishId })).body
        .data;
    expect((await status()).status).toBe('PROCESSING_UPLOAD');
    expect(await status()).toMatchObject({ status: 'FAILED', fail_reason: 'frame_rate_check_failed' });
  });

  it('lists videos newest first, at most 20 a page, with a cursor to the next', async () => {
    const tokens = await connected();
    const base = Math.floor(Date.now() / 1000) - 86_400;
    tiktok.addVideos(
      Array.from({ length: 25 }, (_, i) => ({
        id: String(7_000_000_000_000 + i),
        title: `Video ${i}`,
        createTime: base + i * 60,
        duration: 10,
        coverImageUrl: `https://cover.example/${i}.jpeg`,
        shareUrl: `https://www.tiktok.com/@acme/video/${i}`,
        viewCount: i,
        likeCount: 0,
        commentCount: 0,
        shareCount: 0,
      })),
    );
    // From just after the newest of these (the post published above is newer still).
    const first = await api<VideoPage>(tokens.access_token, '/v2/video/list/?fields=id,create_time', {
      max_count: 20,
      cursor: (base + 24 * 60 + 1) * 1000,
    });
    expect(first.body.data.videos).toHaveLength(20);
    expect(first.body.data.videos[0]).toEqual({ id: String(7_000_000_000_024), create_time: base + 24 * 60 });
    expect(first.body.data.has_more).toBe(true);
    const second = await api<VideoPage>(tokens.access_token, '/v2/video/list/?fields=id', {
      max_count: 20,
      cursor: first.body.data.cursor,
    });
    expect(second.body.data.videos.map((v) => v.id)).toEqual([4, 3, 2, 1, 0].map((i) => String(7_000_000_000_000 + i)));
    expect(second.body.data.has_more).toBe(false);
    expect((await api(tokens.access_token, '/v2/video/list/?fields=id', { max_count: 21 })).body.error.code).toBe(
      'invalid_params',
    );
  });
});
