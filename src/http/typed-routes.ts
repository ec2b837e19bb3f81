import type { IRoute, Request, RequestHandler, Response, Router } from 'express';
import type { operations as OAuthOperations } from '../../generated/oauth.js';
import type { operations as PublicContractOperations } from '../../generated/public-v1.js';
import type { Principal } from './principal.js';
import { readOperationRoutes } from './spec.js';

/**
 * Handlers keyed by a contract's operationIds, typed from the types generated from it: the input is
 * the operation's parameters and body, and the reply must be one of its declared responses with that
 * response's body. A wrong status or body shape does not compile.
 */

/** An operation as openapi-typescript generates it. */
interface Operation {
  parameters: unknown;
  responses: Record<number, unknown>;
  requestBody?: unknown;
}

type Responses<Op extends Operation> = Op['responses'];

/**
 * What a reply with one declared status carries: a file streamed as it is made (a download the
 * contract declares as `text/csv`, whatever other types it has), a JSON body, an HTML page, or nothing.
 */
type ReplyFor<S, R> = R extends { content: { 'text/csv': string } }
  ? { status: S; stream: (res: Response) => Promise<void>; headers?: Record<string, string> }
  : R extends { content: { 'application/json': infer Body } }
    ? { status: S; body: Body; headers?: Record<string, string> }
    : R extends { content: { 'text/html': string } }
      ? { status: S; html: string; headers?: Record<string, string> }
      : { status: S; body?: never; html?: never; headers?: Record<string, string> };

/**
 * What a handler returns: a declared status with its body. Failures that have a contract-wide shape
 * (the Public API's envelope, RFC 6749 errors) are thrown as named errors, not returned.
 */
export type Reply<Op extends Operation> = {
  [S in keyof Responses<Op> & number]: ReplyFor<S, Responses<Op>[S]>;
}[keyof Responses<Op> & number];

type Part<Op extends Operation, K extends 'path' | 'query' | 'header'> = Op['parameters'] extends infer P
  ? P extends Record<K, infer V>
    ? [V] extends [undefined]
      ? Record<string, never>
      : NonNullable<V>
    : P extends Partial<Record<K, infer V>>
      ? [V] extends [undefined]
        ? Record<string, never>
        : NonNullable<V>
      : Record<string, never>
  : never;

type BodyOf<Op extends Operation> = Op extends { requestBody: { content: { 'application/json': infer B } } }
  ? B
  : Op extends { requestBody?: { content: { 'application/json': infer B } } }
    ? B | undefined
    : undefined;

/** The validated input of an operation: express-openapi-validator has checked it against the contract. */
export interface OperationInput<Op extends Operation> {
  params: Part<Op, 'path'>;
  query: Part<Op, 'query'>;
  headers: Part<Op, 'header'>;
  body: BodyOf<Op>;
  req: Request;
  res: Response;
}

export type Handler<Op extends Operation, Extra = unknown> = (input: OperationInput<Op> & Extra) => Promise<Reply<Op>>;

/** One handler for every operation of a contract; a missing or extra one does not compile. */
export type Handlers<Ops extends { [O in keyof Ops]: Operation }, Extra = unknown> = {
  [O in keyof Ops]: Handler<Ops[O], Extra>;
};

/**
 * The operations this server answers: the contract's, without the requests it sends (its
 * `webhooks`, whose operation ids start with `event`).
 */
export type PublicOperations = {
  [O in keyof PublicContractOperations as O extends `event${string}` ? never : O]: PublicContractOperations[O];
};

/** The Public API's operations act for the principal its authentication established. */
export type PublicHandlers = Handlers<PublicOperations, { principal: Principal }>;
export type PublicHandler<O extends keyof PublicOperations> = PublicHandlers[O];
export type OAuthHandlers = Handlers<OAuthOperations>;
export type OAuthHandler<O extends keyof OAuthOperations> = OAuthHandlers[O];

/**
 * Node lower-cases header names while the contract (and so the generated types) spells them as
 * written, e.g. `Idempotency-Key`: lookups here ignore case so a typed handler reads what was sent.
 */
