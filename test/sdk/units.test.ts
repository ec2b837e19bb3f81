import { describe, expect, it } from 'vitest';
import { contentTypeFromName, detectContentType, sniffContentType } from '../../src/sdk/src/content-type.js';
import { createServiceError, describeRequest, parseRetryAfter } from '../../src/sdk/src/errors.js';
import Service, { ServiceError, type CreatePostRequest } from '../../src/sdk/src/index.js';
import { paginate } from '../../src/sdk/src/paginate.js';
import {
  backoffSeconds,
  retryDelaySeconds,
  shouldRetry,
  type AttemptOutcome,
  type RetryPolicy,
} from '../../src/sdk/src/retry.js';

const policy: RetryPolicy = { maxRetries: 2, maxRetryAfter: 60, replayable: true };
const response = (status: number, retryAfter?: number): AttemptOutcome => ({ kind: 'response', status, retryAfter });

describe('shouldRetry', () => {
  it('retries network failures, 429 and 5xx except 501, while retries remain', () => {
    for (const outcome of [
      { kind: 'network-error' } as const,
      response(429),
      response(500),
      response(502),
      response(503),
      response(504),
    ]) {
      expect(shouldRetry(outcome, 0, policy)).toBe(true);
      expect(shouldRetry(outcome, 1, policy)).toBe(true);
      expect(shouldRetry(outcome, 2, policy)).toBe(false);
    }
    expect(shouldRetry(response(503), 0, { ...policy, maxRetries: 0 })).toBe(false);
  });

  it('never retries other statuses', () => {
    for (const status of [200, 201, 301, 400, 401, 403, 404, 405, 409, 413, 415, 422, 501]) {
      expect(shouldRetry(response(status), 0, policy)).toBe(false);
    }
  });

  it('retries a request that must not be sent twice only after a 429', () => {
    const once = { ...policy, replayable: false };
    expect(shouldRetry(response(429), 0, once)).toBe(true);
    expect(shouldRetry(response(503), 0, once)).toBe(false);
    expect(shouldRetry({ kind: 'network-error' }, 0, once)).toBe(false);
  });

  it('gives up when the server asks for a wait beyond the cap', () => {
    expect(shouldRetry(response(429, 60), 0, policy)).toBe(true);
    expect(shouldRetry(response(429, 61), 0, policy)).toBe(false);
    expect(shouldRetry(response(503, 61), 0, policy)).toBe(false);
  });
});

