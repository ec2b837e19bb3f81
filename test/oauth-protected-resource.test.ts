// Protected resource metadata (RFC 9728) and the challenges of the resources' 401s (RFC 6750 §3,
// RFC 9728 §5.1): how a client that only knows a resource's address finds its authorization server.
import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { protectedResourceChallenge, resourceMetadataUrl } from '../src/http/resource-challenge.js';
import { oauthApi } from './support/api.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';

let server: TestServer;
let org: TestOrganization;
let base: string;

beforeAll(async () => {
  server = await startTestServer();
  org = await createOrganization(server.ctx.db);
  base = server.ctx.config.publicUrl;
});
afterAll(() => server?.close());

const insecure = { [oauth.allowInsecureRequests]: true };
const ALL_SCOPES = [
  'posts:read',
  'posts:write',
  'media:read',
  'media:write',
  'channels:read',
  'channels:write',
  'analytics:read',
  'webhooks:read',
  'webhooks:write',
];

/** The attributes of a `Bearer` challenge, by name. */
function challengeOf(header: string | null): Record<string, string> {
  expect(header).toMatch(/^Bearer /);
  const attributes: Record<string, string> = {};
  for (const [, name, value] of header!.slice('Bearer '.length).matchAll(/([a-z_]+)="([^"]*)"/g)) {
    attributes[name!] = value!;
  }
  return attributes;
}

describe('protected resource metadata (RFC 9728)', () => {
  it('describes the MCP server, the Public API and the whole origin, each at the address derived from it', async () => {
    for (const [path, resource, name] of [
      ['/.well-known/oauth-protected-resource/mcp', '/mcp', 'Post Scheduler MCP server'],
      ['/.well-known/oauth-protected-resource/public/v1', '/public/v1', 'Post Scheduler Public API'],
      ['/.well-known/oauth-protected-resource', '', 'Post Scheduler (Public API and MCP server)'],
    ] as const) {
      const { data, response } = await oauthApi(server).GET(path);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(data).toEqual({
        resource: `${base}${resource}`,
        authorization_servers: [base],
        bearer_methods_supported: ['header'],
        resource_name: name,
        resource_documentation: `${base}/docs/oauth`,
        scopes_supported: ALL_SCOPES,
      });
      expect(resourceMetadataUrl(data!.resource)).toBe(`${base}${path}`);
    }
  });

  it('is what a standard client library discovers from the resource address, and names this authorization server', async () => {
    for (const resource of [`${base}/mcp`, `${base}/public/v1`]) {
      const metadata = await oauth.processResourceDiscoveryResponse(
        new URL(resource),
        await oauth.resourceDiscoveryRequest(new URL(resource), insecure),
      );
      expect(metadata.resource).toBe(resource);
      const issuer = new URL(metadata.authorization_servers![0]!);
      const as = await oauth.processDiscoveryResponse(
        issuer,
        await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }),
      );
      expect(as.issuer).toBe(base);
    }
  });

  it('answers HEAD, and 405 with Allow to other methods', async () => {
    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
      expect((await server.fetch(path, { method: 'HEAD' })).status).toBe(200);
      const post = await server.fetch(path, { method: 'POST' });
      expect(post.status).toBe(405);
      expect(post.headers.get('allow')).toBe('GET, HEAD');
      expect(await post.json()).toEqual({
        error: 'invalid_request',
        error_description: 'This endpoint accepts GET only.',
      });
    }
  });

  it('is not served for resources this installation does not have', async () => {
    const response = await server.fetch('/.well-known/oauth-protected-resource/elsewhere');
    expect(response.status).toBe(404);
  });
});

describe("the Public API's 401", () => {
  it('points to its metadata, and says invalid_token only when a credential was sent', async () => {
    const anonymous = await server.fetch('/public/v1/channels');
    expect(anonymous.status).toBe(401);
    const bare = challengeOf(anonymous.headers.get('www-authenticate'));
    expect(bare).toEqual({
      realm: 'public-api',
      resource_metadata: `${base}/.well-known/oauth-protected-resource/public/v1`,
    });

    const garbled = await server.fetch('/public/v1/channels', { headers: { Authorization: 'Bearer pos_nothing' } });
    expect(garbled.status).toBe(401);
    const refused = challengeOf(garbled.headers.get('www-authenticate'));
    expect(refused).toMatchObject({ resource_metadata: bare.resource_metadata, error: 'invalid_token' });
    expect(refused.error_description).toMatch(/invalid, has expired or has been revoked/);

    // The address in the challenge serves the document of this very resource.
    const document = (await (await fetch(bare.resource_metadata!)).json()) as { resource: string };
    expect(document.resource).toBe(`${base}/public/v1`);

    const allowed = await server.fetch('/public/v1/channels', { headers: { Authorization: `Bearer ${org.apiKey}` } });
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get('www-authenticate')).toBeNull();
  });
});

describe('protectedResourceChallenge', () => {
  it('names the metadata of the resource, and the error and scope of a refused credential', () => {
    expect(protectedResourceChallenge('https://h.example/mcp')).toBe(
      'Bearer resource_metadata="https://h.example/.well-known/oauth-protected-resource/mcp"',
    );
    expect(
      protectedResourceChallenge('https://h.example/mcp', {
        error: 'insufficient_scope',
        description: 'This tool needs the "posts:write" scope.\n',
        scope: 'posts:write',
      }),
    ).toBe(
      'Bearer resource_metadata="https://h.example/.well-known/oauth-protected-resource/mcp", ' +
        'error="insufficient_scope", error_description="This tool needs the  posts:write  scope. ", scope="posts:write"',
    );
    expect(resourceMetadataUrl('https://h.example')).toBe('https://h.example/.well-known/oauth-protected-resource');
    expect(resourceMetadataUrl('https://h.example/')).toBe('https://h.example/.well-known/oauth-protected-resource');
  });
});
