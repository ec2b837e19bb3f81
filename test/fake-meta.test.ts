import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bodyOf } from './support/api.js';
import { eventually } from './support/eventually.js';
import { startFakeMeta, type FakeMeta } from './support/fake-meta.js';
import { jpeg, mp4, png } from './support/media-samples.js';
import { startRemoteServer, type RemoteServer } from './support/remote-server.js';
import { anyNumber, anyString, stringMatching } from './support/typed-matchers.js';

// The fake Meta Graph API that the Facebook and Instagram adapters' tests will rely on, held to what
// developers.facebook.com documents for Facebook Login for Business, Page publishing, Instagram content
// publishing and the Graph API's errors and limits, so that what passes against it would pass against Meta.
const V = 'v23.0';
const REDIRECT_URI = 'http://127.0.0.1:9/channels/callback/facebook';
const SCOPES = [
  'pages_show_list',
  'pages_read_engagement',
  'pages_manage_posts',
  'pages_manage_engagement',
  'business_management',
  'instagram_basic',
  'instagram_content_publish',
  'instagram_manage_comments',
];
const PAGE = '110000000000001';
const OTHER_PAGE = '110000000000002';
const IG = '17841400000000001';
const KB = 1024;

let meta: FakeMeta;
let media: RemoteServer;

/** Meta's error envelope. */
interface GraphErrorEnvelope {
  error: {
    message: string;
    type: string;
    code: number;
    error_subcode?: number;
    is_transient?: boolean;
    error_user_title?: string;
    error_user_msg?: string;
    fbtrace_id: string;
  };
}
type Body = Record<string, unknown> & Partial<GraphErrorEnvelope>;
interface List {
  data: Record<string, unknown>[];
  paging?: { cursors: { before: string; after: string }; next?: string };
}

beforeAll(async () => {
  // A web server on loopback standing in for the installation's public media URLs.
  media = await startRemoteServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://media').pathname;
    if (path === '/photo.jpg') res.writeHead(200, { 'Content-Type': 'image/jpeg' }).end(jpeg());
    else if (path === '/photo.png') res.writeHead(200, { 'Content-Type': 'image/png' }).end(png(4, 4));
    else if (path === '/huge.jpg') res.writeHead(200, { 'Content-Type': 'image/jpeg' }).end(jpeg(9 * 1024 * KB));
    else if (path === '/reel.mp4') res.writeHead(200, { 'Content-Type': 'video/mp4' }).end(mp4(64 * KB));
    else res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not here');
  });
});
afterAll(async () => {
  await media?.close();
});
beforeEach(async () => {
  meta = await startFakeMeta();
});
afterEach(async () => {
  await meta?.close();
});

/** A Graph API call: GET parameters in the query, others as a form; a FormData body as it is. */
async function graph(
  method: string,
  path: string,
  params: Record<string, string> = {},
  options: { form?: FormData; headers?: Record<string, string>; body?: Buffer } = {},
) {
  const url = new URL(`${meta.url}${path.startsWith('/v') ? '' : `/${V}`}${path}`);
  let body: RequestInit['body'] = options.form;
  if (options.body) body = new Uint8Array(options.body);
  else if (!options.form) {
    if (method === 'GET' || method === 'DELETE')
      for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
    else body = new URLSearchParams(params);
  }
  const response = await fetch(url, { method, body, headers: options.headers });
  return { status: response.status, headers: response.headers, body: await bodyOf<Body>(response) };
}

/** The login dialog's answer: where Meta sends the browser back. */
async function dialog(params: Record<string, string>): Promise<Response> {
  const query = new URLSearchParams({
    client_id: meta.appId,
    redirect_uri: REDIRECT_URI,
    state: 'st-1',
    response_type: 'code',
    ...params,
  });
  return fetch(`${meta.wwwUrl}/${V}/dialog/oauth?${query.toString()}`, { redirect: 'manual' });
}

async function code(scopes = SCOPES): Promise<string> {
  const back = await dialog({ scope: scopes.join(',') });
  expect(back.status).toBe(302);
  return new URL(back.headers.get('location')!).searchParams.get('code')!;
}

const exchange = (value: string, redirectUri = REDIRECT_URI) =>
  graph('GET', '/oauth/access_token', {
    client_id: meta.appId,
    client_secret: meta.appSecret,
    redirect_uri: redirectUri,
    code: value,
  });

/** Logged in and connected: a long-lived user token and the first Page's token derived from it. */
async function connected(scopes = SCOPES) {
  const short = (await exchange(await code(scopes))).body.access_token as string;
  const long = await graph('GET', '/oauth/access_token', {
    grant_type: 'fb_exchange_token',
    client_id: meta.appId,
    client_secret: meta.appSecret,
    fb_exchange_token: short,
  });
  const userToken = long.body.access_token as string;
  const accounts = (await graph('GET', '/me/accounts', { access_token: userToken })).body as unknown as List;
  const pageToken = (accounts.data.find((p) => p.id === PAGE)?.access_token as string | undefined) ?? '';
  return { short, userToken, pageToken };
}

