import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodyOf } from './support/api.js';
import { startFakeGoogle, type FakeGoogle } from './support/fake-google.js';
import { anyString, stringContaining } from './support/typed-matchers.js';

// The fake Google the YouTube tests rely on, held to the contract Google documents for its OAuth 2.0
// server (web server apps) and YouTube's resumable uploads, so that what passes against it would
// pass against Google.
const CHUNK = 256 * 1024;
const VIDEO_BYTES = 600 * 1024;
const REDIRECT_URI = 'http://127.0.0.1:9/channels/callback/youtube';
const UPLOAD_SCOPE = 'https://www.googleapis.com/auth/youtube.upload';
const READ_SCOPE = 'https://www.googleapis.com/auth/youtube.readonly';
let google: FakeGoogle;

beforeAll(async () => {
  google = await startFakeGoogle({
    account: { channelId: 'UC_fake_google_test_001', title: 'Acme Videos', handle: '@acmevideos' },
  });
});
afterAll(async () => {
  await google?.close();
});

function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** The consent page's answer to these parameters (the defaults are a well-formed offline request with PKCE). */
async function consent(params: Record<string, string | undefined> = {}): Promise<Response> {
  const query = new URLSearchParams();
  const all: Record<string, string | undefined> = {
    client_id: google.clientId,
    redirect_uri: REDIRECT_URI,
    response_type: 'code',
    scope: `${UPLOAD_SCOPE} ${READ_SCOPE}`,
    access_type: 'offline',
    prompt: 'consent',
    state: 'state-1',
    ...params,
  };
  for (const [name, value] of Object.entries(all)) if (value !== undefined) query.set(name, value);
  return fetch(`${google.url}/o/oauth2/v2/auth?${query.toString()}`, { redirect: 'manual' });
}

async function codeFrom(params: Record<string, string | undefined> = {}): Promise<string> {
  const answer = await consent(params);
  expect(answer.status).toBe(302);
  return new URL(answer.headers.get('location')!).searchParams.get('code')!;
}

