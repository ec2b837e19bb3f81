import autocannon, { type Request } from 'autocannon';
import type { Seeded } from './seed.js';

export interface Operation {
  name: string;
  request: Request;
}

export interface Sample {
  rps: number;
  p99: number;
  /** Responses that were not 2xx, errors and timeouts: a run with any is not a clean measurement. */
  failed: number;
}

const DAY_MS = 86_400_000;
let created = 0;

/** A create of one scheduled post; each goes to another channel and day, so no daily quota fills up. */
function nextPost(channelIds: string[]): string {
  const n = created++;
  const date = new Date(Math.floor(Date.now() / DAY_MS) * DAY_MS + (2 + (n % 3000)) * DAY_MS + (n % 86_000) * 1000);
  return JSON.stringify({
    type: 'schedule',
    date: date.toISOString(),
    channelIds: [channelIds[n % channelIds.length]],
    content: `Benchmark post ${n}`,
  });
}

/** The benchmarked operations: the Public API's most frequent calls. */
export function operations(seeded: Seeded): Operation[] {
  return [
    { name: 'GET /is-connected', request: { method: 'GET', path: '/public/v1/is-connected' } },
    { name: 'GET /channels', request: { method: 'GET', path: '/public/v1/channels' } },
    { name: 'GET /channels/quota', request: { method: 'GET', path: '/public/v1/channels/quota' } },
    { name: 'GET /posts?limit=20', request: { method: 'GET', path: '/public/v1/posts?limit=20' } },
    { name: 'GET /posts/{id}', request: { method: 'GET', path: `/public/v1/posts/${seeded.postId}` } },
    {
      name: 'POST /posts',
      request: {
        method: 'POST',
        path: '/public/v1/posts',
        headers: { 'content-type': 'application/json' },
        setupRequest: (request) => ({ ...request, body: nextPost(seeded.channelIds) }),
      },
    },
    { name: 'GET /media', request: { method: 'GET', path: '/public/v1/media' } },
  ];
}

/** Sends `operation` to `url` from `connections` connections for `seconds`. */
export async function load(
  url: string,
  apiKey: string,
  operation: Operation,
  connections: number,
  seconds: number,
): Promise<Sample> {
  const result = await autocannon({
    url,
    connections,
    duration: seconds,
    headers: { authorization: `Bearer ${apiKey}` },
    requests: [{ ...operation.request, headers: { authorization: `Bearer ${apiKey}`, ...operation.request.headers } }],
  });
  return {
    rps: result.requests.total / seconds,
    p99: result.latency.p99,
    failed: result.non2xx + result.errors + result.timeouts,
  };
}

/** Counts the answers of `amount` requests by status. */
export async function countStatuses(
  url: string,
  apiKey: string,
  path: string,
  connections: number,
  amount: number,
): Promise<Map<string, number>> {
  const result = await autocannon({
    url,
    connections,
    amount,
    headers: { authorization: `Bearer ${apiKey}` },
    requests: [{ method: 'GET', path }],
  });
  return new Map(Object.entries(result.statusCodeStats).map(([status, { count }]) => [status, count]));
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
