import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodyOf } from './support/api.js';
import { eventually } from './support/eventually.js';
import { startFakeMastodon, type FakeMastodon } from './support/fake-mastodon.js';
import { mastodonLength } from './support/mastodon-text.js';
import { mp4, pdf, png } from './support/media-samples.js';
import { anyNumber, anyString, stringMatching } from './support/typed-matchers.js';

// The fake Mastodon the Mastodon tests rely on, held to what docs.joinmastodon.org documents for app
// registration, OAuth (with PKCE from 4.3), the instance's limits, media and statuses (with their
// errors, Idempotency-Key and rate limits), so that what passes against it would pass against Mastodon.
const REDIRECT_URI = 'http://127.0.0.1:9/channels/callback/mastodon';
const SCOPES = 'read:accounts write:statuses write:media';
let mastodon: FakeMastodon;

/** A registered app (CredentialApplication). */
interface App {
  id: string;
  name: string;
  website: string | null;
  scopes: string[];
  redirect_uri: string;
  redirect_uris: string[];
  client_id: string;
  client_secret: string;
  client_secret_expires_at: number;
}
/** The token endpoint's answer (Token). */
interface Token {
  access_token: string;
  token_type: string;
  scope: string;
  created_at: number;
}
/** An error of the OAuth endpoints (RFC 6749 §5.2). */
interface OAuthError {
  error: string;
  error_description: string;
}
/** An error of the API: `{"error": "..."}`. */
interface ApiError {
  error: string;
}
interface Account {
  id: string;
  username: string;
  acct: string;
  url: string;
  statuses_count: number;
  source?: { privacy: string; language: string; sensitive: boolean };
}
interface Media {
  id: string;
  type: string;
  url: string | null;
  preview_url: string | null;
  description: string | null;
  meta: { focus?: { x: number; y: number }; original?: { width: number; height: number } };
}
interface Status {
  id: string;
  created_at: string;
  in_reply_to_id: string | null;
  in_reply_to_account_id: string | null;
  sensitive: boolean;
  spoiler_text: string;
  visibility: string;
  language: string;
  url: string;
  content: string;
  text?: string;
  application?: { name: string; website: string | null };
  account: Account;
  media_attachments: Media[];
  tags: { name: string }[];
}
interface Instance {
  domain: string;
  version: string;
  api_versions?: { mastodon: number };
  configuration: {
    statuses: { max_characters: number; max_media_attachments: number; characters_reserved_per_url: number };
    media_attachments: {
      supported_mime_types: string[];
      image_size_limit: number;
      image_matrix_limit: number;
      video_size_limit: number;
      description_limit: number;
    };
  };
}
interface Answer<T> {
  status: number;
  headers: Headers;
  body: T;
}

beforeAll(async () => {
  mastodon = await startFakeMastodon({ account: { username: 'acme', displayName: 'Acme' } });
});
afterAll(async () => {
  await mastodon?.close();
});

/** A request to the fake (`fake`, the shared one unless told), with a token and a JSON or form body. */
async function call<T>(
  path: string,
  init: {
    method?: string;
    token?: string;
    json?: unknown;
    form?: FormData | URLSearchParams;
    headers?: Record<string, string>;
    fake?: FakeMastodon;
  } = {},
): Promise<Answer<T>> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.token) headers.Authorization = `Bearer ${init.token}`;
  if (init.json !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(`${(init.fake ?? mastodon).url}${path}`, {
    method: init.method ?? (init.json !== undefined || init.form ? 'POST' : 'GET'),
    headers,
    ...(init.json !== undefined ? { body: JSON.stringify(init.json) } : init.form ? { body: init.form } : {}),
  });
  return { status: response.status, headers: response.headers, body: await bodyOf<T>(response) };
}

async function registerApp(fields: Record<string, unknown> = {}, fake = mastodon): Promise<App> {
  const answer = await call<App>('/api/v1/apps', {
    json: { client_name: 'Post Scheduler', redirect_uris: REDIRECT_URI, scopes: SCOPES, ...fields },
    fake,
  });
  expect(answer.status).toBe(200);
  return answer.body;
}

function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** The consent's answer to an authorization request of `app` (defaults: a well-formed request). */
function consent(app: App, params: Record<string, string> = {}, fake = mastodon): Promise<Response> {
  const query = new URLSearchParams({
    client_id: app.client_id,
    redirect_uri: REDIRECT_URI,
    response_type: 'code',
    scope: SCOPES,
    state: 'st-1',
    ...params,
  });
  return fetch(`${fake.url}/oauth/authorize?${query.toString()}`, { redirect: 'manual' });
}

const back = (answer: Response) => new URL(answer.headers.get('location')!);

function tokenRequest(app: App, form: Record<string, string>, fake = mastodon): Promise<Answer<Token & OAuthError>> {
  return call<Token & OAuthError>('/oauth/token', {
    form: new URLSearchParams({ client_id: app.client_id, client_secret: app.client_secret, ...form }),
    fake,
  });
}