function specNamedHeaders(req: Request): Record<string, string | string[] | undefined> {
  return new Proxy(req.headers, {
    get: (headers, name) => (typeof name === 'string' ? headers[name.toLowerCase()] : undefined),
  });
}

/** What express-openapi-validator adds to a request it matched to an operation of the contract. */
type ValidatedRequest = Request & {
  openapi?: { schema?: { operationId?: string }; pathParams?: Record<string, string> };
};

/**
 * Registers each handler on the method and path that the contract gives its operationId; `extra`
 * adds what the contract's surface knows of the request (the Public API's principal).
 */
export function mountOperations<Extra>(
  router: Router,
  specFile: string,
  handlers: Record<string, unknown>,
  extra: (req: Request, res: Response) => Extra,
): void {
  const routes = readOperationRoutes(specFile);
  // Past the typed boundary: each handler was checked against its own operation when it was written.
  type AnyReply = {
    status: number;
    body?: unknown;
    html?: string;
    stream?: (res: Response) => Promise<void>;
    headers?: Record<string, string>;
  };
  type AnyHandler = (input: OperationInput<Operation> & Extra) => Promise<AnyReply>;
  for (const operationId of Object.keys(handlers)) {
    if (!routes.has(operationId)) throw new Error(`Operation ${operationId} has a handler but is not in ${specFile}`);
  }
  const answer = (operationId: string, handler: AnyHandler) => async (req: Request, res: Response) => {
    // The request's name in the metrics: a path with ids in it would make a series per record.
    res.locals.operationId = operationId;
    const reply = await handler({
      params: req.params as never,
      query: req.query as never,
      headers: specNamedHeaders(req) as never,
      body: req.body as never,
      req,
      res,
      ...extra(req, res),
    });
    for (const [name, value] of Object.entries(reply.headers ?? {})) res.setHeader(name, value);
    res.status(reply.status);
    if (reply.stream) await streamed(res, reply.stream);
    else if (reply.html !== undefined) res.type('html').send(reply.html);
    else if ('body' in reply) res.json(reply.body);
    else res.end();
  };
  // A request the contract validator matched names its operation: it goes straight to its handler, in
  // one layer, instead of through the routes of every operation before it. The validator's match is
  // the one its input was checked against, and its path parameters are the handler's.
  const byOperation = new Map<string, { handle: (req: Request, res: Response) => Promise<void>; route: IRoute }>();
  const dispatch: RequestHandler = (req, res, next) => {
    const { openapi } = req as ValidatedRequest;
    const operation =
      openapi?.schema?.operationId === undefined ? undefined : byOperation.get(openapi.schema.operationId);
    if (!operation) return next();
    // What Express sets in the route it runs: the route (traces name it), and the parameters, which it
    // gives each layer its own (none, to this one): the operation's are the validator's match's.
    req.route = operation.route;
    req.params = openapi!.pathParams ?? {};
    return operation.handle(req, res);
  };
  router.use(dispatch);
  // The routes themselves, for a request the validator did not match (a path it leaves alone). In the
  // contract's order, so that a path written before a templated one that also matches it wins
  // (`/posts/export` before `/posts/{id}`), as OpenAPI says a concrete path does.
  for (const { operationId, method, expressPath } of routes.values()) {
    const handler = handlers[operationId] as AnyHandler | undefined;
    if (!handler) continue;
    const handle = answer(operationId, handler);
    byOperation.set(operationId, { handle, route: router.route(expressPath)[method](handle) });
  }
  for (const operationId of routes.keys()) {
    if (!(operationId in handlers)) throw new Error(`Operation ${operationId} of ${specFile} has no handler`);
  }
}

/**
 * Sends a streamed reply. A failure before anything was sent is answered as any other (the error
 * envelope); after the first bytes the status is gone, so the connection is cut instead, and the client
 * sees a download that did not finish rather than a file that looks complete.
 */
async function streamed(res: Response, stream: (res: Response) => Promise<void>): Promise<void> {
  try {
    await stream(res);
  } catch (error) {
    if (!res.headersSent) throw error;
    res.destroy(error as Error);
  }
}
