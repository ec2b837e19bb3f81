// The answers of the JSON APIs hold one organization's records (or tokens): no cache may keep them,
// and no browser may read them as another type than they are sent as. Both contracts declare the
// two headers on every response.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicApi, oauthApi } from './support/api.js';
import { createChannel, createOrganization, insertPost, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';
import { TIMEOUTS } from './support/timeouts.js';

let server: TestServer;
let org: TestOrganization;
let postId: string;

beforeAll(async () => {
  server = await startTestServer();
  org = await createOrganization(server.ctx.db, 'Header Org');
  const channel = await createChannel(server.ctx.db, org.id, 'sandbox');
  postId = await insertPost(server.ctx.db, {
    organizationId: org.id,
    channelId: channel.id,
    status: 'draft',
    scheduledAt: null,
  });
}, TIMEOUTS.hook);
afterAll(() => server?.close());

function expectUncachedAndUnsniffed(response: Response): void {
  expect(response.headers.get('cache-control')).toBe('no-store');
  expect(response.headers.get('x-content-type-options')).toBe('nosniff');
}

describe('the Public API', () => {
  it('sends a list with Cache-Control: no-store and X-Content-Type-Options: nosniff', async () => {
    const { data, response } = await publicApi(server, org.auth).GET('/public/v1/posts');
    expect(data?.data.map((post) => post.id)).toEqual([postId]);
    expectUncachedAndUnsniffed(response);
  });

  it('sends a record, and answers HEAD, with both headers', async () => {
    const api = publicApi(server, org.auth);
    const { data, response } = await api.GET('/public/v1/posts/{id}', { params: { path: { id: postId } } });
    expect(data?.id).toBe(postId);
    expectUncachedAndUnsniffed(response);
    const head = await server.fetch(`/public/v1/posts/${postId}`, { method: 'HEAD', headers: org.auth });
    expect(head.status).toBe(200);
    expectUncachedAndUnsniffed(head);
  });

  it('sends its errors with both headers: unknown record, no credential, malformed input, a route not found', async () => {
    const api = publicApi(server, org.auth);
    const missing = await api.GET('/public/v1/posts/{id}', { params: { path: { id: 'post_AAAAAAAAAAAAAAAAAAAA' } } });
    expect(missing.response.status).toBe(404);
    expectUncachedAndUnsniffed(missing.response);
    const anonymous = await publicApi(server).GET('/public/v1/posts');
    expect(anonymous.response.status).toBe(401);
    expectUncachedAndUnsniffed(anonymous.response);
    for (const path of ['/public/v1/posts/%ff', '/public/v1/posts?group=%00', '/public/v1/nothing-here']) {
      const response = await server.fetch(path, { headers: org.auth });
      expect(response.status, path).toBeGreaterThanOrEqual(400);
      expectUncachedAndUnsniffed(response);
    }
  });
});

describe('the OAuth API', () => {
  it('sends the server metadata, token errors and revocations with both headers', async () => {
    const metadata = await oauthApi(server).GET('/.well-known/oauth-authorization-server');
    expect(metadata.response.status).toBe(200);
    expectUncachedAndUnsniffed(metadata.response);
    const token = await server.fetch('/api/oauth/token', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=password',
    });
    expect(token.status).toBe(400);
    expectUncachedAndUnsniffed(token);
    const wrongMethod = await server.fetch('/api/oauth/revoke');
    expect(wrongMethod.status).toBe(405);
    expectUncachedAndUnsniffed(wrongMethod);
  });
});