/** A container created, polled until it settles: its id and its last status. */
async function container(token: string, params: Record<string, string>) {
  const created = await graph('POST', `/${IG}/media`, { access_token: token, ...params });
  expect(created.status).toBe(200);
  const id = created.body.id as string;
  let status: Body = {};
  for (let poll = 0; poll < 10; poll++) {
    status = (await graph('GET', `/${id}`, { access_token: token, fields: 'status_code,status' })).body;
    if (status.status_code !== 'IN_PROGRESS') break;
  }
  return { id, status };
}

const publish = (token: string, creationId: string) =>
  graph('POST', `/${IG}/media_publish`, { access_token: token, creation_id: creationId });

describe('Facebook Login for Business', () => {
  it('consents at once with the state, records what was asked, and exchanges the code once for a short-lived token', async () => {
    const back = await dialog({ scope: SCOPES.join(',') });
    expect(back.status).toBe(302);
    const location = back.headers.get('location')!;
    // Meta appends `#_=_` when the redirect URI has no fragment.
    expect(location.endsWith('#_=_')).toBe(true);
    const target = new URL(location);
    expect(target.origin + target.pathname).toBe(REDIRECT_URI);
    expect(target.searchParams.get('state')).toBe('st-1');
    expect(meta.authorizations).toEqual([
      {
        clientId: meta.appId,
        redirectUri: REDIRECT_URI,
        state: 'st-1',
        scopes: SCOPES,
        configId: null,
        outcome: 'approved',
      },
    ]);

    const value = target.searchParams.get('code')!;
    expect(await exchange(value, 'http://127.0.0.1:9/elsewhere')).toMatchObject({
      status: 400,
      body: { error: { code: 100, error_subcode: 36008, type: 'OAuthException', fbtrace_id: anyString() } },
    });
    const wrongSecret = await graph('GET', '/oauth/access_token', {
      client_id: meta.appId,
      client_secret: 'not-the-secret',
      redirect_uri: REDIRECT_URI,
      code: value,
    });
    expect(wrongSecret.body.error).toMatchObject({ message: 'Error validating client secret.', code: 1 });
    const granted = await exchange(value);
    expect(granted).toMatchObject({
      status: 200,
      body: { access_token: stringMatching(/^EAA/), token_type: 'bearer', expires_in: 3600 },
    });
    expect((await exchange(value)).body.error).toMatchObject({ code: 100, error_subcode: 36009 });
  });

  it('exchanges a short-lived user token for a long-lived one of about 60 days', async () => {
    const { short, userToken } = await connected();
    expect(userToken).not.toBe(short);
    const debug = await graph('GET', '/debug_token', {
      input_token: userToken,
      access_token: `${meta.appId}|${meta.appSecret}`,
    });
    const data = debug.body.data as Record<string, unknown>;
    expect(data).toMatchObject({ app_id: meta.appId, type: 'USER', is_valid: true, user_id: meta.user.id });
    expect((data.expires_at as number) - Math.floor(meta.now() / 1000)).toBeGreaterThan(59 * 86_400);
    expect(data.scopes).toEqual(['public_profile', ...SCOPES]);
  });

  it('answers a refusal with error=access_denied, and a Login for Business configuration with its permissions', async () => {
    meta.deny();
    const denied = new URL((await dialog({ scope: 'pages_show_list' })).headers.get('location')!);
    expect(Object.fromEntries(denied.searchParams)).toEqual({
      error: 'access_denied',
      error_code: '200',
      error_description: 'Permissions error',
      error_reason: 'user_denied',
      state: 'st-1',
    });
    expect((await dialog({ config_id: '987654321098765' })).status).toBe(302);
    expect(meta.authorizations.at(-1)).toMatchObject({ configId: '987654321098765', scopes: SCOPES });
    // A wrong request shows Meta's error page and sends nothing back to the app.
    const unknown = await dialog({ scope: 'pages_show_list,publish_everything' });
    expect(unknown.status).toBe(200);
    expect(await unknown.text()).toContain('Invalid Scopes: publish_everything');
    expect(meta.authorizations.at(-1)!.outcome).toBe('refused');
  });

  it('lists the chosen Pages with a non-expiring Page token each, their tasks and picture, and the linked Instagram account', async () => {
    meta.choosePages([PAGE, OTHER_PAGE]);
    const { userToken } = await connected();
    const me = await graph('GET', '/me', { access_token: userToken });
    expect(me.body).toEqual({ id: meta.user.id, name: 'Ada Owner' });
    const accounts = await graph('GET', '/me/accounts', {
      access_token: userToken,
      fields: 'id,name,access_token,tasks,picture{url}',
    });
    const list = accounts.body as unknown as List;
    expect(list.data.map((p) => [p.id, p.name])).toEqual([
      [PAGE, 'Acme Bakery'],
      [OTHER_PAGE, 'Acme Catering'],
    ]);
    expect(list.data[0]).toMatchObject({
      access_token: stringMatching(/^EAA/),
      tasks: expect.arrayContaining(['CREATE_CONTENT']) as string[],
      picture: { data: { url: anyString() } },
    });
    const pageToken = list.data[0]!.access_token as string;
    const debug = await graph('GET', '/debug_token', { input_token: pageToken, access_token: userToken });
    expect(debug.body.data).toMatchObject({ type: 'PAGE', profile_id: PAGE, expires_at: 0, is_valid: true });

    // The other way to a Page token: the same one.
    expect(
      (await graph('GET', `/${PAGE}`, { access_token: userToken, fields: 'access_token' })).body.access_token,
    ).toBe(pageToken);
    const linked = await graph('GET', `/${PAGE}`, { access_token: userToken, fields: 'instagram_business_account' });
    expect(linked.body).toEqual({ id: PAGE, instagram_business_account: { id: IG } });
    const notLinked = await graph('GET', `/${OTHER_PAGE}`, {
      access_token: userToken,
      fields: 'instagram_business_account',
    });
    expect(notLinked.body).toEqual({ id: OTHER_PAGE });
    const account = await graph('GET', `/${IG}`, { access_token: userToken, fields: 'username,name' });
    expect(account.body).toEqual({ id: IG, username: 'acme.bakery', name: 'Acme Bakery' });
  });

  it('gives the app only the Pages the user chose, and Page tokens of an hour from a short-lived user token', async () => {
    meta.choosePages([OTHER_PAGE]);
    const { short } = await connected();
    const list = (await graph('GET', '/me/accounts', { access_token: short })).body as unknown as List;
    expect(list.data.map((p) => p.id)).toEqual([OTHER_PAGE]);
    const hidden = await graph('GET', `/${PAGE}`, { access_token: short });
    expect(hidden.body.error).toMatchObject({ code: 100, error_subcode: 33, type: 'GraphMethodException' });
    const pageToken = meta.tokens.find((t) => t.kind === 'page' && t.derivedFrom === short)!;
    expect(pageToken.expiresAt! - pageToken.issuedAt).toBe(3_600_000);
  });

  it('reports declined permissions, revokes one, then removes the app: every token fails with 190/458', async () => {
    meta.grantOnly(['pages_show_list', 'pages_read_engagement']);
    const { userToken, pageToken } = await connected();
    const permissions = await graph('GET', '/me/permissions', { access_token: userToken });
    expect(permissions.body.data).toEqual([
      { permission: 'public_profile', status: 'granted' },
      { permission: 'pages_show_list', status: 'granted' },
      { permission: 'pages_read_engagement', status: 'granted' },
      ...SCOPES.slice(2).map((permission) => ({ permission, status: 'declined' })),
    ]);
    expect((await graph('DELETE', '/me/permissions/pages_show_list', { access_token: userToken })).body).toEqual({
      success: true,
    });
    expect(((await graph('GET', '/me/accounts', { access_token: userToken })).body as unknown as List).data).toEqual(
      [],
    );
    expect((await graph('DELETE', '/me/permissions', { access_token: userToken })).body).toEqual({ success: true });
    for (const token of [userToken, pageToken]) {
      const refused = await graph('GET', '/me', { access_token: token });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toMatchObject({
        code: 190,
        error_subcode: 458,
        message: `Error validating access token: The user has not authorized application ${meta.appId}.`,
      });
    }
  });

  it('ends tokens as Meta does: expiry (463), a password change (460); no token (104), a token it never issued (190)', async () => {
    const { short, userToken } = await connected();
    meta.advanceClock(3_601);
    const expired = await graph('GET', '/me', { access_token: short });
    expect(expired.body.error).toMatchObject({ code: 190, error_subcode: 463, type: 'OAuthException' });
    expect(expired.body.error!.message).toMatch(/^Error validating access token: Session has expired on .* PDT\./);
    expect((await graph('GET', '/me', { access_token: userToken })).status).toBe(200);
    meta.endTokens('password-changed');
    expect((await graph('GET', '/me', { access_token: userToken })).body.error).toMatchObject({
      code: 190,
      error_subcode: 460,
    });
    expect((await graph('GET', '/me')).body.error).toMatchObject({ code: 104 });
    expect((await graph('GET', '/me', { access_token: 'EAAnot-a-token' })).body.error).toMatchObject({
      code: 190,
      message: 'Invalid OAuth access token - Cannot parse access token',
    });
  });

  it('takes any version in the path, an unversioned path, and the token in the Authorization header', async () => {
    const { userToken } = await connected();
    const headers = { Authorization: `OAuth ${userToken}` };
    for (const path of ['/v19.0/me', '/v25.0/me']) expect((await graph('GET', path, {}, { headers })).status).toBe(200);
    expect((await fetch(`${meta.url}/me`, { headers })).status).toBe(200);
    expect(meta.requests.slice(-3).map((r) => [r.version, r.operation, r.token])).toEqual([
      ['v19.0', 'me', 'user'],
      ['v25.0', 'me', 'user'],
      [null, 'me', 'user'],
    ]);
  });
});