/** Consent and exchange, with PKCE: the access token a freshly connected account holds. */
async function connect(app: App, fake = mastodon): Promise<string> {
  const { verifier, challenge } = pkce();
  const code = back(
    await consent(app, { code_challenge: challenge, code_challenge_method: 'S256' }, fake),
  ).searchParams.get('code')!;
  const answer = await tokenRequest(
    app,
    { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier },
    fake,
  );
  expect(answer.status).toBe(200);
  return answer.body.access_token;
}

/** `POST /api/v2/media` with the file (and the other fields) as multipart form data. */
function upload(token: string, file: Buffer, type: string, fields: Record<string, string> = {}, fake = mastodon) {
  const form = new FormData();
  form.append('file', new Blob([file], { type }), `upload.${type.split('/')[1]}`);
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  return call<Media & ApiError>('/api/v2/media', { token, form, fake });
}

/** `POST /api/v1/statuses` as form data (`media_ids[]` repeated), with an Idempotency-Key when given. */
function post(token: string, fields: Record<string, string | string[]>, key?: string, fake = mastodon) {
  const form = new URLSearchParams();
  for (const [name, value] of Object.entries(fields))
    for (const one of Array.isArray(value) ? value : [value]) form.append(name, one);
  return call<Status & ApiError>('/api/v1/statuses', {
    token,
    form,
    ...(key ? { headers: { 'Idempotency-Key': key } } : {}),
    fake,
  });
}

describe('app registration', () => {
  it('answers the app with its credentials, scopes and redirect URIs', async () => {
    const app = await registerApp({
      redirect_uris: [REDIRECT_URI, 'http://127.0.0.1:9/other'],
      website: 'https://scheduler.example',
    });
    expect(app).toEqual({
      id: anyString(),
      name: 'Post Scheduler',
      website: 'https://scheduler.example',
      scopes: SCOPES.split(' '),
      redirect_uri: `${REDIRECT_URI}\nhttp://127.0.0.1:9/other`,
      redirect_uris: [REDIRECT_URI, 'http://127.0.0.1:9/other'],
      client_id: stringMatching(/^\S{20,}$/),
      client_secret: stringMatching(/^\S{20,}$/),
      client_secret_expires_at: 0,
    });
    expect(mastodon.apps.at(-1)).toMatchObject({ clientId: app.client_id, redirectUris: app.redirect_uris });
  });

  it('refuses a missing name, a relative redirect URI and a scope the server does not define, with 422', async () => {
    const refused = await call<ApiError>('/api/v1/apps', { json: { client_name: '', redirect_uris: '/callback' } });
    expect(refused.status).toBe(422);
    expect(refused.body.error).toBe(
      "Validation failed: Application name can't be blank, Redirect URI must be an absolute URI.",
    );
    const scoped = await call<ApiError>('/api/v1/apps', {
      form: new URLSearchParams({ client_name: 'x', redirect_uris: REDIRECT_URI, scopes: 'read write:everything' }),
    });
    expect(scoped.status).toBe(422);
    expect(scoped.body.error).toBe("Validation failed: Scopes doesn't match configured on the server.");
  });
});

