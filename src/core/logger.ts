import { pino, type DestinationStream, type Logger } from 'pino';
import type { Config } from './config.js';

export type { Logger };

// Credentials must never reach a log line, wherever they were sent.
const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["proxy-authorization"]',
  'res.headers["set-cookie"]',
];
// `state` too: it binds an authorization in progress (ours at the networks, an app's at our consent page).
const SENSITIVE_QUERY = /token|secret|code|password|key|signature|state/i;

// Pages whose address carries a mailed single-use secret as its segment after the prefix: a password
// reset, the confirmation of an address, an unsubscribe link.
const SECRET_PATH = /^(\/(?:password\/reset|email\/verify|mail\/unsubscribe)\/)[^/?#]+/;

/** A URL for logs: the secrets mailed in paths, and query values whose names look sensitive, are replaced. */
export function redactUrl(url: string): string {
  url = url.replace(SECRET_PATH, '$1[REDACTED]');
  const index = url.indexOf('?');
  if (index < 0) return url;
  const params = new URLSearchParams(url.slice(index + 1));
  for (const name of new Set(params.keys())) {
    if (SENSITIVE_QUERY.test(name)) params.set(name, '[REDACTED]');
  }
  return `${url.slice(0, index)}?${params.toString()}`;
}

export function createLogger(config: Pick<Config, 'logLevel'>, destination?: DestinationStream): Logger {
  const options = { level: config.logLevel, redact: { paths: REDACTED_PATHS, censor: '[REDACTED]' } };
  // Standard output written asynchronously: lines that come while a write is under way go out together
  // in the next one instead of costing a system call each (a fifteenth of a request's CPU on the hot
  // paths). pino writes what is still buffered when the process exits.
  return pino(options, destination ?? pino.destination({ dest: 1, sync: false }));
}
