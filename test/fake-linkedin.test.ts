import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from './support/eventually.js';
import { shownLittleText, startFakeLinkedIn, type FakeLinkedIn } from './support/fake-linkedin.js';

// The fake LinkedIn against LinkedIn's documented contract: the OAuth flow with and without refresh
// tokens, the headers of the versioned API (426 for a retired version), scopes, the Images and Videos
// APIs, posts answered with x-restli-id and found by author, comments, and the failure switches (an answer
// held back while the post is made among them).
const REDIRECT = 'https://scheduler.example.org/channels/callback/linkedin';
const VERSION = '202607';
let fake: FakeLinkedIn;

beforeAll(async () => {
  fake = await startFakeLinkedIn({
    organizations: [
      { id: 2414183, localizedName: 'Acme Bakery', vanityName: 'acme-bakery', role: 'ADMINISTRATOR' },
      { id: 2414184, localizedName: 'Acme Shop', vanityName: 'acme-shop', role: 'ANALYST' },
    ],
  });
});
afterAll(async () => {
  await fake?.close();
});

const member = () => `urn:li:person:${fake.member.sub}`;

async function consent(scopes: string[]): Promise<string> {
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: fake.clientId,
    redirect_uri: REDIRECT,
    state: 'st',
    scope: scopes.join(' '),
  });
  const page = await fetch(`${fake.url}/oauth/v2/authorization?${query.toString()}`, { redirect: 'manual' });
  expect(page.status).toBe(302);
  const back = new URL(page.headers.get('location')!);
  expect(back.searchParams.get('state')).toBe('st');
  return back.searchParams.get('code')!;
}

function token(form: Record<string, string>) {
  return fetch(`${fake.url}/oauth/v2/accessToken`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_id: fake.clientId, client_secret: fake.clientSecret, ...form }).toString(),
  });
}

async function accessToken(scopes: string[]): Promise<string> {
  const code = await consent(scopes);
  const answer = await token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT });
  return ((await answer.json()) as { access_token: string }).access_token;
}

function api(
  path: string,
  accessToken: string,
  init: { method?: string; json?: unknown; version?: string | null } = {},
) {
  return fetch(`${fake.url}${path}`, {
    method: init.method ?? 'GET',
    headers: {
      Authorization: `Bearer ${accessToken}`,
      ...(init.version === null ? {} : { 'Linkedin-Version': init.version ?? VERSION }),
      'X-Restli-Protocol-Version': '2.0.0',
      ...(init.json === undefined ? {} : { 'Content-Type': 'application/json' }),
    },
    ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
  });
}

async function uploadImage(accessToken: string, owner: string): Promise<string> {
  const init = await api('/rest/images?action=initializeUpload', accessToken, {
    method: 'POST',
    json: { initializeUploadRequest: { owner } },
  });
  expect(init.status).toBe(200);
  const { value } = (await init.json()) as { value: { uploadUrl: string; image: string } };
  const put = await fetch(value.uploadUrl, {
    method: 'PUT',
    headers: { Authorization: `Bearer ${accessToken}` },
    body: Buffer.from('image bytes'),
  });
  expect(put.status).toBe(201);
  return value.image;
}

const post = (author: string, commentary: string, content?: unknown) => ({
  author,
  commentary,
  visibility: 'PUBLIC',
  distribution: { feedDistribution: 'MAIN_FEED', targetEntities: [], thirdPartyDistributionChannels: [] },
  lifecycleState: 'PUBLISHED',
  isReshareDisabledByAuthor: false,
  ...(content ? { content } : {}),
});