describe('OAuth', () => {
  let app: App;
  beforeAll(async () => {
    app = await registerApp();
  });

  it('announces PKCE (S256) in its server metadata, as Mastodon 4.3 and later do', async () => {
    const metadata = await call<{ code_challenge_methods_supported: string[]; grant_types_supported: string[] }>(
      '/.well-known/oauth-authorization-server',
    );
    expect(metadata.body.code_challenge_methods_supported).toEqual(['S256']);
    expect(metadata.body.grant_types_supported).toEqual(['authorization_code', 'client_credentials']);
  });

  it('sends the browser back with a code and the state, which the token endpoint takes once with its verifier', async () => {
    const { verifier, challenge } = pkce();
    const answer = await consent(app, { code_challenge: challenge, code_challenge_method: 'S256', state: 'a b&c' });
    expect(answer.status).toBe(302);
    const location = back(answer);
    expect(location.origin + location.pathname).toBe(REDIRECT_URI);
    expect(location.searchParams.get('state')).toBe('a b&c');
    const code = location.searchParams.get('code')!;
    expect(mastodon.authorizations.at(-1)).toMatchObject({
      codeChallenge: challenge,
      codeChallengeMethod: 'S256',
      outcome: 'approved',
    });
    const exchange = (form: Record<string, string>) =>
      tokenRequest(app, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, ...form });
    expect((await exchange({ code_verifier: pkce().verifier })).body.error).toBe('invalid_grant');
    expect((await exchange({})).body.error).toBe('invalid_grant');
    expect((await exchange({ code_verifier: verifier, redirect_uri: 'http://127.0.0.1:9/x' })).body.error).toBe(
      'invalid_grant',
    );
    const granted = await exchange({ code_verifier: verifier });
    expect(granted.status).toBe(200);
    expect(granted.headers.get('cache-control')).toContain('no-store');
    expect(granted.body).toEqual({
      access_token: stringMatching(/^\S{20,}$/),
      token_type: 'Bearer',
      scope: SCOPES,
      created_at: anyNumber(),
    });
    const again = await exchange({ code_verifier: verifier });
    expect(again.status).toBe(400);
    expect(again.body).toEqual({
      error: 'invalid_grant',
      error_description: stringMatching(/^The provided authorization grant is invalid/),
    });
  });

  it('authenticates the client from the body or HTTP Basic, and issues no refresh token', async () => {
    const wrong = await call<OAuthError>('/oauth/token', {
      form: new URLSearchParams({ client_id: app.client_id, client_secret: 'nope', grant_type: 'client_credentials' }),
    });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe('invalid_client');
    const basic = await call<Token>('/oauth/token', {
      form: new URLSearchParams({ grant_type: 'client_credentials', scope: 'read:accounts' }),
      headers: { Authorization: `Basic ${Buffer.from(`${app.client_id}:${app.client_secret}`).toString('base64')}` },
    });
    expect(basic.status).toBe(200);
    expect(basic.body.scope).toBe('read:accounts');
    // Mastodon's access tokens do not expire, and it has no refresh grant.
    const refresh = await tokenRequest(app, { grant_type: 'refresh_token', refresh_token: basic.body.access_token });
    expect(refresh.status).toBe(400);
    expect(refresh.body.error).toBe('unsupported_grant_type');
  });

  it('shows an error page for an unknown client or redirect URI, and redirects other refusals with the state', async () => {
    const wrong: Record<string, string>[] = [
      { client_id: 'someone-else' },
      { redirect_uri: 'http://127.0.0.1:9/unregistered' },
    ];
    for (const params of wrong) {
      const answer = await consent(app, params);
      expect(answer.status, JSON.stringify(params)).toBe(400);
      expect(answer.headers.get('content-type')).toMatch(/^text\/html/);
      expect(answer.headers.get('location')).toBeNull();
    }
    const refusal = async (params: Record<string, string>) => back(await consent(app, params)).searchParams;
    // The scopes asked for must be among the app's.
    expect((await refusal({ scope: 'read write' })).get('error')).toBe('invalid_scope');
    expect((await refusal({ code_challenge: pkce().challenge, code_challenge_method: 'plain' })).get('error')).toBe(
      'invalid_request',
    );
    expect((await refusal({ response_type: 'token' })).get('error')).toBe('unsupported_response_type');
    mastodon.deny();
    const denied = await refusal({ state: 'keep-me' });
    expect(denied.get('error')).toBe('access_denied');
    expect(denied.get('state')).toBe('keep-me');
    expect(denied.has('code')).toBe(false);
  });

  it('shows the consent page, whose Authorize form gives a code and whose Deny form refuses', async () => {
    mastodon.consentPage(true);
    try {
      const page = await consent(app, { state: 'st-page' });
      expect(page.status).toBe(200);
      const html = await page.text();
      expect(html).toContain('Post Scheduler');
      const forms = [...html.matchAll(/<form method="post" action="\/oauth\/authorize">(.*?)<\/form>/g)].map(
        (form) =>
          new URLSearchParams(
            [...form[1]!.matchAll(/<input type="hidden" name="(\w+)" value="([^"]*)">/g)].map(
              (field): [string, string] => [field[1]!, field[2]!.replace(/&amp;/g, '&')],
            ),
          ),
      );
      expect(forms).toHaveLength(2);
      const submit = (form: URLSearchParams) =>
        fetch(`${mastodon.url}/oauth/authorize`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
          body: form,
          redirect: 'manual',
        });
      const approved = back(await submit(forms[0]!)).searchParams;
      expect(approved.get('code')).toMatch(/^\S{20,}$/);
      expect(approved.get('state')).toBe('st-page');
      expect(forms[1]!.get('_method')).toBe('delete');
      expect(back(await submit(forms[1]!)).searchParams.get('error')).toBe('access_denied');
    } finally {
      mastodon.consentPage(false);
    }
  });

  it('shows the code on a page of its own for the out-of-band redirect URI', async () => {
    const oob = await registerApp({ redirect_uris: 'urn:ietf:wg:oauth:2.0:oob' });
    const answer = await consent(oob, { redirect_uri: 'urn:ietf:wg:oauth:2.0:oob' });
    const location = back(answer);
    expect(location.pathname).toBe('/oauth/authorize/native');
    const page = await (await fetch(location)).text();
    expect(page).toContain(`value="${location.searchParams.get('code')}"`);
  });

  it('revokes a token: 200 every time, and the token is refused with 401 from then on', async () => {
    const token = await connect(app);
    const revoke = (client: App) =>
      call<OAuthError>('/oauth/revoke', {
        form: new URLSearchParams({ client_id: client.client_id, client_secret: client.client_secret, token }),
      });
    const other = await registerApp({ client_name: 'Someone else' });
    const foreign = await revoke(other);
    expect(foreign.status).toBe(403);
    expect(foreign.body.error).toBe('unauthorized_client');
    expect((await call('/oauth/revoke', { form: new URLSearchParams({ token }) })).status).toBe(401);
    const revoked = await revoke(app);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toEqual({});
    expect((await revoke(app)).status).toBe(200);
    const refused = await call<ApiError>('/api/v1/accounts/verify_credentials', { token });
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual({ error: 'The access token was revoked' });
    expect(refused.headers.get('www-authenticate')).toContain('error="invalid_token"');
    expect(mastodon.tokens.find((t) => t.accessToken === token)?.revoked).toBe(true);
  });
});