async function tokenRequest(
  form: Record<string, string>,
  init: { headers?: Record<string, string>; withClient?: boolean } = {},
): Promise<Response> {
  const body = new URLSearchParams(
    init.withClient === false ? form : { client_id: google.clientId, client_secret: google.clientSecret, ...form },
  );
  return fetch(`${google.url}/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...init.headers },
    body,
  });
}

/** An error of Google's OAuth 2.0 server (RFC 6749 §5.2). */
interface OAuthError {
  error: string;
  error_description?: string;
}

/** An error of a Google API, in Google's shape (https://cloud.google.com/apis/design/errors). */
interface GoogleApiError {
  error: {
    code: number;
    message: string;
    status?: string;
    errors: { domain: string; reason: string; message: string }[];
  };
}

/** The parts of a YouTube resource these tests read (a channel, a video). */
interface Resource {
  kind: string;
  id: string;
}
interface ListResponse {
  kind: string;
  items: Resource[];
}

interface Tokens {
  access_token: string;
  refresh_token?: string;
  expires_in: number;
  scope: string;
  token_type: string;
}

/** Consent and exchange: the tokens a freshly connected channel holds. */
async function connect(params: Record<string, string | undefined> = {}): Promise<Tokens> {
  const { verifier, challenge } = pkce();
  const code = await codeFrom({ code_challenge: challenge, code_challenge_method: 'S256', ...params });
  const answer = await tokenRequest({
    grant_type: 'authorization_code',
    code,
    redirect_uri: REDIRECT_URI,
    code_verifier: verifier,
  });
  expect(answer.status).toBe(200);
  return await bodyOf<Tokens>(answer);
}

const channels = (accessToken?: string) =>
  fetch(`${google.url}/youtube/v3/channels?part=snippet&mine=true`, {
    headers: accessToken ? { Authorization: `Bearer ${accessToken}` } : {},
  });

describe('the consent page', () => {
  it('sends the browser back with a code, the exact state and the scopes granted', async () => {
    const state = 'a b/c?d=e&f=ü';
    const answer = await consent({ state });
    expect(answer.status).toBe(302);
    const back = new URL(answer.headers.get('location')!);
    expect(back.origin + back.pathname).toBe(REDIRECT_URI);
    expect(back.searchParams.get('state')).toBe(state);
    expect(back.searchParams.get('code')).toMatch(/^\S{20,}$/);
    expect(back.searchParams.get('scope')!.split(' ').sort()).toEqual([UPLOAD_SCOPE, READ_SCOPE].sort());
  });

  it('shows an error page, and sends nothing back, for an unknown client or a malformed request', async () => {
    const unknownClient = { client_id: 'someone-else.apps.googleusercontent.com' };
    for (const params of [
      unknownClient,
      { client_id: undefined },
      { redirect_uri: undefined },
      { redirect_uri: 'not a uri' },
    ]) {
      const answer = await consent(params);
      expect(answer.status, JSON.stringify(params)).toBe(400);
      expect(answer.headers.get('content-type')).toMatch(/^text\/html/);
      expect(answer.headers.get('location')).toBeNull();
    }
    expect(await (await consent({ client_id: 'someone-else' })).text()).toContain('invalid_client');
    const badChallenge = { code_challenge_method: 'S512', code_challenge: pkce().challenge };
    for (const params of [
      { response_type: 'token' },
      { scope: undefined },
      { access_type: 'sometimes' },
      badChallenge,
    ]) {
      const answer = await consent(params);
      expect(answer.status, JSON.stringify(params)).toBe(400);
      expect(answer.headers.get('location')).toBeNull();
    }
  });

  it('answers access_denied with the state once, when the user cancels', async () => {
    google.deny();
    const denied = new URL((await consent({ state: 'keep-me' })).headers.get('location')!);
    expect(denied.searchParams.get('error')).toBe('access_denied');
    expect(denied.searchParams.get('state')).toBe('keep-me');
    expect(denied.searchParams.has('code')).toBe(false);
    expect(new URL((await consent()).headers.get('location')!).searchParams.has('code')).toBe(true);
  });
});

describe('the token endpoint', () => {
  it('exchanges a code with its PKCE verifier for an access token and, offline, a refresh token', async () => {
    const { verifier, challenge } = pkce();
    const code = await codeFrom({ code_challenge: challenge, code_challenge_method: 'S256' });
    const answer = await tokenRequest({
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('cache-control')).toContain('no-store');
    const tokens = await bodyOf<Tokens>(answer);
    expect(tokens).toMatchObject({ token_type: 'Bearer', expires_in: 3600 });
    expect(tokens.scope.split(' ').sort()).toEqual([UPLOAD_SCOPE, READ_SCOPE].sort());
    expect(tokens.access_token.length).toBeGreaterThan(20);
    expect(tokens.refresh_token!.length).toBeGreaterThan(20);
    expect((await channels(tokens.access_token)).status).toBe(200);
  });

  it('gives no refresh token for online access', async () => {
    const tokens = await connect({ access_type: 'online' });
    expect(tokens.refresh_token).toBeUndefined();
    expect(tokens.access_token).toBeTruthy();
  });

  it('takes each code once, with its redirect URI and verifier, and within ten minutes', async () => {
    const { verifier, challenge } = pkce();
    const code = await codeFrom({ code_challenge: challenge, code_challenge_method: 'S256' });
    const exchange = (form: Record<string, string>) =>
      tokenRequest({
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT_URI,
        code_verifier: verifier,
        ...form,
      });
    expect((await exchange({})).status).toBe(200);
    const reused = await exchange({});
    expect(reused.status).toBe(400);
    expect(await bodyOf<OAuthError>(reused)).toEqual({ error: 'invalid_grant', error_description: 'Bad Request' });

    const refusals: Record<string, string>[] = [
      { code_verifier: pkce().verifier },
      { code_verifier: '' },
      { redirect_uri: 'http://127.0.0.1:9/elsewhere' },
    ];
    for (const form of refusals) {
      const other = pkce();
      const fresh = await codeFrom({ code_challenge: other.challenge, code_challenge_method: 'S256' });
      const answer = await tokenRequest({
        grant_type: 'authorization_code',
        code: fresh,
        redirect_uri: REDIRECT_URI,
        code_verifier: other.verifier,
        ...form,
      });
      expect(answer.status, JSON.stringify(form)).toBe(400);
      expect((await bodyOf<OAuthError>(answer)).error).toBe('invalid_grant');
    }

    const late = pkce();
    const expiring = await codeFrom({ code_challenge: late.challenge, code_challenge_method: 'S256' });
    google.advanceClock(10 * 60 + 1);
    const expired = await tokenRequest({
      grant_type: 'authorization_code',
      code: expiring,
      redirect_uri: REDIRECT_URI,
      code_verifier: late.verifier,
    });
    expect((await bodyOf<OAuthError>(expired)).error).toBe('invalid_grant');
  });

  it('authenticates the client in the body or with HTTP Basic, and refuses other credentials', async () => {
    const basic = `Basic ${Buffer.from(`${encodeURIComponent(google.clientId)}:${encodeURIComponent(google.clientSecret)}`).toString('base64')}`;
    const { verifier, challenge } = pkce();
    const code = await codeFrom({ code_challenge: challenge, code_challenge_method: 'S256' });
    const withBasic = await tokenRequest(
      { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier },
      { withClient: false, headers: { Authorization: basic } },
    );
    expect(withBasic.status).toBe(200);
    expect(google.requests.at(-1)).toMatchObject({ method: 'POST', path: '/token', auth: 'basic' });

    const wrongSecret = await tokenRequest({ grant_type: 'refresh_token', refresh_token: 'x', client_secret: 'guess' });
    expect(wrongSecret.status).toBe(401);
    expect((await bodyOf<OAuthError>(wrongSecret)).error).toBe('invalid_client');
    const unknownClient = await tokenRequest({
      grant_type: 'refresh_token',
      refresh_token: 'x',
      client_id: 'other.apps.googleusercontent.com',
    });
    expect(unknownClient.status).toBe(401);
    expect((await bodyOf<OAuthError>(unknownClient)).error).toBe('invalid_client');
  });

  it('takes form bodies only, and names what is wrong with a request', async () => {
    const asJson = await fetch(`${google.url}/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        client_id: google.clientId,
        client_secret: google.clientSecret,
        grant_type: 'refresh_token',
        refresh_token: 'x',
      }),
    });
    expect(asJson.status).toBe(400);
    expect((await bodyOf<OAuthError>(asJson)).error).toBe('invalid_request');
    const unsupported = await tokenRequest({ grant_type: 'password' });
    expect(unsupported.status).toBe(400);
    expect((await bodyOf<OAuthError>(unsupported)).error).toBe('unsupported_grant_type');
    const incomplete: Record<string, string>[] = [
      {},
      { grant_type: 'authorization_code' },
      { grant_type: 'refresh_token' },
    ];
    for (const form of incomplete) {
      const answer = await tokenRequest(form);
      expect(answer.status, JSON.stringify(form)).toBe(400);
      expect((await bodyOf<OAuthError>(answer)).error).toBe('invalid_request');
    }
  });

  it('refreshes without rotating the refresh token', async () => {
    const tokens = await connect();
    for (let i = 0; i < 2; i++) {
      const answer = await tokenRequest({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token! });
      expect(answer.status).toBe(200);
      const refreshed = await bodyOf<Tokens>(answer);
      expect(refreshed).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: tokens.scope });
      expect(refreshed.refresh_token).toBeUndefined();
      expect(refreshed.access_token).not.toBe(tokens.access_token);
      expect((await channels(refreshed.access_token)).status).toBe(200);
    }
  });

  it('lets access tokens expire after the lifetime it is given', async () => {
    google.accessTokenLifetime(60);
    try {
      const tokens = await connect();
      expect(tokens.expires_in).toBe(60);
      expect((await channels(tokens.access_token)).status).toBe(200);
      google.advanceClock(61);
      const expired = await channels(tokens.access_token);
      expect(expired.status).toBe(401);
      expect((await bodyOf<GoogleApiError>(expired)).error.errors[0]!.reason).toBe('authError');
    } finally {
      google.accessTokenLifetime(3600);
    }
  });
});

