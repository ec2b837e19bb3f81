import express, { type ErrorRequestHandler, type RequestHandler, type Router } from 'express';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { MCP_TOOLS } from '../../generated/mcp-tools.js';
import { readSpec, SPEC_FILES } from '../core/contract.js';
import type { Logger } from '../core/logger.js';
import { UnauthorizedError } from '../core/errors.js';
import { apiHeaders } from '../http/api-headers.js';
import { principalOf } from '../http/authenticate.js';
import { clientAddress } from '../http/client-address.js';
import { publicApiErrors, sendError } from '../http/error-envelope.js';
import { callTool, type RequestListener, type ToolCaller } from './tool-calls.js';

export const MCP_PATH = '/mcp';

const INSTRUCTIONS =
  "Schedules and publishes posts to the organization's connected social channels. Start with " +
  'listChannels. Media: createUpload answers a signed uploadUrl to PUT the bytes to (with exactly the ' +
  'headers it names, no Authorization), then completeUpload answers the media; or uploadFromUrl. Posts ' +
  'name media by their med_ ids only, never by URL. Errors are the API error envelope (code, message, ' +
  'details naming the field).';

/**
 * `/mcp`: the Model Context Protocol's Streamable HTTP transport, stateless (each POST carries whole
 * JSON-RPC messages and is answered in JSON; no session to keep between processes). Its tools are the
 * Public API's operations (generated/mcp-tools.ts), each run through the application as its HTTP
 * request. Authenticated and counted against the organization's budget as `/public/v1` is.
 */
export function mcpRoutes(options: { app: RequestListener; credentials: RequestHandler; logger: Logger }): Router {
  // The server's version is the Public API's, whose operations its tools are.
  const { version } = (readSpec(SPEC_FILES.publicV1) as { info: { version: string } }).info;
  const router = express.Router({ caseSensitive: true, strict: true });
  router.use(MCP_PATH, apiHeaders(), options.credentials, express.json({ limit: '1mb' }));

  router.post(MCP_PATH, async (req, res) => {
    res.locals.operationId = 'mcp';
    const caller: ToolCaller = { principal: principalOf(res), remoteAddress: clientAddress(req) };
    const server = toolServer(options.app, caller, version);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  // Stateless: no stream of server messages to open (GET) and no session to end (DELETE).
  router.all(MCP_PATH, (req, res) => {
    res.setHeader('Allow', 'POST');
    sendError(
      res,
      { status: 405, code: 'method_not_allowed', message: `${req.method} is not allowed on ${MCP_PATH}: send POST.` },
      String(res.locals.requestId ?? ''),
    );
  });
  router.use(mcpErrors(options.logger));
  return router;
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

/**
 * `/mcp`'s failures before the transport (no credential, the budget spent, a body that is no JSON) in
 * the Public API's envelope. The 401 is answered here only, where the protected resource's challenge
 * (RFC 9728 §5.1) belongs.
 */
function mcpErrors(logger: Logger): ErrorRequestHandler {
  const envelope = publicApiErrors(logger);
  return (error, req, res, next) => {
    if (error instanceof UnauthorizedError && !res.headersSent) {
      sendError(res, { status: 401, code: error.code, message: error.message }, String(res.locals.requestId ?? ''));
      return;
    }
    envelope(error, req, res, next);
  };
}
