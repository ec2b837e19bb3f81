import type { Request } from 'express';

/**
 * The address the per-address throttles count a request against: the connection's, or the client's
 * as named by a proxy that TRUST_PROXY says to believe (Express's `req.ip`).
 */
export function clientAddress(req: Request): string {
  return req.ip ?? req.socket.remoteAddress ?? 'unknown';
}