describe('revocation', () => {
  it('refuses every grant after revokeAll, until the user consents again', async () => {
    const tokens = await connect();
    google.revokeAll();
    const refresh = await tokenRequest({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token! });
    expect(refresh.status).toBe(400);
    expect(await bodyOf<OAuthError>(refresh)).toEqual({
      error: 'invalid_grant',
      error_description: 'Token has been expired or revoked.',
    });

    const refused = await channels(tokens.access_token);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer /);
    expect(await bodyOf<GoogleApiError>(refused)).toEqual({
      error: {
        code: 401,
        message: stringContaining('invalid authentication credentials'),
        errors: [{ domain: 'global', reason: 'authError', message: anyString() }],
        status: 'UNAUTHENTICATED',
      },
    });

    const again = await connect();
    expect((await channels(again.access_token)).status).toBe(200);
  });

  it('revokes a grant through /revoke with either of its tokens, once', async () => {
    const tokens = await connect();
    const revoke = (token: string) =>
      fetch(`${google.url}/revoke`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token }),
      });
    expect((await revoke(tokens.refresh_token!)).status).toBe(200);
    expect((await channels(tokens.access_token)).status).toBe(401);
    expect(
      (
        await bodyOf<OAuthError>(
          await tokenRequest({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token! }),
        )
      ).error,
    ).toBe('invalid_grant');
    const twice = await revoke(tokens.refresh_token!);
    expect(twice.status).toBe(400);
    expect((await bodyOf<OAuthError>(twice)).error).toBe('invalid_token');

    const other = await connect();
    expect((await revoke(other.access_token)).status).toBe(200);
    expect(
      (
        await bodyOf<OAuthError>(
          await tokenRequest({ grant_type: 'refresh_token', refresh_token: other.refresh_token! }),
        )
      ).error,
    ).toBe('invalid_grant');
  });
});

