import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { inject } from 'light-my-request';
import { actFor } from '../http/authenticate.js';
import type { Principal } from '../http/principal.js';
import type { ContractTool } from './contract-tools.js';

/** The application that answers the Public API's routes (`createApp`'s). */
export type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

/** Who calls a tool: the principal `/mcp` authenticated, from the address it connected from. */
export interface ToolCaller {
  principal: Principal;
  remoteAddress: string;
}

/**
 * Runs a tool call as the HTTP request of its operation, through the application itself: the same
 * route, contract validation and handler as a call to `/public/v1`, never a second implementation.
 * The request is made in this process (no socket) and acts for the caller's principal, already
 * authenticated and counted by `/mcp`.
 */
export async function callTool(
  app: RequestListener,
  tool: ContractTool,
  args: Record<string, unknown>,
  caller: ToolCaller,
): Promise<CallToolResult> {
  const known = new Set([...tool.operation.parameters.map((p) => p.name), ...(tool.operation.hasBody ? ['body'] : [])]);
  const unknown = Object.keys(args).filter((name) => !known.has(name));
  if (unknown.length > 0) {
    return failed(`${tool.name} takes no argument ${unknown.join(', ')}; see its inputSchema.`);
  }

  let path = tool.operation.path;
  const query = new URLSearchParams();
  const headers: Record<string, string> = {};
  for (const parameter of tool.operation.parameters) {
    const value = args[parameter.name];
    if (value === undefined) continue;
    // Arrays as the contract's form style with explode: the name once per value.
    const values = (Array.isArray(value) ? (value as unknown[]) : [value]).map(asParameter);
    if (parameter.in === 'path') path = path.replace(`{${parameter.name}}`, encodeURIComponent(values.join(',')));
    else if (parameter.in === 'header') headers[parameter.name] = values.join(',');
    else for (const item of values) query.append(parameter.name, item);
  }
  const missing = /\{([^}]+)\}/.exec(path);
  if (missing) return failed(`${tool.name} needs the argument ${missing[1]}.`);

  const hasBody = tool.operation.hasBody && args.body !== undefined;
  if (hasBody) headers['content-type'] = 'application/json';
  const search = query.size > 0 ? `?${query.toString()}` : '';
  const response = await inject(
    (req, res) => {
      actFor(req, caller.principal);
      keepOwnMethods(req);
      keepOwnMethods(res);
      app(req, res);
    },
    {
      method: tool.operation.method.toUpperCase() as 'GET',
      url: `${path}${search}`,
      headers,
      remoteAddress: caller.remoteAddress,
      ...(hasBody ? { payload: JSON.stringify(args.body) } : {}),
    },
  );

  const text = response.payload;
  if (response.statusCode >= 200 && response.statusCode < 300) {
    if (text === '') return { content: [{ type: 'text', text: `Done (HTTP ${response.statusCode}).` }] };
    const body = JSON.parse(text) as Record<string, unknown>;
    return {
      content: [{ type: 'text', text }],
      ...(tool.outputSchema ? { structuredContent: body } : {}),
    };
  }
  // The API's error envelope, as written: its code, message, details and request id. Not as structured
  // content: a client checks structured content against the tool's output schema, errors included.
  return { isError: true, content: [{ type: 'text', text }] };
}

/** A call the operation cannot be made from, in the words of the API's envelope. */
function failed(message: string): CallToolResult {
  const envelope = { error: { code: 'validation_failed', message } };
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(envelope) }] };
}

/** A parameter's value as the URL or header carries it; an object is sent as JSON for the validator to refuse. */
function asParameter(value: unknown): string {
  if (typeof value === 'string') return value;
  return typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value);
}

/**
 * Express gives every request and response its own prototypes (over Node's IncomingMessage and
 * ServerResponse), which would drop the methods light-my-request's in-process request and response
 * replace (`write`, `end` and `writeHead` that collect the answer instead of writing to a socket):
 * made the object's own, they stay in force under Express's prototype.
 */
function keepOwnMethods(object: object): void {
  const methods = Object.getOwnPropertyDescriptors(Object.getPrototypeOf(object) as object);
  for (const [name, descriptor] of Object.entries(methods)) {
    if (name !== 'constructor' && typeof descriptor.value === 'function')
      Object.defineProperty(object, name, descriptor);
  }
}
