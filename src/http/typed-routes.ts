import type { Request, Response, Router } from 'express';
import type { Principal } from '../accounts/principal.js';
import type { operations } from '../../generated/public-v1.js';
import { readOperationRoutes } from './spec.js';

/**
 * Handlers keyed by the spec's operationIds, typed from the generated contract: the input is the
 * operation's parameters and body, and the reply must be one of its declared success responses with
 * that response's body. A wrong status or body shape does not compile.
 */
export type OperationId = keyof operations;

type Op<O extends OperationId> = operations[O];
type SuccessStatus = 200 | 201 | 202 | 204;
type Responses<O extends OperationId> = Op<O>['responses'];
type DeclaredSuccess<O extends OperationId> = Extract<keyof Responses<O>, SuccessStatus>;
type JsonContent<R> = R extends { content: { 'application/json': infer Body } } ? Body : undefined;

type ReplyFor<S, Body> = [Body] extends [undefined]
  ? { status: S; body?: never; headers?: Record<string, string> }
  : { status: S; body: Body; headers?: Record<string, string> };

/** What a handler returns: a declared success status with its body. Failures are thrown as named errors. */
export type Reply<O extends OperationId> = {
  [S in DeclaredSuccess<O>]: ReplyFor<S, JsonContent<Responses<O>[S]>>;
}[DeclaredSuccess<O>];

type Part<O extends OperationId, K extends 'path' | 'query' | 'header'> = Op<O>['parameters'] extends infer P
  ? P extends Record<K, infer V>
    ? [V] extends [never | undefined]
      ? Record<string, never>
      : NonNullable<V>
    : P extends Partial<Record<K, infer V>>
      ? [V] extends [never | undefined]
        ? Record<string, never>
        : NonNullable<V>
      : Record<string, never>
  : never;

type BodyOf<O extends OperationId> = Op<O> extends { requestBody: { content: { 'application/json': infer B } } }
  ? B
  : Op<O> extends { requestBody?: { content: { 'application/json': infer B } } }
    ? B | undefined
    : undefined;

/** The validated input of an operation: express-openapi-validator has checked and coerced it against the spec. */
export interface OperationInput<O extends OperationId> {
  params: Part<O, 'path'>;
  query: Part<O, 'query'>;
  headers: Part<O, 'header'>;
  body: BodyOf<O>;
  principal: Principal;
  req: Request;
  res: Response;
}

export type OperationHandler<O extends OperationId> = (input: OperationInput<O>) => Promise<Reply<O>>;

/** One handler for every operation of the contract; a missing or extra one does not compile. */
export type OperationHandlers = { [O in OperationId]: OperationHandler<O> };

/**
 * Node lower-cases header names while the contract (and so the generated types) spells them as
 * written, e.g. `Idempotency-Key`: lookups here ignore case so a typed handler reads what was sent.
 */
function specNamedHeaders(req: Request): Record<string, string | string[] | undefined> {
  return new Proxy(req.headers, {
    get: (headers, name) => (typeof name === 'string' ? headers[name.toLowerCase()] : undefined),
  });
}

/** Registers each handler on the method and path that the spec gives its operationId. */
export function mountOperations(router: Router, specFile: string, handlers: OperationHandlers): void {
  const routes = readOperationRoutes(specFile);
  // Past the typed boundary: each handler was checked against its own operation when it was written.
  type AnyReply = { status: number; body?: unknown; headers?: Record<string, string> };
  type AnyHandler = (input: OperationInput<OperationId>) => Promise<AnyReply>;
  for (const [operationId, handler] of Object.entries(handlers) as [string, AnyHandler][]) {
    const route = routes.get(operationId);
    if (!route) throw new Error(`Operation ${operationId} has a handler but is not in ${specFile}`);
    router[route.method](route.expressPath, async (req: Request, res: Response) => {
      const reply = await handler({
        params: req.params as never,
        query: req.query as never,
        headers: specNamedHeaders(req) as never,
        body: req.body,
        principal: res.locals.principal as Principal,
        req,
        res,
      });
      for (const [name, value] of Object.entries(reply.headers ?? {})) res.setHeader(name, value);
      res.status(reply.status);
      if ('body' in reply) res.json(reply.body);
      else res.end();
    });
  }
  for (const operationId of routes.keys()) {
    if (!(operationId in handlers)) throw new Error(`Operation ${operationId} of ${specFile} has no handler`);
  }
}