describe('an instance older than 4.3', () => {
  it('has no OAuth metadata or api_versions, and ignores PKCE', async () => {
    const legacy = await startFakeMastodon({ supportsPkce: false });
    try {
      expect((await call('/.well-known/oauth-authorization-server', { fake: legacy })).status).toBe(404);
      const instance = await call<Instance>('/api/v2/instance', { fake: legacy });
      expect(instance.body.version).toBe('4.2.10');
      expect(instance.body.api_versions).toBeUndefined();
      const app = await registerApp({}, legacy);
      const code = back(
        await consent(app, { code_challenge: pkce().challenge, code_challenge_method: 'S256' }, legacy),
      ).searchParams.get('code')!;
      const granted = await tokenRequest(
        app,
        { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI },
        legacy,
      );
      expect(granted.status).toBe(200);
    } finally {
      await legacy.close();
    }
  });
});

describe('the account and the instance', () => {
  it('verifies the credentials of a token with read:accounts, and refuses a token without', async () => {
    const app = await registerApp();
    const token = await connect(app);
    const me = await call<Account>('/api/v1/accounts/verify_credentials', { token });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({
      id: mastodon.account.id,
      username: 'acme',
      acct: 'acme',
      url: `${mastodon.url}/@acme`,
      source: { privacy: 'public', language: 'en', sensitive: false },
    });
    expect(me.headers.get('x-ratelimit-limit')).toBe('300');
    const writeOnly = mastodon.personalToken(mastodon.account, ['write:statuses']);
    const scoped = await call<ApiError>('/api/v1/accounts/verify_credentials', { token: writeOnly });
    expect(scoped.status).toBe(403);
    expect(scoped.body.error).toBe('This action is outside the authorized scopes');
    const invalid = await call<ApiError>('/api/v1/accounts/verify_credentials', { token: 'not-a-token' });
    expect(invalid.status).toBe(401);
    expect(invalid.body.error).toBe('The access token is invalid');
    // Whoever signs in at the consent page is the account of the token.
    const someone = mastodon.createAccount({ username: 'second-login' });
    mastodon.signInAs(someone);
    try {
      const theirs = await call<Account>('/api/v1/accounts/verify_credentials', { token: await connect(app) });
      expect(theirs.body.username).toBe('second-login');
    } finally {
      mastodon.signInAs(mastodon.account);
    }
    const appToken = await tokenRequest(app, { grant_type: 'client_credentials', scope: 'read:accounts' });
    const anonymous = await call<ApiError>('/api/v1/accounts/verify_credentials', {
      token: appToken.body.access_token,
    });
    expect(anonymous.status).toBe(422);
    expect(anonymous.body.error).toBe('This method requires an authenticated user');
  });

  it('announces its limits, which it then enforces', async () => {
    const instance = await call<Instance>('/api/v2/instance');
    expect(instance.body.domain).toBe(mastodon.domain);
    expect(instance.body.api_versions).toEqual({ mastodon: 4 });
    expect(instance.body.configuration.statuses).toEqual({
      max_characters: 500,
      max_media_attachments: 4,
      characters_reserved_per_url: 23,
    });
    expect(instance.body.configuration.media_attachments).toMatchObject({
      image_size_limit: 16_777_216,
      image_matrix_limit: 33_177_600,
      video_size_limit: 103_809_024,
      description_limit: 1500,
    });
    expect(instance.body.configuration.media_attachments.supported_mime_types).toEqual(
      expect.arrayContaining(['image/jpeg', 'image/png', 'video/mp4']) as string[],
    );
    const long = await startFakeMastodon({ limits: { maxCharacters: 5000 } });
    try {
      const configured = await call<Instance>('/api/v2/instance', { fake: long });
      expect(configured.body.configuration.statuses.max_characters).toBe(5000);
      const token = long.personalToken(long.account, ['write:statuses']);
      expect((await post(token, { status: 'a'.repeat(5000) }, undefined, long)).status).toBe(200);
      expect((await post(token, { status: 'a'.repeat(5001) }, undefined, long)).status).toBe(422);
    } finally {
      await long.close();
    }
  });
});

