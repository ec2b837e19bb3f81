import type { Request, RequestHandler, Response } from 'express';
import { context, ROOT_CONTEXT, SpanKind, trace, type Span } from '@opentelemetry/api';
import { markFailed, tracer } from '../core/tracing.js';

/**
 * A span for every request (installed only when tracing is on), the active span for everything its
 * handlers do: their transactions, the jobs they plan, the requests they send. Named by the request's
 * operationId (a contract operation), else by its method and route, with the method, the route and the
 * status as OpenTelemetry's HTTP conventions name them. Never the URL (its query may carry a token)
 * nor a header.
 *
 * A request begins a trace of its own: a `traceparent` a client sends is not followed, since the APIs'
 * clients are third parties whose traces are not the operator's.
 */
export function requestSpans(): RequestHandler {
  return (req, res, next) => {
    const span = tracer().startSpan(
      req.method,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method } },
      ROOT_CONTEXT,
    );
    const active = trace.setSpan(ROOT_CONTEXT, span);
    // A body is read through the request's events, which Node emits in the connection's context, not
    // this one: bound, the handlers they lead to run in the request's span.
    context.bind(active, req);
    context.bind(active, res);
    const end = () => {
      res.off('finish', end);
      res.off('close', end);
      finish(span, req, res);
    };
    res.on('finish', end);
    res.on('close', end);
    context.with(active, next);
  };
}

function finish(span: Span, req: Request, res: Response): void {
  const route = routeOf(req);
  const operationId = res.locals.operationId as string | undefined;
  span.updateName(operationId ?? (route ? `${req.method} ${route}` : req.method));
  if (route) span.setAttribute('http.route', route);
  span.setAttribute('http.response.status_code', res.statusCode);
  // A server's span fails on its own errors only (5xx); a 4xx is the client's (OpenTelemetry's HTTP conventions).
  if (res.statusCode >= 500) markFailed(span, String(res.statusCode));
  span.end();
}

/** The route that answered, as Express writes it (`/public/v1/posts/:id`); `undefined` when none did. */
function routeOf(req: Request): string | undefined {
  const route = req.route as { path?: unknown } | undefined;
  return typeof route?.path === 'string' ? `${req.baseUrl}${route.path}` : undefined;
}