describe('channels.list', () => {
  it('describes the signed-in account’s channel, with its handle and picture', async () => {
    const tokens = await connect();
    const answer = await channels(tokens.access_token);
    expect(answer.status).toBe(200);
    const body = await bodyOf<ListResponse>(answer);
    expect(body.kind).toBe('youtube#channelListResponse');
    expect(body.items).toHaveLength(1);
    expect(body.items[0]).toMatchObject({
      kind: 'youtube#channel',
      id: 'UC_fake_google_test_001',
      snippet: {
        title: 'Acme Videos',
        customUrl: '@acmevideos',
        thumbnails: { default: { url: google.account.thumbnailUrl } },
      },
    });
  });

  it('needs a token, and one with a scope that can read the channel', async () => {
    const missing = await channels();
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toMatch(/^Bearer /);
    expect((await bodyOf<GoogleApiError>(missing)).error.status).toBe('UNAUTHENTICATED');
    const uploadOnly = await connect({ scope: UPLOAD_SCOPE });
    const refused = await channels(uploadOnly.access_token);
    expect(refused.status).toBe(403);
    expect((await bodyOf<GoogleApiError>(refused)).error.errors[0]!.reason).toBe('insufficientPermissions');
  });
});

describe('videos.insert as a resumable upload', () => {
  let accessToken: string;
  const video = Buffer.from(Array.from({ length: VIDEO_BYTES }, (_, i) => (i * 31) % 251));
  const metadata = {
    snippet: {
      title: 'Launch day',
      description: 'Our launch, in two minutes.',
      tags: ['launch', 'acme'],
      categoryId: '28',
    },
    status: { privacyStatus: 'unlisted', selfDeclaredMadeForKids: false },
  };

  beforeAll(async () => {
    accessToken = (await connect()).access_token;
  });

  const initiate = (resource: object = metadata, headers: Record<string, string> = {}) =>
    fetch(`${google.url}/upload/youtube/v3/videos?uploadType=resumable&part=snippet,status`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${accessToken}`,
        'Content-Type': 'application/json; charset=UTF-8',
        'X-Upload-Content-Length': String(VIDEO_BYTES),
        'X-Upload-Content-Type': 'video/mp4',
        ...headers,
      },
      body: JSON.stringify(resource),
    });

  async function session(): Promise<string> {
    const answer = await initiate();
    expect(answer.status).toBe(200);
    const location = answer.headers.get('location')!;
    expect(location).toMatch(
      new RegExp(`^${google.url}/upload/youtube/v3/videos\\?uploadType=resumable&upload_id=\\S+$`),
    );
    return location;
  }

  /** Sends bytes [start, end] of the video; session requests carry no token, the URI is the credential. */
  const put = (uri: string, start: number, end: number) =>
    fetch(uri, {
      method: 'PUT',
      redirect: 'manual',
      headers: { 'Content-Range': `bytes ${start}-${end}/${VIDEO_BYTES}`, 'Content-Type': 'video/mp4' },
      body: video.subarray(start, end + 1),
    });
  const status = (uri: string) =>
    fetch(uri, { method: 'PUT', redirect: 'manual', headers: { 'Content-Range': `bytes */${VIDEO_BYTES}` } });
  const sessionOf = (uri: string) =>
    google.sessions().find((s) => s.id === new URL(uri).searchParams.get('upload_id'))!;

  /** Sends the rest of the video from `from` in chunks of 256 KiB; the last answer. */
  async function sendFrom(uri: string, from: number): Promise<Response> {
    for (let start = from; ; start += CHUNK) {
      const end = Math.min(start + CHUNK, VIDEO_BYTES) - 1;
      const answer = await put(uri, start, end);
      if (end + 1 === VIDEO_BYTES) return answer;
      expect(answer.status).toBe(308);
      expect(answer.headers.get('range')).toBe(`bytes=0-${end}`);
    }
  }

  it('takes the video in chunks, says how far it got with 308 and Range, and answers the video at the end', async () => {
    const uri = await session();
    const before = await status(uri);
    expect(before.status).toBe(308);
    expect(before.headers.get('range')).toBeNull();

    const last = await sendFrom(uri, 0);
    expect(last.status).toBe(201);
    const resource = await bodyOf<Resource>(last);
    expect(resource).toMatchObject({
      kind: 'youtube#video',
      snippet: { ...metadata.snippet, channelId: 'UC_fake_google_test_001' },
      status: { privacyStatus: 'unlisted', selfDeclaredMadeForKids: false, uploadStatus: 'uploaded' },
    });
    expect(resource.id).toMatch(/^[A-Za-z0-9_-]{11}$/);
    expect(google.videos.at(-1)).toEqual({
      id: resource.id,
      sessionId: sessionOf(uri).id,
      title: 'Launch day',
      description: 'Our launch, in two minutes.',
      tags: ['launch', 'acme'],
      categoryId: '28',
      privacyStatus: 'unlisted',
      madeForKids: false,
      contentType: 'video/mp4',
      bytes: VIDEO_BYTES,
      channelId: 'UC_fake_google_test_001',
    });
    expect(google.videoBytes(resource.id)!.equals(video)).toBe(true);
    expect(sessionOf(uri)).toMatchObject({
      total: VIDEO_BYTES,
      received: VIDEO_BYTES,
      stored: VIDEO_BYTES,
      completed: true,
    });

    // The session's requests carried no token; the initiation did.
    const path = new URL(uri).pathname + new URL(uri).search;
    expect(google.requests.filter((r) => r.path === path).every((r) => r.auth === 'none')).toBe(true);
    expect(
      google.requests.some(
        (r) => r.method === 'POST' && r.path.startsWith('/upload/youtube/v3/videos?') && r.auth === 'bearer',
      ),
    ).toBe(true);

    const list = (ids: string) =>
      fetch(`${google.url}/youtube/v3/videos?part=status&id=${ids}`, {
        headers: { Authorization: `Bearer ${accessToken}` },
      });
    const listed = await bodyOf<ListResponse>(await list(`${resource.id},unknown0000`));
    expect(listed.items).toHaveLength(1);
    expect(listed.items[0]).toMatchObject({ id: resource.id, status: { privacyStatus: 'unlisted' } });
    const none = await bodyOf<ListResponse>(await list('unknown0000'));
    expect(none.items).toEqual([]);
  });

  it('names the upload in every answer of the upload server with X-GUploader-UploadID, refusals included', async () => {
    const opened = await initiate();
    const uri = opened.headers.get('location')!;
    const uploadId = new URL(uri).searchParams.get('upload_id');
    expect(opened.headers.get('x-guploader-uploadid')).toBe(uploadId);
    expect((await put(uri, 0, CHUNK - 1)).headers.get('x-guploader-uploadid')).toBe(uploadId);
    expect((await status(uri)).headers.get('x-guploader-uploadid')).toBe(uploadId);
    google.failNextChunk(503);
    const failed = await put(uri, CHUNK, 2 * CHUNK - 1);
    expect(failed.status).toBe(503);
    expect(failed.headers.get('x-guploader-uploadid')).toBe(uploadId);
    google.expireUploadSessions();
    const expired = await status(uri);
    expect(expired.status).toBe(404);
    expect(expired.headers.get('x-guploader-uploadid')).toBe(uploadId);

    google.failNextUploads(1, 'quotaExceeded');
    const refused = await initiate();
    expect(refused.status).toBe(403);
    expect(refused.headers.get('x-guploader-uploadid')).toMatch(/^\S{20,}$/);
    expect(refused.headers.get('x-guploader-uploadid')).not.toBe(uploadId);
  });

  it('takes the whole file in one PUT without Content-Range', async () => {
    const uri = await session();
    const answer = await fetch(uri, { method: 'PUT', headers: { 'Content-Type': 'video/mp4' }, body: video });
    expect(answer.status).toBe(201);
    expect(google.videoBytes((await bodyOf<Resource>(answer)).id)!.equals(video)).toBe(true);
  });

  it('refuses a chunk before the last that is not a multiple of 256 KiB, and one that leaves a gap', async () => {
    const uri = await session();
    const misaligned = await put(uri, 0, 100_000 - 1);
    expect(misaligned.status).toBe(400);
    expect((await bodyOf<GoogleApiError>(misaligned)).error.code).toBe(400);
    const gap = await put(uri, CHUNK, 2 * CHUNK - 1);
    expect(gap.status).toBe(400);
    expect(sessionOf(uri).stored).toBe(0);
    expect((await status(uri)).headers.get('range')).toBeNull();
    expect((await sendFrom(uri, 0)).status).toBe(201);
  });

  it('needs a valid token to start, but not to go on', async () => {
    const unauthenticated = await initiate(metadata, { Authorization: 'Bearer nothing-issued' });
    expect(unauthenticated.status).toBe(401);
    expect((await bodyOf<GoogleApiError>(unauthenticated)).error.errors[0]!.reason).toBe('authError');
    const unknownSession = `${google.url}/upload/youtube/v3/videos?uploadType=resumable&upload_id=nosuchsession`;
    expect((await status(unknownSession)).status).toBe(404);
  });

  it('refuses metadata YouTube refuses, with the reason', async () => {
    const refusals: [object, string][] = [
      [{ ...metadata, snippet: { ...metadata.snippet, title: '' } }, 'invalidTitle'],
      [{ ...metadata, snippet: { ...metadata.snippet, title: 'x'.repeat(101) } }, 'invalidTitle'],
      [{ ...metadata, snippet: { ...metadata.snippet, title: 'A <b>bold</b> title' } }, 'invalidTitle'],
      [{ ...metadata, status: { privacyStatus: 'friends-only' } }, 'invalidVideoMetadata'],
    ];
    for (const [resource, reason] of refusals) {
      const answer = await initiate(resource);
      expect(answer.status).toBe(400);
      const error = (await bodyOf<GoogleApiError>(answer)).error;
      expect(error).toMatchObject({ code: 400, errors: [{ domain: 'youtube.video', reason }] });
      expect(answer.headers.get('location')).toBeNull();
    }
    expect((await initiate({ ...metadata, snippet: { ...metadata.snippet, title: 'x'.repeat(100) } })).status).toBe(
      200,
    );
    expect((await initiate(metadata, { 'X-Upload-Content-Type': 'image/png' })).status).toBe(400);
    expect((await initiate(metadata, { 'X-Upload-Content-Length': 'lots' })).status).toBe(400);
  });

  it('refuses the next uploads with quotaExceeded, uploadLimitExceeded or forbidden, in Google’s error shape', async () => {
    google.failNextUploads(2, 'quotaExceeded');
    for (let i = 0; i < 2; i++) {
      const answer = await initiate();
      expect(answer.status).toBe(403);
      expect(await bodyOf<GoogleApiError>(answer)).toEqual({
        error: {
          code: 403,
          message: anyString(),
          errors: [{ domain: 'youtube.quota', reason: 'quotaExceeded', message: anyString() }],
        },
      });
    }
    google.failNextUploads(1, 'uploadLimitExceeded');
    const limited = await initiate();
    expect(limited.status).toBe(400);
    expect((await bodyOf<GoogleApiError>(limited)).error.errors[0]).toMatchObject({
      domain: 'youtube.video',
      reason: 'uploadLimitExceeded',
    });
    google.failNextUploads(1, 'forbidden');
    const forbidden = await initiate();
    expect(forbidden.status).toBe(403);
    expect((await bodyOf<GoogleApiError>(forbidden)).error.errors[0]!.reason).toBe('forbidden');
    expect((await initiate()).status).toBe(200);
  });

  it('answers a failed chunk without storing it, and takes it again', async () => {
    const uri = await session();
    google.failNextChunk(503);
    expect((await put(uri, 0, CHUNK - 1)).status).toBe(503);
    const after = await status(uri);
    expect(after.status).toBe(308);
    expect(after.headers.get('range')).toBeNull();
    expect((await sendFrom(uri, 0)).status).toBe(201);
    expect(sessionOf(uri)).toMatchObject({ stored: VIDEO_BYTES, received: VIDEO_BYTES + CHUNK });
  });

  it('keeps what arrived of an interrupted chunk, reports it, and goes on from there', async () => {
    const uri = await session();
    expect((await put(uri, 0, CHUNK - 1)).status).toBe(308);
    google.cutNextChunkAfter(100_000);
    await expect(put(uri, CHUNK, 2 * CHUNK - 1)).rejects.toThrow();
    const after = await status(uri);
    expect(after.status).toBe(308);
    expect(after.headers.get('range')).toBe(`bytes=0-${CHUNK + 100_000 - 1}`);
    const last = await sendFrom(uri, CHUNK + 100_000);
    expect(last.status).toBe(201);
    const upload = sessionOf(uri);
    expect(upload.stored).toBe(VIDEO_BYTES);
    expect(upload.received - upload.total).toBeGreaterThan(0);
    expect(upload.received - upload.total).toBeLessThanOrEqual(CHUNK);
    expect(google.videoBytes((await bodyOf<Resource>(last)).id)!.equals(video)).toBe(true);
  });

  it('completes the video even when the answer to the last chunk is lost, and says so to a status query', async () => {
    const uri = await session();
    const before = google.videos.length;
    expect((await put(uri, 0, CHUNK - 1)).status).toBe(308);
    expect((await put(uri, CHUNK, 2 * CHUNK - 1)).status).toBe(308);
    google.cutAfterFinalChunk();
    await expect(put(uri, 2 * CHUNK, VIDEO_BYTES - 1)).rejects.toThrow();
    expect(google.videos.length).toBe(before + 1);
    const asked = await status(uri);
    expect(asked.status).toBe(200);
    const resource = await bodyOf<Resource>(asked);
    expect(resource).toMatchObject({
      kind: 'youtube#video',
      id: google.videos.at(-1)!.id,
      snippet: { title: 'Launch day' },
    });
    expect(google.videos.length).toBe(before + 1);
  });
});