describe('the fake LinkedIn', () => {
  it('trades a code once for a 60-day token, with a refresh token only when the app gets them', async () => {
    const code = await consent(['openid', 'profile', 'w_member_social']);
    const first = await token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT });
    const body = (await first.json()) as Record<string, unknown>;
    expect(body.expires_in).toBe(60 * 24 * 60 * 60);
    expect(body.scope).toBe('openid,profile,w_member_social');
    expect(body.refresh_token).toBeUndefined();
    expect((await token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT })).status).toBe(400);

    fake.refreshTokens(true);
    try {
      const again = await consent(['openid', 'profile', 'w_member_social']);
      const granted = (await (
        await token({ grant_type: 'authorization_code', code: again, redirect_uri: REDIRECT })
      ).json()) as { refresh_token: string; refresh_token_expires_in: number };
      // A year from the moment of the grant, to the second: a second may have passed since.
      expect(granted.refresh_token_expires_in).toBeLessThanOrEqual(365 * 24 * 60 * 60);
      expect(granted.refresh_token_expires_in).toBeGreaterThan(365 * 24 * 60 * 60 - 60);
      fake.advanceClock(10 * 24 * 60 * 60);
      const refreshed = (await (
        await token({ grant_type: 'refresh_token', refresh_token: granted.refresh_token })
      ).json()) as { access_token: string; refresh_token: string; refresh_token_expires_in: number };
      expect(refreshed.refresh_token).toBe(granted.refresh_token);
      // The fake's clock runs: the year left is counted from the moment of the refresh, to the second.
      expect(refreshed.refresh_token_expires_in).toBeLessThanOrEqual(355 * 24 * 60 * 60);
      expect(refreshed.refresh_token_expires_in).toBeGreaterThan(355 * 24 * 60 * 60 - 60);
    } finally {
      fake.refreshTokens(false);
    }
    // An unknown scope is refused at the consent page.
    const refused = await fetch(
      `${fake.url}/oauth/v2/authorization?response_type=code&client_id=${fake.clientId}&redirect_uri=${REDIRECT}&scope=w_everything`,
      { redirect: 'manual' },
    );
    expect(new URL(refused.headers.get('location')!).searchParams.get('error')).toBe('unauthorized_scope_error');
  });

  it('answers userinfo and the pages the member administers', async () => {
    const token = await accessToken(['openid', 'profile', 'w_member_social', 'r_organization_admin']);
    const user = (await (await api('/v2/userinfo', token, { version: null })).json()) as Record<string, unknown>;
    expect(user).toMatchObject({ sub: fake.member.sub, name: 'Ada Lovelace' });
    const acls = await api('/rest/organizationAcls?q=roleAssignee&role=ADMINISTRATOR&state=APPROVED', token);
    expect(((await acls.json()) as { elements: unknown[] }).elements).toEqual([
      { roleAssignee: member(), state: 'APPROVED', role: 'ADMINISTRATOR', organization: 'urn:li:organization:2414183' },
    ]);
    const page = (await (await api('/rest/organizations/2414183', token)).json()) as Record<string, unknown>;
    expect(page).toEqual({ id: 2414183, localizedName: 'Acme Bakery', vanityName: 'acme-bakery' });
    // Without the scope, 403.
    const plain = await accessToken(['openid', 'profile']);
    expect((await api('/rest/organizationAcls?q=roleAssignee', plain)).status).toBe(403);
  });

  it('asks the versioned API for its headers, and answers 426 to a retired version', async () => {
    const token = await accessToken(['openid', 'profile', 'w_member_social']);
    const missing = await api('/rest/posts', token, { method: 'POST', json: post(member(), 'x'), version: null });
    expect(missing.status).toBe(400);
    fake.retireVersion('202401');
    const retired = await api('/rest/posts', token, { method: 'POST', json: post(member(), 'x'), version: '202401' });
    expect(retired.status).toBe(426);
    expect(await retired.json()).toMatchObject({ status: 426, code: 'NONEXISTENT_VERSION' });
    const noRestli = await fetch(`${fake.url}/rest/posts`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Linkedin-Version': VERSION, 'Content-Type': 'application/json' },
      body: JSON.stringify(post(member(), 'x')),
    });
    expect(noRestli.status).toBe(400);
    expect(fake.posts).toEqual([]);
  });

  it('publishes a multi-image post answered with x-restli-id, found by author with r_member_social, and a comment', async () => {
    const token = await accessToken(['openid', 'profile', 'w_member_social', 'r_member_social']);
    const images = [await uploadImage(token, member()), await uploadImage(token, member())];
    const created = await api('/rest/posts', token, {
      method: 'POST',
      json: post(member(), 'Two \\(pictures\\) \\#today', { multiImage: { images: images.map((id) => ({ id })) } }),
    });
    expect(created.status).toBe(201);
    const urn = created.headers.get('x-restli-id')!;
    expect(urn).toMatch(/^urn:li:share:\d+$/);
    expect(fake.shownText(fake.posts.at(-1)!)).toBe('Two (pictures) #today');
    const listed = await api(`/rest/posts?author=${encodeURIComponent(member())}&q=author&count=10`, token);
    expect(((await listed.json()) as { elements: { id: string }[] }).elements[0]!.id).toBe(urn);
    const comment = await api(`/rest/socialActions/${encodeURIComponent(urn)}/comments`, token, {
      method: 'POST',
      json: { actor: member(), object: urn, message: { text: 'More at example.org' } },
    });
    expect(comment.status).toBe(201);
    expect(comment.headers.get('x-restli-id')).toMatch(/^urn:li:comment:\(urn:li:share:\d+,\d+\)$/);
    // One image is not a multi-image post.
    const one = await api('/rest/posts', token, {
      method: 'POST',
      json: post(member(), 'x', { multiImage: { images: [{ id: images[0] }] } }),
    });
    expect(one.status).toBe(422);
  });

  it('refuses a page the member does not administer, and reading posts without the read scope', async () => {
    const token = await accessToken(['openid', 'profile', 'w_member_social', 'w_organization_social']);
    const shop = await api('/rest/posts', token, { method: 'POST', json: post('urn:li:organization:2414184', 'x') });
    expect(shop.status).toBe(403);
    const bakery = await api('/rest/posts', token, { method: 'POST', json: post('urn:li:organization:2414183', 'x') });
    expect(bakery.status).toBe(201);
    const listed = await api(`/rest/posts?author=${encodeURIComponent(member())}&q=author`, token);
    expect(listed.status).toBe(403);
  });

  it('holds the answer to a post it made: sent later, or never to a caller that went away', async () => {
    const token = await accessToken(['openid', 'profile', 'w_organization_social', 'r_organization_social']);
    const bakery = 'urn:li:organization:2414183';
    // The first post goes by; the one after it is answered 300 ms after it is made.
    fake.holdNextAnswer('createPost', { skip: 1, ms: 300 });
    expect((await api('/rest/posts', token, { method: 'POST', json: post(bakery, 'Answered at once') })).status).toBe(
      201,
    );
    expect(fake.heldAnswers()).toBe(0);
    const late = api('/rest/posts', token, { method: 'POST', json: post(bakery, 'Answered late') });
    await eventually(() => expect(fake.heldAnswers()).toBe(1));
    const made = fake.posts.find((p) => p.commentary === 'Answered late');
    expect(made).toBeDefined();
    expect((await late).headers.get('x-restli-id')).toBe(made!.id);

    fake.holdNextAnswer('createPost');
    const caller = new AbortController();
    const waiting = fetch(`${fake.url}/rest/posts`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${token}`,
        'Linkedin-Version': VERSION,
        'X-Restli-Protocol-Version': '2.0.0',
        'Content-Type': 'application/json',
      },
      body: JSON.stringify(post(bakery, 'Never answered')),
      signal: caller.signal,
    });
    await eventually(() => expect(fake.heldAnswers()).toBe(1));
    caller.abort();
    await expect(waiting).rejects.toThrow();
    // The caller went away without its answer; the post stays, listed among the page's posts.
    await eventually(() => expect(fake.heldAnswers()).toBe(0));
    const listed = await api(`/rest/posts?author=${encodeURIComponent(bakery)}&q=author&count=10`, token);
    const elements = ((await listed.json()) as { elements: { commentary: string }[] }).elements;
    expect(elements.filter((e) => e.commentary === 'Never answered')).toHaveLength(1);
    // A refusal is answered at once, the switch left for the next post made.
    fake.holdNextAnswer('createPost', { ms: 0 });
    const shop = await api('/rest/posts', token, { method: 'POST', json: post('urn:li:organization:2414184', 'x') });
    expect(shop.status).toBe(403);
    expect((await api('/rest/posts', token, { method: 'POST', json: post(bakery, 'Held 0 ms') })).status).toBe(201);
  });

  it('takes a video in parts with their ETags, and processes it to AVAILABLE or PROCESSING_FAILED', async () => {
    const token = await accessToken(['openid', 'profile', 'w_member_social']);
    fake.partSize(4);
    try {
      for (const fails of [false, true]) {
        if (fails) fake.failNextProcessing();
        const init = await api('/rest/videos?action=initializeUpload', token, {
          method: 'POST',
          json: { initializeUploadRequest: { owner: member(), fileSizeBytes: 10 } },
        });
        const { value } = (await init.json()) as {
          value: {
            video: string;
            uploadToken: string;
            uploadInstructions: { uploadUrl: string; firstByte: number; lastByte: number }[];
          };
        };
        expect(value.uploadInstructions.map((p) => [p.firstByte, p.lastByte])).toEqual([
          [0, 3],
          [4, 7],
          [8, 9],
        ]);
        const etags: string[] = [];
        for (const part of value.uploadInstructions) {
          const put = await fetch(part.uploadUrl, {
            method: 'PUT',
            headers: { Authorization: `Bearer ${token}` },
            body: Buffer.alloc(part.lastByte - part.firstByte + 1, 1),
          });
          expect(put.status).toBe(200);
          etags.push(put.headers.get('etag')!);
        }
        const wrong = await api('/rest/videos?action=finalizeUpload', token, {
          method: 'POST',
          json: { finalizeUploadRequest: { video: value.video, uploadToken: '', uploadedPartIds: etags.toReversed() } },
        });
        expect(wrong.status).toBe(400);
        const finalized = await api('/rest/videos?action=finalizeUpload', token, {
          method: 'POST',
          json: { finalizeUploadRequest: { video: value.video, uploadToken: '', uploadedPartIds: etags } },
        });
        expect(finalized.status).toBe(200);
        const status = async () =>
          ((await (await api(`/rest/videos/${encodeURIComponent(value.video)}`, token)).json()) as { status: string })
            .status;
        expect(await status()).toBe('PROCESSING');
        expect(await status()).toBe(fails ? 'PROCESSING_FAILED' : 'AVAILABLE');
      }
    } finally {
      fake.partSize(4 * 1024 * 1024);
    }
  });

  it('answers 401 to a revoked or expired token and 429 when throttled', async () => {
    const token = await accessToken(['openid', 'profile', 'w_member_social']);
    fake.throttleNext('createPost');
    expect((await api('/rest/posts', token, { method: 'POST', json: post(member(), 'x') })).status).toBe(429);
    fake.advanceClock(61 * 24 * 60 * 60);
    const expired = await api('/rest/posts', token, { method: 'POST', json: post(member(), 'x') });
    expect(expired.status).toBe(401);
    expect(await expired.json()).toMatchObject({ status: 401, serviceErrorCode: 65602 });
    const fresh = await accessToken(['openid', 'profile', 'w_member_social']);
    fake.revokeAll();
    expect((await api('/v2/userinfo', fresh)).status).toBe(401);
  });

  it('shows little text as LinkedIn does: escapes undone, cut at a reserved character left unescaped', () => {
    expect(shownLittleText('a \\@b \\\\ c')).toBe('a @b \\ c');
    expect(shownLittleText('before (after')).toBe('before ');
  });
});
