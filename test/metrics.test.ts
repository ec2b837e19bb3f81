import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from './support/eventually.js';
import { createChannel, createOrganization, type TestOrganization } from './support/fixtures.js';
import { bodyOf, type Schemas } from './support/api.js';
import { send } from './support/posts.js';
import { startTestServer, type TestServer } from './support/server.js';

// Prometheus metrics: served behind METRICS_TOKEN on the main port, absent by default. The server
// publishes to its own sandbox network, then its series are read as a scraper reads them.
const TOKEN = 'metrics-token-0123456789abcdef';
let server: TestServer;
let plain: TestServer;
let org: TestOrganization;

beforeAll(async () => {
  [server, plain] = await Promise.all([
    startTestServer({ worker: true, env: { METRICS_TOKEN: TOKEN, PUBLISH_RETRY_BASE_MS: '200' } }),
    startTestServer(),
  ]);
  server.ctx.config.sandbox.networkUrl = server.baseUrl;
  org = await createOrganization(server.ctx.db, 'Observed');
});
afterAll(async () => {
  await Promise.all([server?.close(), plain?.close()]);
});

async function scrape(): Promise<string> {
  const response = await server.fetch('/metrics', { headers: { Authorization: `Bearer ${TOKEN}` } });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return response.text();
}

/** The value of one sample, e.g. `publications_total{network="sandbox",outcome="published"}`. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((entry) => entry.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('metrics', () => {
  it('count a publication, its lateness, the request that made it and the queues, after it was published', async () => {
    const channelId = (await createChannel(server.ctx.db, org.id, 'sandbox', 'Observed sandbox')).id;
    const created = await send(server, org.auth, 'POST', '/public/v1/posts', {
      type: 'now',
      content: 'Counted',
      channelIds: [channelId],
    });
    expect(created.status).toBe(201);
    const postId = (await bodyOf<{ data: Schemas['Post'][] }>(created)).data[0]!.id;
    await eventually(async () => {
      const post = await bodyOf<Schemas['Post']>(await send(server, org.auth, 'GET', `/public/v1/posts/${postId}`));
      expect(post.status).toBe('published');
    });

    const text = await scrape();
    expect(sample(text, 'publications_total{network="sandbox",outcome="published"}')).toBe(1);
    expect(sample(text, 'publish_lateness_seconds_count{network="sandbox"}')).toBe(1);
    expect(sample(text, 'publish_lateness_seconds_sum{network="sandbox"}')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'http_requests_total{operation="createPost",method="POST",status="201"}')).toBe(1);
    expect(sample(text, 'http_request_duration_seconds_count{operation="createPost",method="POST",status="201"}')).toBe(
      1,
    );
    expect(sample(text, 'http_requests_total{operation="getPost",method="GET",status="200"}')).toBeGreaterThan(0);
    // No raw path with an id in it names a series.
    expect(text).not.toContain(postId);
    // The publication's job is done: its queue waits for nothing.
    expect(sample(text, 'job_queue_waiting{queue="publish-post"}')).toBe(0);
    expect(sample(text, 'job_queue_oldest_due_seconds{queue="publish-post"}')).toBe(0);
    expect(sample(text, 'job_queue_waiting{queue="deliver-webhook"}')).toBe(0);
    for (const series of ['webhook_deliveries_total', 'token_refresh_failures_total'])
      expect(text).toContain(`# TYPE ${series} counter`);
    // PostgreSQL's pool is shown; PGlite has none.
    if (server.ctx.database.kind === 'postgres') expect(sample(text, 'db_pool_connections')).toBeGreaterThan(0);
    else expect(text).not.toContain('db_pool_connections');
  });

  it('are refused without the token, and absent when not configured', async () => {
    expect((await server.fetch('/metrics')).status).toBe(401);
    expect((await server.fetch('/metrics', { headers: { Authorization: `Bearer ${TOKEN}x` } })).status).toBe(401);
    expect((await server.fetch('/metrics', { headers: { Authorization: 'Bearer wrong' } })).status).toBe(401);
    expect((await plain.fetch('/metrics')).status).toBe(404);
  });

  it('are served on a port of their own with METRICS_PORT, and not on the main port', async () => {
    const port = await freePort();
    const own = await startTestServer({ env: { METRICS_PORT: String(port) } });
    try {
      const response = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(response.status).toBe(200);
      expect(await response.text()).toContain('# TYPE publications_total counter');
      expect((await own.fetch('/metrics')).status).toBe(404);
    } finally {
      await own.close();
    }
  });
});

/** A port nothing listens on now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
    probe.on('error', reject);
  });
}