describe('media', () => {
  let token: string;
  beforeAll(async () => {
    token = await connect(await registerApp());
  });

  it('processes an image during the upload (200), with its description, focus and size', async () => {
    const image = png(4, 2);
    const uploaded = await upload(token, image, 'image/png', { description: 'A red square', focus: '-0.5,0.25' });
    expect(uploaded.status).toBe(200);
    expect(uploaded.body).toMatchObject({
      type: 'image',
      url: stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/system\/media_attachments\//),
      description: 'A red square',
      meta: { focus: { x: -0.5, y: 0.25 }, original: { width: 4, height: 2 } },
    });
    expect(mastodon.mediaBytes(uploaded.body.id)!.equals(image)).toBe(true);
    const file = await fetch(uploaded.body.url!);
    expect(Buffer.from(await file.arrayBuffer()).equals(image)).toBe(true);
    const updated = await call<Media>(`/api/v1/media/${uploaded.body.id}`, {
      method: 'PUT',
      token,
      json: { description: 'A red rectangle', focus: '0,0' },
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ description: 'A red rectangle', meta: { focus: { x: 0, y: 0 } } });
    expect(mastodon.media.find((m) => m.id === uploaded.body.id)).toMatchObject({
      description: 'A red rectangle',
      focus: { x: 0, y: 0 },
      processing: false,
    });
  });

  it('answers a video 202 without a URL, 206 while it is processing, then 200', async () => {
    const uploaded = await upload(token, mp4(), 'video/mp4');
    expect(uploaded.status).toBe(202);
    expect(uploaded.body).toMatchObject({ type: 'video', url: null });
    const poll = () => call<Media>(`/api/v1/media/${uploaded.body.id}`, { token });
    const first = await poll();
    expect(first.status).toBe(206);
    expect(first.body.url).toBeNull();
    const done = await poll();
    expect(done.status).toBe(200);
    expect(done.body.url).toMatch(/^http:/);
  });

  it('keeps an image processing for as many polls as told', async () => {
    mastodon.processNextMedia(2);
    const uploaded = await upload(token, png(), 'image/png');
    expect(uploaded.status).toBe(202);
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await call(`/api/v1/media/${uploaded.body.id}`, { token })).status);
    expect(statuses).toEqual([206, 206, 200]);
  });

  it('refuses what it cannot take, with 422', async () => {
    const notMedia = await upload(token, pdf(), 'application/pdf');
    expect(notMedia.status).toBe(422);
    expect(notMedia.body.error).toBe('Validation failed: File content type is invalid, File is invalid');
    const described = await upload(token, png(), 'image/png', { description: 'x'.repeat(1501) });
    expect(described.body.error).toBe('Validation failed: Description is too long (maximum is 1500 characters)');
    const empty = await call<ApiError>('/api/v2/media', { token, form: new FormData() });
    expect(empty.body.error).toBe("Validation failed: File can't be blank");
    // A PNG whose header says 8000×5000: the size is read from the header, as Mastodon's check does.
    const claimed = png();
    claimed.writeUInt32BE(8000, 16);
    claimed.writeUInt32BE(5000, 20);
    const huge = await upload(token, claimed, 'image/png');
    expect(huge.status).toBe(422);
    expect(huge.body.error).toBe('8000x5000 images are not supported');
  });

  it('finds media of its own account only, and needs write:media', async () => {
    const uploaded = await upload(token, png(), 'image/png');
    const someone = mastodon.createAccount({ username: 'someone' });
    const theirs = mastodon.personalToken(someone, ['write:media']);
    expect((await call<ApiError>(`/api/v1/media/${uploaded.body.id}`, { token: theirs })).body).toEqual({
      error: 'Record not found',
    });
    const readOnly = mastodon.personalToken(mastodon.account, ['read']);
    expect((await upload(readOnly, png(), 'image/png')).status).toBe(403);
  });
});

