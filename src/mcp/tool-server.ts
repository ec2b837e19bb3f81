import type { RequestHandler } from 'express';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { MCP_TOOLS } from '../../generated/mcp-tools.js';
import { principalOf } from '../http/authenticate.js';
import { clientAddress } from '../http/client-address.js';
import { callTool, type RequestListener, type ToolCaller } from './tool-calls.js';

const INSTRUCTIONS =
  "Schedules and publishes posts to the organization's connected social channels. Start with " +
  'listChannels. Media: createUpload answers a signed uploadUrl to PUT the bytes to (with exactly the ' +
  'headers it names, no Authorization), then completeUpload answers the media; or uploadFromUrl. Posts ' +
  'name media by their med_ ids only, never by URL. Errors are the API error envelope (code, message, ' +
  'details naming the field).';

/**
 * Answers one POST of JSON-RPC messages: a server and a transport made for the request (stateless),
 * acting for the principal `/mcp` authenticated.
 */
export function mcpHandler(app: RequestListener, version: string): RequestHandler {
  return async (req, res) => {
    res.locals.operationId = 'mcp';
    const caller: ToolCaller = { principal: principalOf(res), remoteAddress: clientAddress(req) };
    const server = toolServer(app, caller, version);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  };
}

function toolServer(app: RequestListener, caller: ToolCaller, version: string): Server {
  const server = new Server(
    { name: 'post-scheduler', title: 'Post Scheduler', version },
    { capabilities: { tools: {} }, instructions: INSTRUCTIONS },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: MCP_TOOLS.map((tool) => ({
      name: tool.name,
      title: tool.title,
      description: tool.description,
      inputSchema: tool.inputSchema,
      ...(tool.outputSchema ? { outputSchema: tool.outputSchema } : {}),
      annotations: { title: tool.title, ...tool.annotations },
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const tool = MCP_TOOLS.find((candidate) => candidate.name === request.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `There is no tool ${request.params.name}.`);
    return callTool(app, tool, request.params.arguments ?? {}, caller);
  });
  return server;
}
