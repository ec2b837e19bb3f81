import { createApiKey } from '../src/accounts/api-keys.js';
import fs from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { Ajv } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MCP_TOOLS } from '../generated/mcp-tools.js';
import { parseYaml, SPEC_FILES } from '../src/core/contract.js';
import { contractOperationIds, toolsFromContract, undecided, type Contract } from '../src/mcp/contract-tools.js';
import { TOOL_DECISIONS } from '../src/mcp/decisions.js';
import { eventually } from './support/eventually.js';
import { createChannel, createOrganization, type TestOrganization } from './support/fixtures.js';
import { send } from './support/loopback-client.js';
import { png } from './support/media-samples.js';
import { startRemoteServer, type RemoteServer } from './support/remote-server.js';
import { startTestServer, type TestServer } from './support/server.js';

// The MCP server at /mcp, called by the MCP SDK's own client over Streamable HTTP with an API key:
// its tools are the contract's operations, and a call runs the operation's route and validation.

const contract = (): Contract => parseYaml(fs.readFileSync(SPEC_FILES.publicV1, 'utf8')) as Contract;

let server: TestServer;
let org: TestOrganization;
let sandboxId: string;
let client: Client;
let pictures: RemoteServer;

async function connect(headers: Record<string, string>): Promise<Client> {
  const mcp = new Client({ name: 'mcp-tools-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${server.baseUrl}/mcp`), { requestInit: { headers } });
  await mcp.connect(transport);
  return mcp;
}

beforeAll(async () => {
  server = await startTestServer({
    worker: true,
    env: {
      PUBLISH_RETRY_BASE_MS: '200',
      RATE_LIMIT_MAX: '100000',
      DAILY_POST_LIMIT_SANDBOX: '1000',
      // The picture host of upload-from-url, on 127.0.0.2; other loopback addresses stay refused.
      MEDIA_FETCH_ALLOW_RANGES: '127.0.0.2',
    },
  });
  pictures = await startRemoteServer((_req, res) => res.writeHead(200).end(png()), '127.0.0.2');
  server.ctx.config.sandbox.networkUrl = server.baseUrl;
  org = await createOrganization(server.ctx.db, 'Agents');
  sandboxId = (await createChannel(server.ctx.db, org.id, 'sandbox')).id;
  client = await connect(org.auth);
});
afterAll(async () => {
  await client?.close();
  await Promise.all([server?.close(), pictures?.close()]);
});

/** The tool's JSON result (its structured content when it declares an output schema, else its text). */
function resultOf(result: CallToolResult): Record<string, unknown> {
  expect(result.isError ?? false, JSON.stringify(result.content)).toBe(false);
  if (result.structuredContent) return result.structuredContent;
  const [first] = result.content;
  return JSON.parse(first?.type === 'text' ? first.text : '{}') as Record<string, unknown>;
}

/** The error envelope a failed call carries. */
function envelopeOf(result: CallToolResult): { error: { code: string; message: string; details?: unknown[] } } {
  expect(result.isError).toBe(true);
  const [first] = result.content;
  return JSON.parse(first?.type === 'text' ? first.text : '') as never;
}

const call = (name: string, args: Record<string, unknown>) =>
  client.callTool({ name, arguments: args }) as Promise<CallToolResult>;

describe('the tools decided from the contract', () => {
  it('decides every operation of the contract, and fails for one added without a decision', () => {
    expect(undecided(contract(), TOOL_DECISIONS)).toEqual({ operations: [], decisions: [] });
    for (const [id, decision] of Object.entries(TOOL_DECISIONS)) {
      if ('excluded' in decision) expect(decision.excluded.length, id).toBeGreaterThan(20);
    }

    const grown = contract();
    grown.paths['/public/v1/posts/{id}/boost'] = { post: { operationId: 'boostPost', summary: 'Boost a post' } };
    expect(undecided(grown, TOOL_DECISIONS).operations).toEqual(['boostPost']);
    expect(() => toolsFromContract(grown, TOOL_DECISIONS)).toThrow(/undecided \["boostPost"\]/);
  });

  it('lists one tool per operation decided a tool, as generated from the contract', async () => {
    const { tools } = await client.listTools();
    const expected = contractOperationIds(contract()).filter((id) => 'tool' in TOOL_DECISIONS[id]!);
    expect(tools.map((tool) => tool.name).sort()).toEqual([...expected].sort());
    expect(tools.map((tool) => tool.name)).toEqual(MCP_TOOLS.map((tool) => tool.name));
    // The generated file is what the contract gives now (`npm run gen:check` says the same at build).
    expect(JSON.parse(JSON.stringify(toolsFromContract(contract(), TOOL_DECISIONS)))).toEqual(
      JSON.parse(JSON.stringify(MCP_TOOLS)),
    );
  });

  it("gives every tool schemas that compile as JSON Schema, self-contained, and fit the contract's examples", async () => {
    const { tools } = await client.listTools();
    // The SDK's client validates with Ajv's default draft (07); MCP's default dialect is 2020-12.
    const draft07 = new Ajv({ strict: false, allErrors: true });
    const draft2020 = new Ajv2020({ strict: false, allErrors: true });
    addFormats.default(draft07);
    addFormats.default(draft2020);
    for (const tool of tools as Tool[]) {
      for (const schema of [tool.inputSchema, tool.outputSchema].filter(Boolean)) {
        expect(JSON.stringify(schema), tool.name).not.toContain('"$ref"');
        expect(() => draft07.compile(schema!), tool.name).not.toThrow();
        expect(() => draft2020.compile(schema!), tool.name).not.toThrow();
        expect(schema!.type).toBe('object');
      }
    }
    const createPost = tools.find((tool) => tool.name === 'createPost')!;
    expect(createPost.description).toContain('Creates one post per target channel');
    expect(createPost.inputSchema.required).toEqual(['body']);
    expect(Object.keys(createPost.inputSchema.properties ?? {})).toEqual(['Idempotency-Key', 'body']);
    const getPost = tools.find((tool) => tool.name === 'getPost')!;
    expect(getPost.inputSchema.required).toEqual(['id']);
    expect(getPost.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
    // A body the contract's schema refuses is refused by the tool's schema too.
    const validate = draft07.compile(createPost.inputSchema);
    expect(validate({ body: { type: 'now', content: 'Hi', channelIds: [sandboxId] } })).toBe(true);
    expect(validate({ body: { type: 'now', channelIds: 'not a list' } })).toBe(false);
  });
});

describe('calling the tools', () => {
  it('refuses /mcp without a valid credential in the envelope, and answers only POST', async () => {
    // Fresh connections (the loopback client's): a pooled one may be closing after the calls before.
    const anonymous = await send(`${server.baseUrl}/mcp`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(anonymous.status).toBe(401);
    expect((JSON.parse(anonymous.body) as { error: { code: string } }).error.code).toBe('unauthorized');
    expect(anonymous.headers['www-authenticate']).toMatch(/^Bearer /);
    await expect(connect({ Authorization: 'Bearer svc_live_not_a_key' })).rejects.toThrow(/unauthorized/);

    const get = await send(`${server.baseUrl}/mcp`, { headers: org.auth });
    expect(get.status).toBe(405);
    expect(get.headers.allow).toBe('POST');
    expect(get.headers['ratelimit-limit']).toBe('100000');
  });

  it("answers a browser's preflight without a credential and lets the page read the answer's headers", async () => {
    const preflight = await send(`${server.baseUrl}/mcp`, {
      method: 'OPTIONS',
      headers: {
        Origin: 'https://agent.example',
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'authorization, content-type, mcp-protocol-version',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('*');
    expect(preflight.headers['access-control-allow-methods']).toBe('POST');
    expect(preflight.headers['access-control-allow-headers']).toMatch(/Authorization.*Mcp-Protocol-Version/);

    const refused = await send(`${server.baseUrl}/mcp`, {
      method: 'POST',
      headers: { Origin: 'https://agent.example', 'Content-Type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(refused.status).toBe(401);
    expect(refused.headers['access-control-allow-origin']).toBe('*');
    expect(refused.headers['access-control-expose-headers']).toMatch(/WWW-Authenticate/);
  });

  it('creates a post with an uploaded image, published on the sandbox, and reads its history', async () => {
    expect(resultOf(await call('isConnected', {}))).toMatchObject({ organization: { id: org.id } });
    const channels = resultOf(await call('listChannels', {})) as { data: { id: string }[] };
    expect(channels.data.map((channel) => channel.id)).toContain(sandboxId);

    const bytes = png();
    const upload = resultOf(
      await call('createUpload', { body: { fileName: 'menu.png', contentType: 'image/png', size: bytes.length } }),
    ) as { uploadId: string; uploadUrl: string; method: string; headers: Record<string, string> };
    const put = await fetch(upload.uploadUrl, { method: upload.method, headers: upload.headers, body: bytes });
    expect(put.status).toBe(200);
    const media = resultOf(await call('completeUpload', { uploadId: upload.uploadId })) as { id: string; kind: string };
    expect(media).toMatchObject({ kind: 'image' });

    const created = resultOf(
      await call('createPost', {
        'Idempotency-Key': 'mcp-test-menu',
        body: { type: 'now', posts: [{ channelId: sandboxId, content: 'New menu', mediaIds: [media.id] }] },
      }),
    ) as { data: { id: string }[] };
    const postId = created.data[0]!.id;

    const published = await eventually(async () => {
      const post = resultOf(await call('getPost', { id: postId }));
      expect(post.status).toBe('published');
      return post;
    });
    expect(published).toMatchObject({ id: postId, mediaIds: [media.id] });

    const history = resultOf(await call('getPostHistory', { id: postId, limit: 100 })) as { data: { type: string }[] };
    expect(history.data.map((event) => event.type)).toContain('published');
    const listed = resultOf(await call('listPosts', { status: ['published'] })) as { data: { id: string }[] };
    expect(listed.data.map((post) => post.id)).toContain(postId);
  });

  it('makes media from a URL the server may fetch, and refuses one its address policy forbids', async () => {
    const media = resultOf(await call('uploadFromUrl', { body: { url: `${pictures.origin}/poster.png` } }));
    expect(media).toMatchObject({ kind: 'image', contentType: 'image/png' });
    expect(String(media.id)).toMatch(/^med_/);

    const refused = envelopeOf(await call('uploadFromUrl', { body: { url: `${server.baseUrl}/healthz` } }));
    expect(refused.error.code).toBe('unprocessable');
  });

  it("counts a tool call once against the organization's rate limit, as the /mcp request it came in", async () => {
    const toolCall = () =>
      send(`${server.baseUrl}/mcp`, {
        method: 'POST',
        headers: {
          ...org.auth,
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          'MCP-Protocol-Version': LATEST_PROTOCOL_VERSION,
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 7,
          method: 'tools/call',
          params: { name: 'listMedia', arguments: {} },
        }),
      });
    // Two calls within one window of the limit: a pair that a new window began between is tried again.
    const header = (answer: Awaited<ReturnType<typeof toolCall>>, name: string) => Number(answer.headers[name]);
    for (let pair = 1; ; pair++) {
      const first = await toolCall();
      const second = await toolCall();
      expect(first.status).toBe(200);
      expect((JSON.parse(second.body) as { result: { isError?: boolean } }).result.isError).toBeUndefined();
      const sameWindow = header(second, 'ratelimit-reset') <= header(first, 'ratelimit-reset');
      if (!sameWindow && pair < 3) continue;
      expect(header(first, 'ratelimit-remaining') - header(second, 'ratelimit-remaining')).toBe(1);
      break;
    }
  });

  it('refuses a post whose media does not exist with a tool error carrying the envelope', async () => {
    const result = await call('createPost', {
      body: { type: 'now', posts: [{ channelId: sandboxId, content: 'Lost picture', mediaIds: ['med_doesnotexist'] }] },
    });
    const envelope = envelopeOf(result);
    expect(envelope.error.code).toBe('unprocessable');
    expect(JSON.stringify(envelope.error.details)).toContain('posts[0].mediaIds[0]');
    const posts = resultOf(await call('listPosts', {})) as { data: { content: string }[] };
    expect(posts.data.map((post) => post.content)).not.toContain('Lost picture');
  });

  it("acts with the credential's role: a viewer's key reads, and its drafts are refused with forbidden", async () => {
    const { secret } = await createApiKey(server.ctx.db, org.id, 'viewer', { role: 'viewer' });
    const viewer = await connect({ Authorization: `Bearer ${secret}` });
    try {
      const viewerCall = (name: string, args: Record<string, unknown>) =>
        viewer.callTool({ name, arguments: args }) as Promise<CallToolResult>;
      expect(resultOf(await viewerCall('listPosts', {}))).toHaveProperty('data');
      const refused = envelopeOf(
        await viewerCall('createPost', {
          body: { type: 'draft', posts: [{ channelId: sandboxId, content: 'Not mine to write' }] },
        }),
      );
      expect(refused.error.code).toBe('forbidden');
      expect(refused.error.message).toContain('viewer role may not');
    } finally {
      await viewer.close();
    }
  });

  it("answers the contract's validation and not-found errors as tool errors", async () => {
    const invalid = envelopeOf(await call('createPost', { body: { type: 'now', channelIds: 'not a list' } }));
    expect(invalid.error.code).toBe('validation_failed');
    expect(invalid.error.details?.length).toBeGreaterThan(0);

    expect(envelopeOf(await call('getPost', { id: 'post_unknown' })).error.code).toBe('not_found');
    expect(envelopeOf(await call('getPost', { id: 'x', colour: 'red' })).error.message).toContain('colour');
    await expect(call('deleteWebhook', { id: 'wh_1' })).rejects.toThrow(/no tool deleteWebhook/);
  });
});

describe('an operator who lists the origins allowed to call /mcp', () => {
  let listed: TestServer;
  beforeAll(async () => {
    listed = await startTestServer({ env: { MCP_ALLOWED_ORIGINS: 'https://agent.example' } });
  });
  afterAll(() => listed?.close());

  it('refuses a page of another origin with 403 before reading its credential, and serves a listed one', async () => {
    const listedOrg = await createOrganization(listed.ctx.db, 'Listed origins');
    const call = (origin: string) =>
      send(`${listed.baseUrl}/mcp`, {
        method: 'POST',
        headers: {
          ...listedOrg.auth,
          Origin: origin,
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
    const other = await call('https://look-alike.example');
    expect(other.status).toBe(403);
    expect(JSON.parse(other.body)).toMatchObject({ error: { code: 'forbidden' } });
    expect(other.headers['access-control-allow-origin']).toBeUndefined();

    const allowed = await call('https://agent.example');
    expect(allowed.status).toBe(200);
    expect(allowed.headers['access-control-allow-origin']).toBe('https://agent.example');
    expect(allowed.headers.vary).toMatch(/Origin/);
  });
});