describe('backoff', () => {
  it('doubles from half a second up to 5 seconds, less up to a quarter of jitter', () => {
    expect([1, 2, 3, 4, 5, 10].map((retry) => backoffSeconds(retry, () => 0))).toEqual([0.5, 1, 2, 4, 5, 5]);
    expect([1, 2, 5].map((retry) => backoffSeconds(retry, () => 1))).toEqual([0.375, 0.75, 3.75]);
  });

  it('waits what the server asked for when it said', () => {
    expect(retryDelaySeconds(response(429, 7), 1, () => 0)).toBe(7);
    expect(retryDelaySeconds(response(503), 2, () => 0)).toBe(1);
    expect(retryDelaySeconds({ kind: 'network-error' }, 1, () => 0)).toBe(0.5);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-11-21T10:00:00.000Z');
  it('reads seconds and HTTP dates', () => {
    expect(parseRetryAfter('42', now)).toBe(42);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('Sat, 21 Nov 2026 10:01:30 GMT', now)).toBe(90);
    expect(parseRetryAfter('Sat, 21 Nov 2026 09:59:00 GMT', now)).toBe(0);
  });
  it('ignores what it cannot read', () => {
    expect(parseRetryAfter(null, now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('-5', now)).toBeUndefined();
  });
});

describe('createServiceError', () => {
  const request = new Request(
    'https://storage.example.com/uploads/upl_1?expires=1795598400&X-Amz-Signature=abc123&X-Amz-Credential=AKIA%2F2026&size=3',
    {
      method: 'PUT',
      headers: { Authorization: 'Bearer pos_secretToken', 'Content-Type': 'image/png' },
    },
  );

  it('redacts credentials and URL signatures', () => {
    const described = describeRequest(request);
    expect(described.headers).toEqual({ authorization: '[redacted]', 'content-type': 'image/png' });
    const url = new URL(described.url);
    expect(url.searchParams.get('X-Amz-Signature')).toBe('[redacted]');
    expect(url.searchParams.get('X-Amz-Credential')).toBe('[redacted]');
    expect(url.searchParams.get('expires')).toBe('1795598400');
    expect(url.searchParams.get('size')).toBe('3');
    expect(JSON.stringify(described)).not.toMatch(/abc123|AKIA|pos_secretToken/);
  });

  it('reads the error body, and falls back on the headers and the status', () => {
    const api = createServiceError(request, {
      response: new Response(null, { status: 429, headers: { 'Retry-After': '12', 'X-Request-Id': 'req_header' } }),
      body: JSON.stringify({
        error: { code: 'rate_limited', message: 'Slow down.', requestId: 'req_body', retryAfter: 12 },
      }),
    });
    expect(api).toMatchObject({
      status: 429,
      code: 'rate_limited',
      message: 'Slow down.',
      requestId: 'req_body',
      retryAfter: 12,
      details: [],
    });
    expect(api.headers).toMatchObject({ 'retry-after': '12', 'x-request-id': 'req_header' });

    const foreign = createServiceError(request, {
      response: new Response(null, { status: 403, statusText: 'Forbidden', headers: { 'X-Request-Id': 'req_header' } }),
      body: '<Error><Code>SignatureDoesNotMatch</Code></Error>',
    });
    expect(foreign).toMatchObject({ status: 403, code: 'http_403', requestId: 'req_header', retryAfter: undefined });
    expect(foreign.message).toContain('403 Forbidden');
    expect(foreign.message).not.toContain('abc123');

    const bodyOnly = createServiceError(request, {
      response: new Response(null, { status: 429 }),
      body: JSON.stringify({
        error: { code: 'rate_limited', message: 'Slow down.', requestId: 'req_body', retryAfter: 7 },
      }),
    });
    expect(bodyOnly.retryAfter).toBe(7);
  });
});

describe('content type detection', () => {
  const bytes = (...values: (number | string)[]) =>
    new Uint8Array(
      values.flatMap((value) => (typeof value === 'string' ? [...value].map((char) => char.charCodeAt(0)) : [value])),
    );

  it('reads the magic numbers of every accepted type', () => {
    expect(sniffContentType(bytes(0xff, 0xd8, 0xff, 0xe0))).toBe('image/jpeg');
    expect(sniffContentType(bytes(0x89, 'PNG', 0x0d, 0x0a, 0x1a, 0x0a))).toBe('image/png');
    expect(sniffContentType(bytes('GIF89a'))).toBe('image/gif');
    expect(sniffContentType(bytes('GIF87a'))).toBe('image/gif');
    expect(sniffContentType(bytes('RIFF', 0, 0, 0, 0, 'WEBPVP8 '))).toBe('image/webp');
    expect(sniffContentType(bytes(0, 0, 0, 0x20, 'ftypisom'))).toBe('video/mp4');
    expect(sniffContentType(bytes(0, 0, 0, 0x14, 'ftypqt  '))).toBe('video/quicktime');
    expect(sniffContentType(bytes(0, 0, 0, 0x08, 'wide'))).toBe('video/quicktime');
    expect(sniffContentType(bytes(0x1a, 0x45, 0xdf, 0xa3))).toBe('video/webm');
    expect(sniffContentType(bytes('%PDF-1.7'))).toBe('application/pdf');
    expect(sniffContentType(bytes('PK\x03\x04'))).toBeUndefined();
    expect(sniffContentType(bytes('RIFF', 0, 0, 0, 0, 'WAVE'))).toBeUndefined();
    expect(sniffContentType(new Uint8Array())).toBeUndefined();
  });

  it('falls back on the extension, and the bytes win over the name', () => {
    expect(contentTypeFromName('Poster.JPG')).toBe('image/jpeg');
    expect(contentTypeFromName('clip.final.webm')).toBe('video/webm');
    expect(contentTypeFromName('README')).toBeUndefined();
    expect(contentTypeFromName('notes.txt')).toBeUndefined();
    expect(detectContentType(bytes(0x89, 'PNG', 0x0d, 0x0a, 0x1a, 0x0a), 'photo.jpg')).toBe('image/png');
    expect(detectContentType(bytes('????'), 'photo.jpg')).toBe('image/jpeg');
  });
});

describe('paginate', () => {
  interface Page {
    videos: string[];
    nextCursor: string | null;
  }
  const PAGES: Record<string, Page> = {
    first: { videos: ['v1', 'v2'], nextCursor: 'c2' },
    c2: { videos: [], nextCursor: 'c3' },
    c3: { videos: ['v3'], nextCursor: null },
  };

  /** A page fetcher over PAGES that records the cursor of every fetch; `failOn` makes that cursor's fetch reject. */
  function pages(failOn?: string) {
    const cursors: (string | undefined)[] = [];
    const fetchPage = (cursor: string | undefined): Promise<Page> => {
      cursors.push(cursor);
      if (cursor !== undefined && cursor === failOn) return Promise.reject(new Error(`page ${cursor} failed`));
      return Promise.resolve(PAGES[cursor ?? 'first']!);
    };
    return { cursors, fetchPage };
  }

  it('yields the items of every page, following nextCursor until it is null', async () => {
    const { cursors, fetchPage } = pages();
    const items: string[] = [];
    for await (const video of paginate(fetchPage, (page) => page.videos)) items.push(video);
    expect(items).toEqual(['v1', 'v2', 'v3']);
    expect(cursors).toEqual([undefined, 'c2', 'c3']);
  });

  it('fetches nothing before the first item is asked for, and no further page after the consumer stops', async () => {
    const { cursors, fetchPage } = pages();
    const iterator = paginate(fetchPage, (page) => page.videos);
    expect(cursors).toEqual([]);
    for await (const video of iterator) {
      if (video === 'v2') break;
    }
    expect(cursors).toEqual([undefined]);
    await expect(iterator.next()).resolves.toEqual({ done: true, value: undefined });
    expect(cursors).toEqual([undefined]);
  });

  it('rejects with the error of a failed page fetch, after the items of the pages before it', async () => {
    const { cursors, fetchPage } = pages('c3');
    const items: string[] = [];
    const failure = await (async () => {
      for await (const video of paginate(fetchPage, (page) => page.videos)) items.push(video);
    })().catch((error: unknown) => error);
    expect(failure).toEqual(new Error('page c3 failed'));
    expect(items).toEqual(['v1', 'v2']);
    expect(cursors).toEqual([undefined, 'c2', 'c3']);
  });
});

describe('list iterators', () => {
  const ORIGIN = 'https://posts.example.test';

  /**
   * A `fetch` answering each request with the page its `cursor` names (the first page without
   * one) and recording the requests; a page given as a number is answered with that error status.
   */
  function api(pagesByCursor: Record<string, object | number>) {
    const requests: Request[] = [];
    const fetch = (request: Request): Promise<Response> => {
      // An aborted signal's reason is the AbortError (or the reason given to abort()), as fetch rejects with.
      if (request.signal.aborted) return Promise.reject(request.signal.reason as Error);
      requests.push(request);
      const page = pagesByCursor[new URL(request.url).searchParams.get('cursor') ?? 'first'];
      if (typeof page === 'number') {
        return Promise.resolve(
          Response.json(
            { error: { code: 'internal', message: 'Down for the test.', requestId: 'req_test' } },
            { status: page },
          ),
        );
      }
      return Promise.resolve(Response.json(page));
    };
    return { requests, service: new Service('svc_live_pagingTestKey00000000000', ORIGIN, { fetch }) };
  }
  const queryOf = (request: Request) => new URL(request.url).searchParams;

  it('sends the filters and the call options with every page request of iteratePosts', async () => {
    const { requests, service } = api({
      first: { data: [{ id: 'post_1' }, { id: 'post_2' }], nextCursor: 'c2' },
      c2: { data: [{ id: 'post_3' }], nextCursor: null },
    });
    const posts: string[] = [];
    for await (const post of service.iteratePosts(
      { status: ['failed'], limit: 2 },
      { headers: { 'X-Trace-Id': 'trace_1' } },
    ))
      posts.push(post.id);
    expect(posts).toEqual(['post_1', 'post_2', 'post_3']);
    expect(requests.map((request) => new URL(request.url).pathname)).toEqual(['/public/v1/posts', '/public/v1/posts']);
    expect(requests.map((request) => queryOf(request).get('cursor'))).toEqual([null, 'c2']);
    for (const request of requests) {
      expect(queryOf(request).getAll('status')).toEqual(['failed']);
      expect(queryOf(request).get('limit')).toBe('2');
      expect(request.headers.get('x-trace-id')).toBe('trace_1');
    }
  });

  it('iterates media and TikTok videos, each list under data', async () => {
    const media = api({
      first: { data: [{ id: 'med_1' }], nextCursor: 'c2' },
      c2: { data: [{ id: 'med_2' }], nextCursor: null },
    });
    const mediaIds: string[] = [];
    for await (const item of media.service.iterateMedia()) mediaIds.push(item.id);
    expect(mediaIds).toEqual(['med_1', 'med_2']);
    expect(media.requests.map((request) => queryOf(request).get('cursor'))).toEqual([null, 'c2']);

    const tiktok = api({
      first: { account: {}, data: [{ id: 'vid_1' }], nextCursor: 'c2' },
      c2: { account: {}, data: [{ id: 'vid_2' }, { id: 'vid_3' }], nextCursor: null },
    });
    const videoIds: string[] = [];
    for await (const video of tiktok.service.iterateTiktokVideos('ch_tiktok', { days: 30 })) videoIds.push(video.id);
    expect(videoIds).toEqual(['vid_1', 'vid_2', 'vid_3']);
    for (const request of tiktok.requests) {
      expect(new URL(request.url).pathname).toBe('/public/v1/channels/ch_tiktok/tiktok/analytics');
      expect(queryOf(request).get('days')).toBe('30');
    }
    expect(tiktok.requests.map((request) => queryOf(request).get('cursor'))).toEqual([null, 'c2']);
  });

  it('rejects with the ServiceError of a failed page, retried by the call options', async () => {
    const { requests, service } = api({ first: { data: [{ id: 'med_1' }], nextCursor: 'c2' }, c2: 503 });
    const mediaIds: string[] = [];
    const failure = await (async () => {
      for await (const item of service.iterateMedia({ maxRetries: 0 })) mediaIds.push(item.id);
    })().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ServiceError);
    expect(failure).toMatchObject({ status: 503, code: 'internal' });
    expect(mediaIds).toEqual(['med_1']);
    expect(requests).toHaveLength(2);
  });

  it('stops with the caller’s reason when the call’s signal aborts between pages', async () => {
    const { requests, service } = api({
      first: { data: [{ id: 'post_1' }], nextCursor: 'c2' },
      c2: { data: [{ id: 'post_2' }], nextCursor: null },
    });
    const controller = new AbortController();
    const reason = new Error('The user left the page.');
    const failure = await (async () => {
      for await (const post of service.iteratePosts({}, { signal: controller.signal })) {
        if (post.id === 'post_1') controller.abort(reason);
      }
    })().catch((error: unknown) => error);
    expect(failure).toBe(reason);
    expect(requests).toHaveLength(1);
  });
});

describe('createPost’s body, a union discriminated by type', () => {
  // The @ts-expect-error lines are checked by `tsc --noEmit` (part of `npm test`).
  it('requires date for schedule, at compile time, and takes now and draft without it', () => {
    const channelIds = ['ch_2Wq8Lm4Tx7Vb1Nc9Kd3F'];
    const bodies: CreatePostRequest[] = [
      { type: 'schedule', date: '2026-12-01T09:30:00.000Z', content: 'Winter', channelIds },
      { type: 'now', content: 'Winter', channelIds },
      { type: 'draft', posts: [{ channelId: channelIds[0]! }] },
    ];
    // @ts-expect-error `schedule` without `date`
    const undated: CreatePostRequest = { type: 'schedule', content: 'Winter', channelIds };
    // @ts-expect-error a type the contract does not know
    const unknownType: CreatePostRequest = { type: 'later', content: 'Winter', channelIds };
    const renamed: CreatePostRequest = {
      type: 'now',
      // @ts-expect-error `scheduledAt` is the post's field, not the create body's
      scheduledAt: '2026-12-01T09:30:00.000Z',
      content: 'Winter',
      channelIds,
    };
    expect(bodies.map((body) => body.type)).toEqual(['schedule', 'now', 'draft']);
    expect([undated, unknownType, renamed]).toHaveLength(3);
  });
});
