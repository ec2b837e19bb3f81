import type { Db } from '../../src/db/database.js';
import { OutboundClient } from '../../src/net/outbound-client.js';
import { AppPictureDownloader } from '../../src/oauth/app-pictures.js';
import { registerApp, type AppDetails } from '../../src/oauth/apps.js';
import { approveApp } from '../../src/oauth/grants.js';
import type { OAuthApp } from '../../src/oauth/tables.js';
import type { TestOrganization } from './fixtures.js';
import type { TestServer } from './server.js';

export interface TestApp {
  app: OAuthApp;
  clientId: string;
  secret: string;
}

/** Downloads app pictures from the loopback servers of the tests (see picture-host.ts). */
export const testPictures = new AppPictureDownloader(
  new OutboundClient({ allowPrivateAddresses: true, allowedRanges: [], idleTimeoutSeconds: 5, maxDurationSeconds: 10 }),
);

export async function createOAuthApp(
  db: Db,
  organizationId: string,
  details: Partial<AppDetails> = {},
): Promise<TestApp> {
  const { app, secret } = await registerApp(
    db,
    organizationId,
    {
      name: 'Schedulr Pro',
      description: 'Plans your posts.',
      pictureUrl: '',
      redirectUri: 'https://app.example.org/oauth/callback',
      ...details,
    },
    testPictures,
    new Date(),
  );
  return { app, clientId: app.client_id, secret };
}

/** A code as the consent page issues it when the user approves (the browser part is tested elsewhere). */
export function approve(
  db: Db,
  app: TestApp,
  org: TestOrganization,
  options: { redirectUri?: string; codeChallenge?: string; resource?: string; scope?: string; now?: Date } = {},
): Promise<string> {
  return approveApp(
    db,
    {
      appId: app.app.id,
      organizationId: org.id,
      userId: org.userId,
      redirectUri: options.redirectUri ?? null,
      codeChallenge: options.codeChallenge ?? null,
      resource: options.resource ?? null,
      scope: options.scope ?? null,
    },
    options.now ?? new Date(),
  );
}

export type TokenParameters = Record<string, unknown>;

/** POSTs the token endpoint: JSON by default, or a form, optionally with HTTP Basic client credentials. */
export function tokenRequest(
  server: TestServer,
  parameters: TokenParameters,
  options: { form?: boolean; basic?: { clientId: string; secret: string }; path?: string } = {},
): Promise<Response> {
  const headers: Record<string, string> = {};
  if (options.basic) {
    const encode = (value: string) => encodeURIComponent(value);
    headers.Authorization = `Basic ${Buffer.from(`${encode(options.basic.clientId)}:${encode(options.basic.secret)}`).toString('base64')}`;
  }
  let body: string;
  if (options.form) {
    headers['Content-Type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(parameters as Record<string, string>).toString();
  } else {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(parameters);
  }
  return server.fetch(options.path ?? '/api/oauth/token', { method: 'POST', headers, body });
}

/** Exchanges a code with body credentials and returns the access token, failing the test otherwise. */
export async function exchange(
  server: TestServer,
  app: TestApp,
  code: string,
  extra: TokenParameters = {},
): Promise<string> {
  const response = await tokenRequest(server, {
    grant_type: 'authorization_code',
    code,
    client_id: app.clientId,
    client_secret: app.secret,
    ...extra,
  });
  const body = (await response.json()) as { access_token?: string };
  if (response.status !== 200 || !body.access_token)
    throw new Error(`token exchange failed: ${response.status} ${JSON.stringify(body)}`);
  return body.access_token;
}

export async function channelsStatus(server: TestServer, token: string): Promise<number> {
  const response = await server.fetch('/public/v1/channels', { headers: { Authorization: `Bearer ${token}` } });
  await response.arrayBuffer();
  return response.status;
}