describe('statuses', () => {
  let token: string;
  beforeAll(async () => {
    token = await connect(await registerApp({ client_name: 'Scheduler', website: 'https://scheduler.example' }));
  });

  it('publishes a reply with media, a content warning, a visibility and a language, and lists it', async () => {
    const parent = await post(token, { status: 'Part 1 of a thread #launch https://example.com/a' });
    expect(parent.status).toBe(200);
    expect(parent.body).toMatchObject({
      visibility: 'public',
      language: 'en',
      sensitive: false,
      spoiler_text: '',
      in_reply_to_id: null,
      application: { name: 'Scheduler', website: 'https://scheduler.example' },
      account: { id: mastodon.account.id, username: 'acme' },
      tags: [{ name: 'launch' }],
      url: `${mastodon.url}/@acme/${parent.body.id}`,
    });
    expect(parent.body.content).toMatch(
      /^<p>Part 1 of a thread <a href=".*tags\/launch".*<a href="https:\/\/example\.com\/a"/,
    );
    const first = await upload(token, png(), 'image/png', { description: 'First' });
    const second = await upload(token, png(), 'image/png', { description: 'Second' });
    const reply = await post(token, {
      status: 'Part 2',
      'media_ids[]': [second.body.id, first.body.id],
      in_reply_to_id: parent.body.id,
      spoiler_text: 'Spoilers',
      visibility: 'unlisted',
      language: 'de',
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      in_reply_to_id: parent.body.id,
      in_reply_to_account_id: mastodon.account.id,
      spoiler_text: 'Spoilers',
      // A content warning marks the status sensitive.
      sensitive: true,
      visibility: 'unlisted',
      language: 'de',
      content: '<p>Part 2</p>',
    });
    expect(reply.body.media_attachments.map((m) => [m.id, m.description])).toEqual([
      [second.body.id, 'Second'],
      [first.body.id, 'First'],
    ]);
    expect(mastodon.statuses.find((s) => s.id === reply.body.id)).toMatchObject({
      text: 'Part 2',
      mediaIds: [second.body.id, first.body.id],
      inReplyToId: parent.body.id,
    });
    // Attached, the media are no longer the media endpoints' to show, nor another status's to take.
    expect((await call(`/api/v1/media/${first.body.id}`, { token })).status).toBe(404);
    const taken = await post(token, { status: 'Again', 'media_ids[]': [first.body.id] });
    expect(taken.status).toBe(422);
    expect(taken.body.error).toBe(`Media ${first.body.id} not found or already attached to another post`);
    // Public and unlisted statuses are visible without a token.
    expect((await call<Status>(`/api/v1/statuses/${reply.body.id}`)).body.id).toBe(reply.body.id);

    // Reading statuses with a token needs read:statuses, which this one lacks; without a token the public
    // and unlisted ones are there.
    const list = `/api/v1/accounts/${mastodon.account.id}/statuses`;
    expect((await call<ApiError>(`${list}?limit=1`, { token })).body).toEqual({
      error: 'This action is outside the authorized scopes',
    });
    const page = await call<Status[]>(`${list}?limit=1`);
    expect(page.body.map((s) => s.id)).toEqual([reply.body.id]);
    const next = /<([^>]+)>; rel="next"/.exec(page.headers.get('link') ?? '')?.[1];
    expect(next).toContain(`max_id=${reply.body.id}`);
    const older = await call<Status[]>(next!.slice(mastodon.url.length));
    expect(older.body.map((s) => s.id)).toEqual([parent.body.id]);
    const withMedia = await call<Status[]>(`${list}?only_media=true`);
    expect(withMedia.body.map((s) => s.id)).toEqual([reply.body.id]);
  });

  it('takes a JSON body, and keeps a direct status from anyone but its author', async () => {
    const direct = await call<Status>('/api/v1/statuses', {
      token,
      json: { status: '@someone only for you', visibility: 'direct' },
    });
    expect(direct.status).toBe(200);
    expect(direct.body.visibility).toBe('direct');
    expect((await call(`/api/v1/statuses/${direct.body.id}`)).status).toBe(404);
    const reader = mastodon.personalToken(mastodon.account, ['read:statuses']);
    expect((await call(`/api/v1/statuses/${direct.body.id}`, { token: reader })).status).toBe(200);
  });

  it('refuses a reply to a status that does not exist (404), and media it cannot attach (422)', async () => {
    const orphan = await post(token, { status: 'Hello', in_reply_to_id: '1' });
    expect(orphan.status).toBe(404);
    expect(orphan.body.error).toBe('The post you are trying to reply to does not appear to exist.');
    const images = await Promise.all([1, 2, 3, 4, 5].map(() => upload(token, png(), 'image/png')));
    const tooMany = await post(token, { status: 'Five', 'media_ids[]': images.map((i) => i.body.id) });
    expect(tooMany.body.error).toBe('Cannot attach more than 4 files');
    const video = await upload(token, mp4(), 'video/mp4');
    expect(video.status).toBe(202);
    const notReady = await post(token, { status: 'Too soon', 'media_ids[]': [video.body.id] });
    expect(notReady.status).toBe(422);
    expect(notReady.body.error).toBe('Cannot attach files that have not finished processing. Try again in a moment!');
    const mixed = await post(token, { status: 'Mixed', 'media_ids[]': [images[0]!.body.id, video.body.id] });
    expect(mixed.body.error).toBe('Cannot attach a video to a post that already contains images');
    const someone = mastodon.createAccount({ username: 'neighbour' });
    const theirs = await upload(mastodon.personalToken(someone, ['write:media']), png(), 'image/png');
    const foreign = await post(token, { status: 'Not mine', 'media_ids[]': [theirs.body.id] });
    expect(foreign.status).toBe(422);
    expect(foreign.body.error).toBe(`Media ${theirs.body.id} not found or already attached to another post`);
    expect(await post(token, { status: '   ' })).toMatchObject({
      status: 422,
      body: { error: "Validation failed: Text can't be blank" },
    });
  });

  it('deletes a status, answering it with its source text, and frees its media', async () => {
    const image = await upload(token, png(), 'image/png');
    const status = await post(token, { status: 'Short-lived', 'media_ids[]': [image.body.id] });
    const deleted = await call<Status>(`/api/v1/statuses/${status.body.id}`, { method: 'DELETE', token });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ id: status.body.id, text: 'Short-lived' });
    expect((await call<ApiError>(`/api/v1/statuses/${status.body.id}`)).body).toEqual({
      error: 'Record not found',
    });
    expect((await call(`/api/v1/statuses/${status.body.id}`, { method: 'DELETE', token })).status).toBe(404);
    expect((await call(`/api/v1/media/${image.body.id}`, { token })).status).toBe(200);
  });

  it('counts characters as Mastodon does, and refuses a status over the limit with 422', async () => {
    expect((await post(token, { status: 'a'.repeat(500) })).status).toBe(200);
    const tooLong = await post(token, { status: 'a'.repeat(501) });
    expect(tooLong.status).toBe(422);
    expect(tooLong.body).toEqual({ error: 'Validation failed: Text character limit of 500 exceeded' });
    // The content warning counts too.
    expect((await post(token, { status: 'a'.repeat(491), spoiler_text: 'b'.repeat(10) })).status).toBe(422);
    // Every URL counts 23, whatever its length.
    const url = `https://example.com/${'x'.repeat(200)}`;
    expect((await post(token, { status: `${'a'.repeat(476)} ${url}` })).status).toBe(200);
    expect((await post(token, { status: `${'a'.repeat(477)} ${url}` })).status).toBe(422);
    // A mention of another instance's account counts its username only; an emoji is one character.
    expect((await post(token, { status: `@someone@a.very.long.example.social ${'👩‍👩‍👧'.repeat(491)}` })).status).toBe(200);
  });
});

