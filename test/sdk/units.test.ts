import { describe, expect, it } from 'vitest';
import { contentTypeFromName, detectContentType, sniffContentType } from '../../src/sdk/src/content-type.js';
import { createServiceError, describeRequest, parseRetryAfter } from '../../src/sdk/src/errors.js';
import { backoffSeconds, retryDelaySeconds, shouldRetry, type AttemptOutcome, type RetryPolicy } from '../../src/sdk/src/retry.js';

const policy: RetryPolicy = { maxRetries: 2, maxRetryAfter: 60, replayable: true };
const response = (status: number, retryAfter?: number): AttemptOutcome => ({ kind: 'response', status, retryAfter });

describe('shouldRetry', () => {
  it('retries network failures, 429 and 5xx except 501, while retries remain', () => {
    for (const outcome of [{ kind: 'network-error' } as const, response(429), response(500), response(502), response(503), response(504)]) {
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
  const request = new Request('https://storage.example.com/uploads/upl_1?expires=1795598400&X-Amz-Signature=abc123&X-Amz-Credential=AKIA%2F2026&size=3', {
    method: 'PUT',
    headers: { Authorization: 'Bearer pos_secretToken', 'Content-Type': 'image/png' },
  });

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

  it('reads the error body, and falls back on the headers and the status', async () => {
    const api = createServiceError(request, {
      response: new Response(null, { status: 429, headers: { 'Retry-After': '12', 'X-Request-Id': 'req_header' } }),
      body: JSON.stringify({ error: { code: 'rate_limited', message: 'Slow down.', requestId: 'req_body', retryAfter: 12 } }),
    });
    expect(api).toMatchObject({ status: 429, code: 'rate_limited', message: 'Slow down.', requestId: 'req_body', retryAfter: 12, details: [] });
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
      body: JSON.stringify({ error: { code: 'rate_limited', message: 'Slow down.', requestId: 'req_body', retryAfter: 7 } }),
    });
    expect(bodyOnly.retryAfter).toBe(7);
  });
});

describe('content type detection', () => {
  const bytes = (...values: (number | string)[]) =>
    new Uint8Array(values.flatMap((value) => (typeof value === 'string' ? [...value].map((char) => char.charCodeAt(0)) : [value])));

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
    expect(sniffContentType(bytes('%PDF-1.7'))).toBeUndefined();
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
