import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from './support/eventually.js';
import { startFakePinterest, type FakePinterest } from './support/fake-pinterest.js';
import { mp4, png } from './support/media-samples.js';

// The fake Pinterest that the Pinterest adapter's tests rely on, held to what developers.pinterest.com
// documents of API v5: OAuth with continuous refresh, boards and sections paged by bookmark, pins of each
// media source, the video upload (register, S3 form, status), errors and limits.
const REDIRECT_URI = 'http://127.0.0.1:9/channels/callback/pinterest';
const SCOPES = 'boards:read,boards:write,pins:read,pins:write,user_accounts:read';
let pinterest: FakePinterest;
let images: http.Server;
let imageUrl: string;

interface Tokens {
  access_token: string;
  refresh_token: string;
  response_type: string;
  expires_in: number;
  refresh_token_expires_in: number;
  scope: string;
}

beforeAll(async () => {
  pinterest = await startFakePinterest();
  const picture = png(4);
  images = http.createServer((req, res) => {
    if (req.url === '/missing.png') return res.writeHead(404).end();
    res.writeHead(200, { 'Content-Type': 'image/png' }).end(picture);
  });
  await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve));
  imageUrl = `http://127.0.0.1:${(images.address() as AddressInfo).port}/poster.png`;
});
afterAll(async () => {
  await pinterest?.close();
  await new Promise((resolve) => images?.close(resolve));
});

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