describe('mastodonLength', () => {
  it('counts graphemes, URLs as 23 and mentions without their domain, as Mastodon does', () => {
    expect(mastodonLength('hello')).toBe(5);
    expect(mastodonLength('héllo 👩‍👩‍👧')).toBe(7);
    expect(mastodonLength('see https://example.com/a/very/long/path?q=1.')).toBe(4 + 23 + 1);
    expect(mastodonLength('see (https://en.example.org/wiki/Foo_(bar))')).toBe(4 + 1 + 23 + 1);
    expect(mastodonLength('no scheme example.com')).toBe(21);
    expect(mastodonLength('hi @someone@mastodon.social and @local')).toBe(3 + 8 + 5 + 6);
    expect(mastodonLength('mail me@example.com')).toBe(19);
    expect(mastodonLength('text', 'warning')).toBe(11);
    expect(mastodonLength('   ', 'cw')).toBe(2);
    expect(mastodonLength('x https://a.example', '', 30)).toBe(32);
  });
});

describe('Idempotency-Key', () => {
  let token: string;
  beforeAll(async () => {
    token = await connect(await registerApp());
  });

  it('answers the same status for the same key within an hour, whatever the request says, and creates one', async () => {
    const first = await post(token, { status: 'Once' }, 'key-1');
    const again = await post(token, { status: 'Something else' }, 'key-1');
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(first.body.id);
    expect(again.body.content).toBe('<p>Once</p>');
    expect(mastodon.statuses.filter((s) => s.idempotencyKey === 'key-1')).toHaveLength(1);
    expect(mastodon.idempotencyKeys.filter((k) => k.key === 'key-1')).toEqual([
      { key: 'key-1', accountId: mastodon.account.id, statusId: first.body.id, replayed: false },
      { key: 'key-1', accountId: mastodon.account.id, statusId: first.body.id, replayed: true },
    ]);
    // Keys are per account.
    const someone = mastodon.createAccount({ username: 'other-poster' });
    const theirs = await post(mastodon.personalToken(someone, ['write:statuses']), { status: 'Mine' }, 'key-1');
    expect(theirs.body.id).not.toBe(first.body.id);
  });

  it('stores no key for a refused status, forgets a key after an hour, and answers 404 for a deleted status', async () => {
    expect((await post(token, { status: 'a'.repeat(501) }, 'key-2')).status).toBe(422);
    const created = await post(token, { status: 'Second try' }, 'key-2');
    expect(created.status).toBe(200);
    await call(`/api/v1/statuses/${created.body.id}`, { method: 'DELETE', token });
    expect(await post(token, { status: 'Second try' }, 'key-2')).toMatchObject({
      status: 404,
      body: { error: 'Record not found' },
    });
    mastodon.advanceClock(3601);
    const later = await post(token, { status: 'Second try' }, 'key-2');
    expect(later.status).toBe(200);
    expect(later.body.id).not.toBe(created.body.id);
  });
});

