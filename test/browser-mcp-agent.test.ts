import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { auth, UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MCP_TOOLS } from '../generated/mcp-tools.js';
import {
  describeInChromium,
  launchChromium,
  PAGE_WAIT,
  pathOf,
  signUp,
  type ChromiumProfile,
} from './support/chromium.js';
import { eventually } from './support/eventually.js';
import { png } from './support/media-samples.js';
import { startTestServer, type TestServer } from './support/server.js';
import { TIMEOUTS } from './support/timeouts.js';

// An AI agent signs itself in to the MCP server as the MCP authorization specification describes, with
// the MCP SDK's own client and OAuth client provider: discovery from the 401, the protected resource's
// and the authorization server's metadata, dynamic client registration, authorization with PKCE and the
// resource through the real consent page in Chromium, the token; then it schedules a post with an image.

/** The agent's callback: a real HTTP server on loopback that records the codes it is sent back with. */
async function startCallbackServer() {
  const callbacks: URL[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    // The browser asks for a favicon too.
    if (url.pathname === '/callback') callbacks.push(url);
    res.writeHead(200, { 'Content-Type': 'text/html' }).end('<!doctype html><title>Agent</title><h1>Signed in</h1>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    redirectUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`,
    callbacks,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** What an MCP client keeps of its sign-in, in memory: the SDK asks it for each part. */
class AgentSignIn implements OAuthClientProvider {
  client: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  /** Where the SDK sent the user to approve the agent. */
  authorizationUrl: URL | undefined;

  constructor(
    readonly redirectUrl: string,
    private readonly name: string,
  ) {}

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.name,
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(client: OAuthClientInformationMixed) {
    this.client = client;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/**
 * `fetch`, sent again once when the connection it reused was reset: a connection left idle between two
 * tests may be closed by the server just as the client reuses it (the keep-alive race every HTTP client
 * meets), and the server never saw a request sent on it.
 */
async function resentOnReset(url: string | URL, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (error) {
    const code = ((error as Error).cause as { code?: string } | undefined)?.code;
    if (code !== 'ECONNRESET') throw error;
    return fetch(url, init);
  }
}

describeInChromium('an AI agent signed in to the MCP server with OAuth (Chromium)', () => {
  let server: TestServer;
  let callback: Awaited<ReturnType<typeof startCallbackServer>>;
  let profile: ChromiumProfile;
  let page: Page;

  beforeAll(async () => {
    server = await startTestServer({
      worker: true,
      env: { PUBLISH_RETRY_BASE_MS: '200', DAILY_POST_LIMIT_SANDBOX: '1000' },
    });
    server.ctx.config.sandbox.networkUrl = server.baseUrl;
    callback = await startCallbackServer();
    profile = await launchChromium();
    page = await profile.context.newPage();
    await page.goto(`${server.baseUrl}/signup`);
    await signUp(page, { name: 'Ada', email: 'ada@bakery.example', organization: 'Corner Bakery' });
  }, 2 * TIMEOUTS.hook);

  afterAll(async () => {
    await profile?.close();
    await callback?.close();
    await server?.close();
    expect(profile?.pageErrors ?? []).toEqual([]);
  });

  /** The user approves what the consent page shows; the code the agent is sent back with. */
  async function approve(url: URL, agentName: string): Promise<string> {
    const before = callback.callbacks.length;
    await page.goto(url.toString());
    expect(pathOf(page)).toBe('/oauth/authorize');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe(
      `${agentName} wants to access Corner Bakery`,
    );
    // A client that registered itself is marked as such, with where it sends the user back.
    const note = page.getByRole('note');
    expect(await note.textContent()).toContain('Unverified app.');
    expect(await note.locator('code').textContent()).toBe(new URL(callback.redirectUrl).host);
    await page.getByRole('button', { name: 'Approve' }).click();
    await expect.poll(() => callback.callbacks.length, PAGE_WAIT).toBe(before + 1);
    const back = callback.callbacks.at(-1)!;
    expect(back.searchParams.get('state')).toBe(url.searchParams.get('state'));
    return back.searchParams.get('code')!;
  }

  /** Connects the agent's MCP client with what it holds: a Client, or the UnauthorizedError of the 401. */
  async function connect(signIn: AgentSignIn) {
    const transport = new StreamableHTTPClientTransport(new URL(`${server.baseUrl}/mcp`), {
      authProvider: signIn,
      fetch: resentOnReset,
    });
    const client = new Client({ name: 'bakery-agent', version: '1.0.0' });
    await client.connect(transport);
    return { client, transport };
  }

  const resultOf = (result: CallToolResult): Record<string, unknown> => {
    expect(result.isError ?? false, JSON.stringify(result.content)).toBe(false);
    return result.structuredContent ?? {};
  };

  let agent: AgentSignIn;
  let sandboxId: string;
  let mcp: Client;

  it('discovers the server from its 401, registers itself, and is approved through the consent page', async () => {
    agent = new AgentSignIn(callback.redirectUrl, 'Bakery Agent');
    const transport = new StreamableHTTPClientTransport(new URL(`${server.baseUrl}/mcp`), { authProvider: agent });
    await expect(new Client({ name: 'bakery-agent', version: '1.0.0' }).connect(transport)).rejects.toThrow(
      UnauthorizedError,
    );
    // Registered dynamically as a public client, and sent to authorize with PKCE (S256) for this resource.
    expect(agent.client?.client_id).toEqual(expect.any(String));
    expect(agent.client).not.toHaveProperty('client_secret');
    const url = agent.authorizationUrl!;
    expect(url.origin + url.pathname).toBe(`${server.baseUrl}/oauth/authorize`);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('resource')).toBe(`${server.baseUrl}/mcp`);

    const code = await approve(url, 'Bakery Agent');
    await transport.finishAuth(code);
    expect(agent.saved?.access_token).toMatch(/^pos_/);
    // A registered client's access token lasts an hour; the SDK renews it with its refresh token, which rotates.
    expect(agent.saved?.expires_in).toBe(3600);
    const firstRefresh = agent.saved?.refresh_token;
    expect(firstRefresh).toMatch(/^por_/);
    expect(await auth(agent, { serverUrl: `${server.baseUrl}/mcp` })).toBe('AUTHORIZED');
    expect(agent.saved?.refresh_token).toMatch(/^por_/);
    expect(agent.saved?.refresh_token).not.toBe(firstRefresh);

    ({ client: mcp } = await connect(agent));
    const { tools } = await mcp.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(MCP_TOOLS.map((tool) => tool.name).sort());
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats.default(ajv);
    for (const tool of tools) {
      expect(() => ajv.compile(tool.inputSchema), tool.name).not.toThrow();
      if (tool.outputSchema) expect(() => ajv.compile(tool.outputSchema!), tool.name).not.toThrow();
    }
  });

  it('creates a post with an uploaded image, published on the sandbox, and reads its history', async () => {
    const channels = resultOf((await mcp.callTool({ name: 'listChannels', arguments: {} })) as CallToolResult) as {
      data: { id: string; provider: string }[];
    };
    const sandbox = channels.data.find((channel) => channel.provider === 'sandbox')!;
    sandboxId = sandbox.id;
    const bytes = png(64, 64);
    const upload = resultOf(
      (await mcp.callTool({
        name: 'createUpload',
        arguments: { body: { fileName: 'bread.png', contentType: 'image/png', size: bytes.length } },
      })) as CallToolResult,
    ) as { uploadId: string; uploadUrl: string; method: string; headers: Record<string, string> };
    const put = await resentOnReset(upload.uploadUrl, { method: upload.method, headers: upload.headers, body: bytes });
    expect(put.status).toBe(200);
    const media = resultOf(
      (await mcp.callTool({ name: 'completeUpload', arguments: { uploadId: upload.uploadId } })) as CallToolResult,
    ) as { id: string };
    const created = resultOf(
      (await mcp.callTool({
        name: 'createPost',
        arguments: {
          body: { type: 'now', content: 'Fresh bread at 7', channelIds: [sandbox.id], mediaIds: [media.id] },
        },
      })) as CallToolResult,
    ) as { data: { id: string }[] };
    const postId = created.data[0]!.id;
    await eventually(async () => {
      const post = resultOf((await mcp.callTool({ name: 'getPost', arguments: { id: postId } })) as CallToolResult) as {
        status: string;
      };
      expect(post.status).toBe('published');
    });
    const history = resultOf(
      (await mcp.callTool({ name: 'getPostHistory', arguments: { id: postId } })) as CallToolResult,
    ) as { data: { type: string }[] };
    expect(history.data.map((event) => event.type)).toContain('published');
  });

  it('gives an agent approved to read posts a token that is refused a write tool', async () => {
    const reader = new AgentSignIn(callback.redirectUrl, 'Post Reader');
    const started = await auth(reader, { serverUrl: `${server.baseUrl}/mcp`, scope: 'posts:read' });
    expect(started).toBe('REDIRECT');
    expect(reader.authorizationUrl!.searchParams.get('scope')).toBe('posts:read');
    const code = await approve(reader.authorizationUrl!, 'Post Reader');
    expect(await auth(reader, { serverUrl: `${server.baseUrl}/mcp`, authorizationCode: code })).toBe('AUTHORIZED');

    const { client } = await connect(reader);
    resultOf((await client.callTool({ name: 'listPosts', arguments: {} })) as CallToolResult);
    const refused = (await client.callTool({
      name: 'createPost',
      arguments: { body: { type: 'draft', content: 'Not mine to write', channelIds: [sandboxId] } },
    })) as CallToolResult;
    expect(refused.isError).toBe(true);
    const [text] = refused.content;
    expect(JSON.parse(text?.type === 'text' ? text.text : '{}')).toMatchObject({ error: { code: 'forbidden' } });
    await client.close();
  });

  it('stops working once the user revokes it in Settings → Approved apps', async () => {
    await page.goto(`${server.baseUrl}/settings/approved-apps`);
    await page.getByRole('button', { name: 'Revoke Bakery Agent for Corner Bakery' }).click();
    await expect.poll(() => page.getByRole('button', { name: /Revoke Bakery Agent/ }).count(), PAGE_WAIT).toBe(0);
    await expect(mcp.listTools()).rejects.toThrow();
    await mcp.close().catch(() => undefined);
  });
});