async function tokenCall(form: Record<string, string>, secret = pinterest.appSecret) {
  const response = await fetch(`${pinterest.url}/v5/oauth/token`, {
    method: 'POST',
    headers: {
      Authorization: basic(pinterest.appId, secret),
      'Content-Type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams(form),
  });
  return { status: response.status, body: (await response.json()) as Tokens & { code?: number; message?: string } };
}

async function connect(scope = SCOPES): Promise<Tokens> {
  const query = new URLSearchParams({
    client_id: pinterest.appId,
    redirect_uri: REDIRECT_URI,
    response_type: 'code',
    scope,
    state: 'st-1',
  });
  const consent = await fetch(`${pinterest.authorizeUrl}?${query.toString()}`, { redirect: 'manual' });
  expect(consent.status).toBe(302);
  const back = new URL(consent.headers.get('location')!);
  expect(back.searchParams.get('state')).toBe('st-1');
  const exchanged = await tokenCall({
    grant_type: 'authorization_code',
    code: back.searchParams.get('code')!,
    redirect_uri: REDIRECT_URI,
  });
  expect(exchanged.status).toBe(200);
  return exchanged.body;
}

function api(token: string, path: string, init: { method?: string; json?: unknown } = {}) {
  return fetch(`${pinterest.url}${path}`, {
    method: init.method ?? 'GET',
    headers: {
      Authorization: `Bearer ${token}`,
      ...(init.json !== undefined ? { 'Content-Type': 'application/json' } : {}),
    },
    ...(init.json !== undefined ? { body: JSON.stringify(init.json) } : {}),
  });
}

describe('the fake Pinterest', () => {
  it('grants tokens for a code once, with Basic auth, and rotates the continuous refresh token', async () => {
    const tokens = await connect();
    expect(tokens).toMatchObject({
      response_type: 'authorization_code',
      expires_in: 30 * 86_400,
      refresh_token_expires_in: 60 * 86_400,
      scope: SCOPES,
    });
    expect(pinterest.grantedScopes()).toEqual(SCOPES.split(','));
    expect(
      (await tokenCall({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, 'wrong')).body,
    ).toEqual({
      code: 2,
      message: 'Authentication failed.',
    });
    const refreshed = await tokenCall({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token });
    expect(refreshed.body).toMatchObject({ response_type: 'refresh_token', refresh_token_expires_in: 60 * 86_400 });
    expect(refreshed.body.refresh_token).not.toBe(tokens.refresh_token);
    // The refresh token used is refused from then on; the new one works.
    const again = await tokenCall({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token });
    expect(again.status).toBe(400);
    expect((await tokenCall({ grant_type: 'refresh_token', refresh_token: refreshed.body.refresh_token })).status).toBe(
      200,
    );
  });

  it('answers access_denied when the user declines, and refuses unknown scopes with its error page', async () => {
    pinterest.deny();
    const query = new URLSearchParams({
      client_id: pinterest.appId,
      redirect_uri: REDIRECT_URI,
      response_type: 'code',
      scope: SCOPES,
      state: 's',
    });
    const denied = await fetch(`${pinterest.authorizeUrl}?${query.toString()}`, { redirect: 'manual' });
    expect(new URL(denied.headers.get('location')!).searchParams.get('error')).toBe('access_denied');
    query.set('scope', 'boards:read,everything');
    expect((await fetch(`${pinterest.authorizeUrl}?${query.toString()}`, { redirect: 'manual' })).status).toBe(400);
  });

  it('lists boards and sections by bookmark, and asks each endpoint’s scopes', async () => {
    for (let i = 0; i < 3; i += 1) pinterest.addBoard({ name: `Board ${i}`, sections: i === 0 ? ['A', 'B'] : [] });
    const { access_token: token } = await connect();
    const first = await api(token, '/v5/boards?page_size=2');
    expect(first.headers.get('x-ratelimit-remaining')).toMatch(/^\d+$/);
    const page = (await first.json()) as { items: { id: string; name: string }[]; bookmark: string | null };
    expect(page.items.map((board) => board.name)).toEqual(['Board 0', 'Board 1']);
    const rest = (await (await api(token, `/v5/boards?page_size=2&bookmark=${page.bookmark}`)).json()) as {
      items: unknown[];
      bookmark: string | null;
    };
    expect([rest.items.length, rest.bookmark]).toEqual([1, null]);
    const sections = (await (await api(token, `/v5/boards/${page.items[0]!.id}/sections`)).json()) as {
      items: { name: string }[];
    };
    expect(sections.items.map((section) => section.name)).toEqual(['A', 'B']);
    const narrow = await connect('boards:read,user_accounts:read');
    const refused = await api(narrow.access_token, '/v5/pins', { method: 'POST', json: {} });
    expect([refused.status, await refused.json()]).toEqual([
      403,
      { code: 29, message: 'You are not permitted to access that resource.' },
    ]);
    expect((await api('pina_unknown', '/v5/user_account')).status).toBe(401);
  });

  it('creates image pins from a URL it downloads, from base64, and carousels of 2 to 5, listed newest first', async () => {
    const board = pinterest.addBoard({ name: 'Pins', sections: ['Salads'] });
    const { access_token: token } = await connect();
    const byUrl = await api(token, '/v5/pins', {
      method: 'POST',
      json: {
        board_id: board.id,
        board_section_id: board.sections[0]!.id,
        title: 'Poster',
        description: 'Winter',
        alt_text: 'A poster',
        media_source: { source_type: 'image_url', url: imageUrl },
      },
    });
    expect(byUrl.status).toBe(201);
    const created = (await byUrl.json()) as { id: string; board_section_id: string };
    expect(created.board_section_id).toBe(board.sections[0]!.id);
    expect(pinterest.pins.at(-1)!.images[0]!.bytes.equals(png(4))).toBe(true);
    const missing = await api(token, '/v5/pins', {
      method: 'POST',
      json: {
        board_id: board.id,
        media_source: { source_type: 'image_url', url: imageUrl.replace('poster', 'missing') },
      },
    });
    expect(missing.status).toBe(400);
    const base64 = await api(token, '/v5/pins', {
      method: 'POST',
      json: {
        board_id: board.id,
        media_source: { source_type: 'image_base64', content_type: 'image/png', data: png(2).toString('base64') },
      },
    });
    expect(base64.status).toBe(201);
    const carousel = (n: number) =>
      api(token, '/v5/pins', {
        method: 'POST',
        json: {
          board_id: board.id,
          media_source: {
            source_type: 'multiple_image_urls',
            items: Array.from({ length: n }, () => ({ url: imageUrl })),
          },
        },
      });
    expect((await carousel(6)).status).toBe(400);
    expect((await carousel(3)).status).toBe(201);
    expect((await api(token, '/v5/pins', { method: 'POST', json: { board_id: '1', media_source: {} } })).status).toBe(
      404,
    );
    const listed = (await (await api(token, `/v5/boards/${board.id}/pins`)).json()) as {
      items: { id: string; media: { media_type: string } }[];
    };
    expect(listed.items.map((pin) => pin.media.media_type)).toEqual(['multiple_images', 'image', 'image']);
    expect(listed.items.at(-1)!.id).toBe(created.id);
  });

  it('registers a video, takes it as an S3 form, processes it over reads, and pins it with a cover', async () => {
    const board = pinterest.addBoard({ name: 'Videos' });
    const { access_token: token } = await connect();
    pinterest.processingChecks(2);
    const registered = (await (
      await api(token, '/v5/media', { method: 'POST', json: { media_type: 'video' } })
    ).json()) as {
      media_id: string;
      upload_url: string;
      upload_parameters: Record<string, string>;
    };
    const status = async () =>
      ((await (await api(token, `/v5/media/${registered.media_id}`)).json()) as { status: string }).status;
    expect(await status()).toBe('registered');
    const form = new FormData();
    for (const [name, value] of Object.entries(registered.upload_parameters)) form.append(name, value);
    form.append('file', new Blob([mp4()]), 'video.mp4');
    expect((await fetch(registered.upload_url, { method: 'POST', body: form })).status).toBe(204);
    expect([await status(), await status(), await status()]).toEqual(['processing', 'processing', 'succeeded']);
    const video = (cover: Record<string, unknown>) =>
      api(token, '/v5/pins', {
        method: 'POST',
        json: {
          board_id: board.id,
          media_source: { source_type: 'video_id', media_id: registered.media_id, ...cover },
        },
      });
    expect((await video({})).status).toBe(400);
    expect((await video({ cover_image_key_frame_time: 2 })).status).toBe(201);
    expect(pinterest.pins.at(-1)!.video).toEqual({ mediaId: registered.media_id, cover: { keyFrameTime: 2 } });

    pinterest.processingChecks(0);
    pinterest.failNextProcessing();
    const failing = (await (
      await api(token, '/v5/media', { method: 'POST', json: { media_type: 'video' } })
    ).json()) as {
      media_id: string;
      upload_url: string;
      upload_parameters: Record<string, string>;
    };
    const tampered = new FormData();
    for (const [name, value] of Object.entries(failing.upload_parameters))
      tampered.append(name, name === 'x-amz-signature' ? '0'.repeat(64) : value);
    tampered.append('file', new Blob([mp4()]), 'video.mp4');
    expect((await fetch(failing.upload_url, { method: 'POST', body: tampered })).status).toBe(403);
    const good = new FormData();
    for (const [name, value] of Object.entries(failing.upload_parameters)) good.append(name, value);
    good.append('file', new Blob([mp4()]), 'video.mp4');
    expect((await fetch(failing.upload_url, { method: 'POST', body: good })).status).toBe(204);
    const failed = (await (await api(token, `/v5/media/${failing.media_id}`)).json()) as { status: string };
    expect(failed.status).toBe('failed');
  });

  it('answers 401 to expired tokens, 429 with its limit headers, and cuts or holds an answer after doing the work', async () => {
    const board = pinterest.addBoard({ name: 'Switches' });
    const { access_token: token } = await connect();
    pinterest.exhaustLimit('listBoards', 30);
    const limited = await api(token, '/v5/boards');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    // The seconds left of the 30, as the request came (a slow machine may have spent some).
    expect(Number(limited.headers.get('x-ratelimit-reset'))).toBeGreaterThan(20);
    expect(Number(limited.headers.get('x-ratelimit-reset'))).toBeLessThanOrEqual(30);
    expect(((await limited.json()) as { code: number }).code).toBe(8);
    pinterest.advanceClock(31);
    expect((await api(token, '/v5/boards')).status).toBe(200);

    const before = pinterest.pins.length;
    pinterest.loseNextAnswer('createPin');
    await expect(
      api(token, '/v5/pins', {
        method: 'POST',
        json: { board_id: board.id, media_source: { source_type: 'image_url', url: imageUrl } },
      }),
    ).rejects.toThrow();
    expect(pinterest.pins.length).toBe(before + 1);

    // An answer held back: sent 300 ms after the pin is made, or never to a caller that went away.
    const pin = (description: string, signal?: AbortSignal) =>
      fetch(`${pinterest.url}/v5/pins`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({
          board_id: board.id,
          description,
          media_source: { source_type: 'image_url', url: imageUrl },
        }),
        ...(signal ? { signal } : {}),
      });
    pinterest.holdNextAnswer('createPin', { skip: 1, ms: 300 });
    expect((await pin('Answered at once')).status).toBe(201);
    expect(pinterest.heldAnswers()).toBe(0);
    const late = pin('Answered late');
    await eventually(() => expect(pinterest.heldAnswers()).toBe(1));
    const made = pinterest.pins.find((p) => p.description === 'Answered late');
    expect(made).toBeDefined();
    expect(((await (await late).json()) as { id: string }).id).toBe(made!.id);
    pinterest.holdNextAnswer('createPin');
    const caller = new AbortController();
    const waiting = pin('Never answered', caller.signal);
    await eventually(() => expect(pinterest.heldAnswers()).toBe(1));
    caller.abort();
    await expect(waiting).rejects.toThrow();
    await eventually(() => expect(pinterest.heldAnswers()).toBe(0));
    const listed = await api(token, `/v5/boards/${board.id}/pins`);
    const items = ((await listed.json()) as { items: { description: string }[] }).items;
    expect(items.filter((i) => i.description === 'Never answered')).toHaveLength(1);

    pinterest.expireAccessTokens();
    const expired = await api(token, '/v5/user_account');
    expect([expired.status, await expired.json()]).toEqual([401, { code: 2, message: 'Authentication failed.' }]);
  });
});