describe('failures', () => {
  let app: App;
  let token: string;
  beforeAll(async () => {
    app = await registerApp();
    token = await connect(app);
  });

  it('creates the status whose answer it loses, and answers it to a retry with the same key', async () => {
    mastodon.loseNextStatusAnswer();
    await expect(post(token, { status: 'Lost in transit' }, 'lost-1')).rejects.toThrow();
    const created = mastodon.statuses.filter((s) => s.idempotencyKey === 'lost-1');
    expect(created).toMatchObject([{ text: 'Lost in transit', deleted: false }]);
    const retried = await post(token, { status: 'Lost in transit' }, 'lost-1');
    expect(retried.status).toBe(200);
    expect(retried.body.id).toBe(created[0]!.id);
    expect(mastodon.statuses.filter((s) => s.idempotencyKey === 'lost-1')).toHaveLength(1);
  });

  it('creates a slow status though its caller went away while it waited, and answers it to the same key', async () => {
    mastodon.slowStatuses(1000);
    try {
      const gone = new AbortController();
      const sent = fetch(`${mastodon.url}/api/v1/statuses`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Idempotency-Key': 'slow-1' },
        body: new URLSearchParams({ status: 'Slow and steady' }),
        signal: gone.signal,
      });
      await eventually(() => expect(mastodon.statusesInFlight()).toBe(1));
      gone.abort();
      await expect(sent).rejects.toThrow();
      await eventually(() => expect(mastodon.statusesInFlight()).toBe(0));
      const created = mastodon.statuses.filter((s) => s.idempotencyKey === 'slow-1');
      expect(created).toMatchObject([{ text: 'Slow and steady' }]);
      expect((await post(token, { status: 'Slow and steady' }, 'slow-1')).body.id).toBe(created[0]!.id);
    } finally {
      mastodon.slowStatuses(0);
    }
  });

  it('refuses the next status with 422 when told, creating nothing', async () => {
    const before = mastodon.statuses.length;
    mastodon.refuseNextStatus('Validation failed: Text character limit of 500 exceeded');
    const refused = await post(token, { status: 'Fine' }, 'refused-1');
    expect(refused).toMatchObject({
      status: 422,
      body: { error: 'Validation failed: Text character limit of 500 exceeded' },
    });
    expect(mastodon.statuses.length).toBe(before);
    expect((await post(token, { status: 'Fine' }, 'refused-1')).status).toBe(200);
  });

  it('answers a server error on the next call (of a route, when told), then works again', async () => {
    mastodon.failNext(503, 'POST /api/v1/statuses');
    const verify = await call('/api/v1/accounts/verify_credentials', { token });
    expect(verify.status).toBe(200);
    const unavailable = await post(token, { status: 'Later' });
    expect(unavailable.status).toBe(503);
    expect(unavailable.body.error).toBe('There was a temporary problem serving your request, please try again');
    mastodon.failNext(500);
    expect((await call<ApiError>('/api/v1/accounts/verify_credentials', { token })).status).toBe(500);
    expect((await post(token, { status: 'Later' })).status).toBe(200);
  });

  it('refuses every call with 401 once the user revoked the account’s tokens', async () => {
    const image = await upload(token, png(), 'image/png');
    mastodon.revokeAll();
    for (const answer of [
      await post(token, { status: 'Refused' }),
      await upload(token, png(), 'image/png'),
      await call<ApiError>(`/api/v1/media/${image.body.id}`, { token }),
    ]) {
      expect(answer.status).toBe(401);
      expect(answer.body.error).toBe('The access token was revoked');
    }
    // Consent given again makes a token that works.
    expect((await call('/api/v1/accounts/verify_credentials', { token: await connect(app) })).status).toBe(200);
  });
});

describe('rate limits', () => {
  let fake: FakeMastodon;
  beforeAll(async () => {
    fake = await startFakeMastodon();
  });
  afterAll(async () => {
    await fake?.close();
  });

  it('answers 429 with the X-RateLimit headers when told, the reset an ISO 8601 time', async () => {
    const token = fake.personalToken(fake.account, ['read']);
    const before = Date.now();
    fake.rateLimitNext(1, 120);
    const limited = await call<ApiError>('/api/v1/accounts/verify_credentials', { token, fake });
    const after = Date.now();
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ error: 'Too many requests' });
    expect(limited.headers.get('x-ratelimit-limit')).toBe('300');
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    const reset = limited.headers.get('x-ratelimit-reset')!;
    expect(reset).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(Date.parse(reset)).toBeGreaterThanOrEqual(before + 120_000);
    expect(Date.parse(reset)).toBeLessThanOrEqual(after + 120_000);
    const fine = await call('/api/v1/accounts/verify_credentials', { token, fake });
    expect(fine.status).toBe(200);
  });

  it('counts every call in 5-minute windows, and allows 30 media uploads in 30 minutes', async () => {
    const token = fake.personalToken(fake.createAccount({ username: 'uploader' }), ['read', 'write:media']);
    const remaining = async () =>
      Number((await call('/api/v1/accounts/verify_credentials', { token, fake })).headers.get('x-ratelimit-remaining'));
    const first = await remaining();
    expect(await remaining()).toBe(first - 1);
    const uploads: number[] = [];
    for (let i = 0; i < 31; i++) uploads.push((await upload(token, png(), 'image/png', {}, fake)).status);
    expect(uploads.slice(0, 30).every((status) => status === 200)).toBe(true);
    expect(uploads[30]).toBe(429);
    fake.advanceClock(1800);
    expect((await upload(token, png(), 'image/png', {}, fake)).status).toBe(200);
  });
});