describe('Publishing to a Page', () => {
  it('posts a message with a link as the Page, whose permalink is asked, and lists the Page’s posts newest first', async () => {
    const { pageToken, userToken } = await connected();
    const posted = await graph('POST', `/${PAGE}/feed`, {
      access_token: pageToken,
      message: 'Fresh bread today',
      link: 'https://acme.example/bread',
    });
    expect(posted.status).toBe(200);
    const id = posted.body.id as string;
    expect(id).toMatch(new RegExp(`^${PAGE}_\\d+$`));
    const read = await graph('GET', `/${id}`, { access_token: pageToken, fields: 'permalink_url,message' });
    expect(read.body).toEqual({
      id,
      message: 'Fresh bread today',
      permalink_url: stringMatching(/^https:\/\/www\.facebook\.com\/acmebakery\/posts\/pfbid0/),
    });
    await graph('POST', `/${PAGE}/feed`, { access_token: pageToken, message: 'Second' });
    const listed = (await graph('GET', `/${PAGE}/posts`, { access_token: pageToken })).body as unknown as List;
    expect(listed.data.map((p) => p.message)).toEqual(['Second', 'Fresh bread today']);
    expect(listed.data[0]).toEqual({ id: anyString(), message: 'Second', created_time: anyString() });

    // A user token, or a Page token without pages_manage_posts, may not post as the Page.
    const asUser = await graph('POST', `/${PAGE}/feed`, { access_token: userToken, message: 'x' });
    expect(asUser.body.error).toMatchObject({ code: 200 });
    expect((await graph('POST', `/${PAGE}/feed`, { access_token: pageToken })).body.error).toMatchObject({
      code: 100,
      message: '(#100) Missing message or attachment',
    });
  });

  it('publishes a photo Meta fetches from its URL, and attaches unpublished photos to one feed post', async () => {
    const { pageToken } = await connected();
    const photo = await graph('POST', `/${PAGE}/photos`, {
      access_token: pageToken,
      url: `${media.origin}/photo.jpg`,
      caption: 'A loaf',
    });
    expect(photo.body).toEqual({ id: anyString(), post_id: stringMatching(new RegExp(`^${PAGE}_`)) });
    expect(meta.fetches.at(-1)).toEqual({ url: `${media.origin}/photo.jpg`, status: 200 });

    const form = new FormData();
    form.set('access_token', pageToken);
    form.set('published', 'false');
    form.set('source', new Blob([new Uint8Array(png(2, 2))], { type: 'image/png' }), 'p.png');
    const first = await graph('POST', `/${PAGE}/photos`, {}, { form });
    const second = await graph('POST', `/${PAGE}/photos`, {
      access_token: pageToken,
      url: `${media.origin}/photo.jpg`,
      published: 'false',
    });
    expect(first.body).toEqual({ id: anyString() });
    const post = await graph('POST', `/${PAGE}/feed`, {
      access_token: pageToken,
      message: 'Two photos',
      'attached_media[0]': JSON.stringify({ media_fbid: first.body.id }),
      'attached_media[1]': JSON.stringify({ media_fbid: second.body.id }),
    });
    expect(post.status).toBe(200);
    expect(meta.posts.at(-1)).toMatchObject({ kind: 'photo', photoIds: [first.body.id, second.body.id] });
    // A photo is attached once.
    const again = await graph('POST', `/${PAGE}/feed`, {
      access_token: pageToken,
      attached_media: JSON.stringify([{ media_fbid: first.body.id }]),
    });
    expect(again.body.error).toMatchObject({ code: 100 });
    const unfetchable = await graph('POST', `/${PAGE}/photos`, {
      access_token: pageToken,
      url: `${media.origin}/missing.jpg`,
    });
    expect(unfetchable.body.error).toMatchObject({ code: 324, message: '(#324) Missing or invalid image file' });
  });

  it('uploads a video with the Resumable Upload API, resumes a cut transfer from file_offset, and publishes it', async () => {
    const { userToken, pageToken } = await connected();
    const video = mp4(96 * KB);
    const started = await graph('POST', `/${meta.appId}/uploads`, {
      access_token: userToken,
      file_name: 'reel.mp4',
      file_length: String(video.length),
      file_type: 'video/mp4',
    });
    const session = started.body.id as string;
    expect(session).toMatch(/^upload:/);
    const transfer = (offset: number) =>
      graph(
        'POST',
        `/${session}`,
        {},
        {
          headers: { Authorization: `OAuth ${userToken}`, file_offset: String(offset) },
          body: video.subarray(offset),
        },
      );
    meta.cutUploadAfter(40 * KB);
    await expect(transfer(0)).rejects.toThrow();
    const status = await graph('GET', `/${session}`, {}, { headers: { Authorization: `OAuth ${userToken}` } });
    expect(status.body).toEqual({ id: session, file_offset: 40 * KB });
    expect((await transfer(0)).body.error).toMatchObject({ code: 100 });
    const done = await transfer(40 * KB);
    expect(done.body).toEqual({ h: anyString() });

    const published = await graph('POST', `/${PAGE}/videos`, {
      access_token: pageToken,
      title: 'Our ovens',
      description: 'Morning bake',
      fbuploader_video_file_chunk: done.body.h as string,
    });
    expect(published.body).toEqual({ id: anyString() });
    expect(meta.videos.at(-1)!.bytes.equals(video)).toBe(true);
    const read = await graph('GET', `/${published.body.id as string}`, {
      access_token: pageToken,
      fields: 'permalink_url',
    });
    // A video's permalink_url is relative to www.facebook.com.
    expect(read.body.permalink_url).toBe(`/acmebakery/videos/${published.body.id as string}/`);
  });

  it('comments on a post as the Page, and keeps a post whose answer was lost', async () => {
    const { pageToken } = await connected();
    meta.loseNextAnswer('pageFeed');
    await expect(graph('POST', `/${PAGE}/feed`, { access_token: pageToken, message: 'Lost' })).rejects.toThrow();
    const post = meta.posts.at(-1)!;
    expect(post).toMatchObject({ message: 'Lost', answerLost: true });
    const listed = (await graph('GET', `/${PAGE}/feed`, { access_token: pageToken })).body as unknown as List;
    expect(listed.data[0]!.id).toBe(post.id);
    meta.loseNextAnswer('pagePhotos');
    await expect(
      graph('POST', `/${PAGE}/photos`, { access_token: pageToken, url: `${media.origin}/photo.jpg` }),
    ).rejects.toThrow();
    expect(meta.posts.at(-1)).toMatchObject({ kind: 'photo', answerLost: true });
    const comment = await graph('POST', `/${post.id}/comments`, { access_token: pageToken, message: 'First!' });
    expect(comment.body).toEqual({ id: stringMatching(/^\d+_\d+$/) });
    expect(meta.comments).toEqual([expect.objectContaining({ objectId: post.id, message: 'First!' })]);
  });

  it('lists a post’s comments with who made them, and keeps a photo’s alt_text_custom', async () => {
    const { pageToken } = await connected();
    const post = await graph('POST', `/${PAGE}/feed`, { access_token: pageToken, message: 'Commented' });
    const postId = post.body.id as string;
    meta.loseNextAnswer('comments');
    await expect(
      graph('POST', `/${postId}/comments`, { access_token: pageToken, message: 'Lost comment' }),
    ).rejects.toThrow();
    const listed = await graph('GET', `/${postId}/comments`, {
      access_token: pageToken,
      fields: 'id,message,created_time,from',
    });
    expect(listed.body).toEqual({
      data: [
        {
          id: meta.comments.at(-1)!.id,
          message: 'Lost comment',
          created_time: stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+0000$/),
          from: { id: PAGE, name: 'Acme Bakery' },
        },
      ],
      paging: { cursors: { before: anyString(), after: anyString() } },
    });
    const photo = await graph('POST', `/${PAGE}/photos`, {
      access_token: pageToken,
      url: `${media.origin}/photo.jpg`,
      alt_text_custom: 'A loaf on a board',
    });
    expect(photo.status).toBe(200);
    expect(meta.photos.at(-1)!.altText).toBe('A loaf on a board');
  });
});

