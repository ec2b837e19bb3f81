import { timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import type { Metrics } from '../core/metrics.js';

/**
 * Counts and times every request by what it asked for: the operationId of a contract operation, the
 * route of another router, `unmatched` when none took it. Never the raw path: its ids would make a
 * series per record.
 */
export function requestMetrics(metrics: Metrics): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const labels = { operation: operationOf(req, res), method: req.method, status: String(res.statusCode) };
      metrics.httpRequests.inc(labels);
      metrics.httpDuration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
    });
    next();
  };
}

function operationOf(req: Request, res: Response): string {
  const operationId = res.locals.operationId as string | undefined;
  if (operationId) return operationId;
  const route = req.route as { path?: unknown } | undefined;
  return typeof route?.path === 'string' ? `${req.baseUrl}${route.path}` : 'unmatched';
}

/**
 * `GET /metrics` in Prometheus's text format. With `token`, only to requests that carry it as a
 * bearer token (compared in constant time); without, to anyone who reaches the listener, which is
 * then the operator's own port (METRICS_PORT).
 */
export function metricsRoute(metrics: Metrics, token: string | undefined): RequestHandler {
  const expected = token === undefined ? undefined : Buffer.from(`Bearer ${token}`);
  return async (req, res) => {
    if (expected && !sameBytes(Buffer.from(req.headers.authorization ?? ''), expected)) {
      res.status(401).setHeader('WWW-Authenticate', 'Bearer').type('text').send('A metrics token is required.\n');
      return;
    }
    const { contentType, text } = await metrics.exposition();
    res.setHeader('Cache-Control', 'no-store');
    res.type(contentType).send(text);
  };
}

function sameBytes(given: Buffer, expected: Buffer): boolean {
  // timingSafeEqual needs equal lengths; comparing with itself keeps the time the same on a wrong length.
  return given.length === expected.length ? timingSafeEqual(given, expected) : !timingSafeEqual(expected, expected);
}