describe('Publishing to Instagram', () => {
  it('fetches the image from its URL, processes the container, publishes it once, and gives its permalink', async () => {
    const { userToken } = await connected();
    meta.processingPolls(2);
    const created = await graph('POST', `/${IG}/media`, {
      access_token: userToken,
      image_url: `${media.origin}/photo.jpg`,
      caption: 'Fresh #bread',
    });
    const id = created.body.id as string;
    expect(meta.fetches.at(-1)).toEqual({ url: `${media.origin}/photo.jpg`, status: 200 });
    expect((await publish(userToken, id)).body.error).toMatchObject({
      code: 9007,
      error_subcode: 2207027,
      message: 'Media ID is not available',
    });
    const statuses: unknown[] = [];
    for (let poll = 0; poll < 3; poll++)
      statuses.push((await graph('GET', `/${id}`, { access_token: userToken, fields: 'status_code' })).body);
    expect(statuses).toEqual([
      { id, status_code: 'IN_PROGRESS' },
      { id, status_code: 'IN_PROGRESS' },
      { id, status_code: 'FINISHED' },
    ]);
    const published = await publish(userToken, id);
    expect(published.status).toBe(200);
    const mediaId = published.body.id as string;
    expect((await publish(userToken, id)).body.error).toMatchObject({ code: 9007, error_subcode: 2207027 });
    expect((await graph('GET', `/${id}`, { access_token: userToken, fields: 'status_code' })).body.status_code).toBe(
      'PUBLISHED',
    );
    const read = await graph('GET', `/${mediaId}`, {
      access_token: userToken,
      fields: 'permalink,media_type,media_product_type,caption',
    });
    expect(read.body).toEqual({
      id: mediaId,
      permalink: stringMatching(/^https:\/\/www\.instagram\.com\/p\/[\w-]+\/$/),
      media_type: 'IMAGE',
      media_product_type: 'FEED',
      caption: 'Fresh #bread',
    });
    expect(meta.instagramMedia).toHaveLength(1);
    const limit = await graph('GET', `/${IG}/content_publishing_limit`, {
      access_token: userToken,
      fields: 'config,quota_usage',
    });
    expect(limit.body).toEqual({ data: [{ quota_usage: 1, config: { quota_total: 50, quota_duration: 86_400 } }] });
  });

  it('refuses an image it cannot fetch or that is not a JPEG at once (9004/2207052), and one over 8 MiB', async () => {
    const { userToken } = await connected();
    for (const path of ['/missing.jpg', '/photo.png']) {
      const refused = await graph('POST', `/${IG}/media`, {
        access_token: userToken,
        image_url: `${media.origin}${path}`,
      });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toMatchObject({ code: 9004, error_subcode: 2207052, fbtrace_id: anyString() });
    }
    expect(meta.fetches.slice(-2)).toEqual([
      { url: `${media.origin}/missing.jpg`, status: 404 },
      { url: `${media.origin}/photo.png`, status: 200 },
    ]);
    const closed = await graph('POST', `/${IG}/media`, {
      access_token: userToken,
      image_url: 'http://127.0.0.1:9/a.jpg',
    });
    expect(closed.body.error).toMatchObject({ code: 9004 });
    expect(meta.fetches.at(-1)).toEqual({ url: 'http://127.0.0.1:9/a.jpg', status: null });
    const huge = await graph('POST', `/${IG}/media`, {
      access_token: userToken,
      image_url: `${media.origin}/huge.jpg`,
    });
    expect(huge.body.error).toMatchObject({ code: 36000, error_subcode: 2207004 });
    expect(meta.containers).toEqual([]);
  });

  it('publishes a reel whose container takes three polls; a video it cannot fetch settles ERROR', async () => {
    const { userToken } = await connected();
    meta.processingPolls(3);
    const reel = await container(userToken, {
      media_type: 'REELS',
      video_url: `${media.origin}/reel.mp4`,
      caption: 'Behind the counter',
    });
    expect(reel.status.status_code).toBe('FINISHED');
    expect(meta.containers[0]!.polls).toBe(4);
    const published = await publish(userToken, reel.id);
    const read = await graph('GET', `/${published.body.id as string}`, {
      access_token: userToken,
      fields: 'media_type,media_product_type,permalink',
    });
    expect(read.body).toMatchObject({
      media_type: 'VIDEO',
      media_product_type: 'REELS',
      permalink: stringMatching(/^https:\/\/www\.instagram\.com\/reel\//),
    });

    meta.processingPolls(0);
    const broken = await container(userToken, { media_type: 'REELS', video_url: `${media.origin}/gone.mp4` });
    expect(broken.status).toEqual({
      id: broken.id,
      status_code: 'ERROR',
      status: "Error: Media download has failed. The media URI doesn't meet our requirements.",
    });
    expect((await publish(userToken, broken.id)).body.error).toMatchObject({ code: 9007 });
  });

  it('settles a container ERROR or EXPIRED by switch, and expires one left unpublished 24 hours', async () => {
    const { userToken } = await connected();
    meta.failNextContainer({ statusCode: 'ERROR', status: 'Error: The aspect ratio is not supported.' });
    const failed = await container(userToken, { image_url: `${media.origin}/photo.jpg` });
    expect(failed.status).toMatchObject({ status_code: 'ERROR', status: 'Error: The aspect ratio is not supported.' });
    meta.failNextContainer({ statusCode: 'EXPIRED' });
    const expired = await container(userToken, { image_url: `${media.origin}/photo.jpg` });
    expect(expired.status.status_code).toBe('EXPIRED');
    expect((await publish(userToken, expired.id)).body.error).toMatchObject({ code: -2, error_subcode: 2207020 });

    const ready = await container(userToken, { image_url: `${media.origin}/photo.jpg` });
    expect(ready.status.status_code).toBe('FINISHED');
    meta.advanceClock(24 * 3600);
    expect((await graph('GET', `/${ready.id}`, { access_token: userToken, fields: 'status_code' })).body).toEqual({
      id: ready.id,
      status_code: 'EXPIRED',
    });
    expect((await publish(userToken, ready.id)).body.error).toMatchObject({ code: -2, error_subcode: 2207020 });
  });

  it('publishes a carousel of three with collaborators and user tags on the carousel, never on its items', async () => {
    const { userToken } = await connected();
    const onItem = await graph('POST', `/${IG}/media`, {
      access_token: userToken,
      image_url: `${media.origin}/photo.jpg`,
      is_carousel_item: 'true',
      collaborators: JSON.stringify(['friend.bakery']),
    });
    expect(onItem.body.error).toMatchObject({ code: 100 });
    // VIDEO is for a carousel's video item; a video of its own is a reel.
    const alone = await graph('POST', `/${IG}/media`, {
      access_token: userToken,
      media_type: 'VIDEO',
      video_url: `${media.origin}/reel.mp4`,
    });
    expect(alone.body.error).toMatchObject({ code: 100 });
    // User tags go on the item of the image they tag, not on the carousel.
    const tags = JSON.stringify([{ username: 'ada', x: 0.5, y: 0.5 }]);
    const items = [];
    for (let i = 0; i < 2; i++)
      items.push(
        (
          await container(userToken, {
            image_url: `${media.origin}/photo.jpg`,
            is_carousel_item: 'true',
            ...(i === 1 ? { user_tags: tags } : {}),
          })
        ).id,
      );
    const videoItem = await container(userToken, {
      media_type: 'VIDEO',
      video_url: `${media.origin}/reel.mp4`,
      is_carousel_item: 'true',
    });
    items.push(videoItem.id);
    const tooFew = await graph('POST', `/${IG}/media`, {
      access_token: userToken,
      media_type: 'CAROUSEL',
      children: items[0]!,
    });
    expect(tooFew.body.error).toMatchObject({ code: 100 });
    const tagged = await graph('POST', `/${IG}/media`, {
      access_token: userToken,
      media_type: 'CAROUSEL',
      children: items.join(','),
      user_tags: tags,
    });
    expect(tagged.body.error).toMatchObject({ code: 100 });
    const carousel = await container(userToken, {
      media_type: 'CAROUSEL',
      children: items.join(','),
      caption: 'Three loaves',
      collaborators: JSON.stringify(['friend.bakery']),
    });
    expect(carousel.status.status_code).toBe('FINISHED');
    const published = await publish(userToken, carousel.id);
    const album = meta.instagramMedia.find((m) => m.id === published.body.id)!;
    expect(album).toMatchObject({ mediaType: 'CAROUSEL_ALBUM', collaborators: ['friend.bakery'], userTags: [] });
    expect(album.children.map((id) => meta.instagramMedia.find((m) => m.id === id)!.userTags)).toEqual([
      [],
      [{ username: 'ada', x: 0.5, y: 0.5 }],
      [],
    ]);
    expect(album.children.map((id) => meta.instagramMedia.find((m) => m.id === id)!.mediaType)).toEqual([
      'IMAGE',
      'IMAGE',
      'VIDEO',
    ]);
    const listed = (await graph('GET', `/${IG}/media`, { access_token: userToken, fields: 'id,media_type,children' }))
      .body as unknown as List;
    expect(listed.data).toEqual([
      { id: album.id, media_type: 'CAROUSEL_ALBUM', children: { data: album.children.map((id) => ({ id })) } },
    ]);
    // A carousel counts once against the publishing limit.
    expect((await graph('GET', `/${IG}/content_publishing_limit`, { access_token: userToken })).body).toEqual({
      data: [{ quota_usage: 1 }],
    });
  });

  it('publishes stories apart from the feed, and holds captions to 2,200 characters and 30 hashtags', async () => {
    const { userToken } = await connected();
    const story = await container(userToken, { media_type: 'STORIES', image_url: `${media.origin}/photo.jpg` });
    const published = await publish(userToken, story.id);
    const stories = (await graph('GET', `/${IG}/stories`, { access_token: userToken })).body as unknown as List;
    expect(stories.data).toEqual([{ id: published.body.id }]);
    expect(((await graph('GET', `/${IG}/media`, { access_token: userToken })).body as unknown as List).data).toEqual(
      [],
    );
    for (const caption of ['a'.repeat(2_201), Array.from({ length: 31 }, (_, i) => `#tag${i}`).join(' ')])
      expect(
        (
          await graph('POST', `/${IG}/media`, {
            access_token: userToken,
            image_url: `${media.origin}/photo.jpg`,
            caption,
          })
        ).body.error,
      ).toMatchObject({ code: 100 });
  });

  it('refuses publishing over the limit (9/2207042) until the moving 24 hours free it', async () => {
    const { userToken } = await connected();
    meta.usePublishingQuota(IG, 50);
    const ready = await container(userToken, { image_url: `${media.origin}/photo.jpg` });
    const refused = await publish(userToken, ready.id);
    expect(refused.body.error).toMatchObject({
      code: 9,
      error_subcode: 2207042,
      error_user_msg: 'You reached maximum number of posts that is allowed to be published by Content Publishing API.',
    });
    expect((await graph('GET', `/${IG}/content_publishing_limit`, { access_token: userToken })).body).toEqual({
      data: [{ quota_usage: 50 }],
    });
    meta.advanceClock(12 * 3600);
    const again = await container(userToken, { image_url: `${media.origin}/photo.jpg` });
    meta.advanceClock(12 * 3600 + 1);
    expect((await publish(userToken, again.id)).status).toBe(200);
  });

  it('keeps a publication whose answer was lost, and comments on media with instagram_manage_comments', async () => {
    const { userToken } = await connected();
    const ready = await container(userToken, { image_url: `${media.origin}/photo.jpg`, caption: 'Lost answer' });
    meta.loseNextAnswer('igMediaPublish');
    await expect(publish(userToken, ready.id)).rejects.toThrow();
    expect(meta.instagramMedia).toEqual([expect.objectContaining({ containerId: ready.id, answerLost: true })]);
    const status = await graph('GET', `/${ready.id}`, { access_token: userToken, fields: 'status_code' });
    expect(status.body.status_code).toBe('PUBLISHED');
    const listed = (await graph('GET', `/${IG}/media`, { access_token: userToken, fields: 'caption' }))
      .body as unknown as List;
    expect(listed.data).toEqual([{ id: meta.instagramMedia[0]!.id, caption: 'Lost answer' }]);

    const mediaId = meta.instagramMedia[0]!.id;
    const comment = await graph('POST', `/${mediaId}/comments`, { access_token: userToken, message: 'Link in bio' });
    expect(comment.body).toEqual({ id: anyString() });
    const comments = (await graph('GET', `/${mediaId}/comments`, { access_token: userToken, fields: 'id,text,from' }))
      .body as unknown as List;
    expect(comments.data).toEqual([
      { id: comment.body.id, text: 'Link in bio', from: { id: IG, username: 'acme.bakery' } },
    ]);
    meta.grantOnly(SCOPES.filter((s) => s !== 'instagram_manage_comments'));
    const { userToken: without } = await connected();
    const refused = await graph('POST', `/${mediaId}/comments`, { access_token: without, message: 'x' });
    expect(refused.body.error).toMatchObject({ code: 10 });
  });
  it('holds media_publish’s answer once the media is made: sent a moment later, or never to a caller that goes away', async () => {
    const { userToken } = await connected();
    const slow = await container(userToken, { image_url: `${media.origin}/photo.jpg`, caption: 'Answered late' });
    meta.holdNextAnswer('igMediaPublish', { ms: 300 });
    const late = publish(userToken, slow.id);
    await eventually(() => expect(meta.heldAnswers()).toBe(1));
    // The media is made before the answer is held.
    expect(meta.instagramMedia).toEqual([expect.objectContaining({ containerId: slow.id, caption: 'Answered late' })]);
    expect((await late).body).toEqual({ id: meta.instagramMedia[0]!.id });
    expect(meta.heldAnswers()).toBe(0);

    const never = await container(userToken, { image_url: `${media.origin}/photo.jpg`, caption: 'Never answered' });
    meta.holdNextAnswer('igMediaPublish');
    const caller = new AbortController();
    const waiting = fetch(`${meta.url}/${V}/${IG}/media_publish`, {
      method: 'POST',
      body: new URLSearchParams({ access_token: userToken, creation_id: never.id }),
      signal: caller.signal,
    });
    await eventually(() => expect(meta.heldAnswers()).toBe(1));
    caller.abort();
    await expect(waiting).rejects.toThrow();
    // The caller went away without its answer; the media stays, and its container says it was published.
    await eventually(() => expect(meta.heldAnswers()).toBe(0));
    expect(meta.instagramMedia.filter((m) => m.containerId === never.id)).toHaveLength(1);
    const status = await graph('GET', `/${never.id}`, { access_token: userToken, fields: 'status_code' });
    expect(status.body.status_code).toBe('PUBLISHED');
  });
});

describe('Errors and limits', () => {
  it('answers the rate-limit codes with the usage headers, and keeps every error with its fbtrace_id', async () => {
    const { userToken, pageToken } = await connected();
    const usage = (await graph('GET', '/me', { access_token: userToken })).headers.get('x-app-usage');
    expect(JSON.parse(usage!)).toEqual({
      call_count: anyNumber(),
      total_cputime: anyNumber(),
      total_time: anyNumber(),
    });

    meta.rateLimitNext(4);
    const app = await graph('GET', '/me', { access_token: userToken });
    expect(app.status).toBe(403);
    expect(app.body.error).toMatchObject({
      code: 4,
      is_transient: true,
      message: '(#4) Application request limit reached',
    });
    expect(JSON.parse(app.headers.get('x-app-usage')!)).toMatchObject({ call_count: 100 });

    meta.rateLimitNext(32, { operation: 'pageFeed' });
    expect((await graph('GET', '/me', { access_token: pageToken })).status).toBe(200);
    const page = await graph('POST', `/${PAGE}/feed`, { access_token: pageToken, message: 'x' });
    expect(page.body.error).toMatchObject({ code: 32 });
    expect(JSON.parse(page.headers.get('x-business-use-case-usage')!)).toEqual({
      [PAGE]: [
        {
          type: 'pages',
          call_count: 100,
          total_cputime: anyNumber(),
          total_time: anyNumber(),
          estimated_time_to_regain_access: 5,
        },
      ],
    });
    expect(meta.posts).toEqual([]);
    for (const code of [17, 613] as const) {
      meta.rateLimitNext(code);
      expect((await graph('GET', `/${IG}/media`, { access_token: userToken })).body.error).toMatchObject({ code });
    }
    expect(meta.errors.map((e) => e.code)).toEqual([4, 32, 17, 613]);
    expect(meta.errors[0]!.fbtrace_id).toBe(app.body.error!.fbtrace_id);
    expect(app.headers.get('x-fb-trace-id')).toBe(app.body.error!.fbtrace_id);
  });

  it('answers a switched error having done nothing, or having done the work', async () => {
    const { pageToken } = await connected();
    meta.failNext('pageFeed', {
      code: 10,
      message: '(#10) Application does not have permission for this action',
      status: 403,
    });
    const refused = await graph('POST', `/${PAGE}/feed`, { access_token: pageToken, message: 'x' });
    expect(refused).toMatchObject({ status: 403, body: { error: { code: 10, type: 'OAuthException' } } });
    expect(meta.posts).toEqual([]);
    meta.failNext(
      'pageFeed',
      { code: 2, message: 'An unexpected error has occurred.', status: 500, is_transient: true },
      { applied: true },
    );
    const failed = await graph('POST', `/${PAGE}/feed`, { access_token: pageToken, message: 'y' });
    expect(failed.status).toBe(500);
    expect(meta.posts.map((p) => p.message)).toEqual(['y']);
  });
});
