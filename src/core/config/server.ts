import net from 'node:net';
import ipaddr from 'ipaddr.js';
import type { EnvReader } from './env-reader.js';

/** The HTTP server: where it listens, where it is reached, and which proxies stand before it. */
export interface ServerSettings {
  /** TCP port of the HTTP server. */
  port: number;
  /** Interface the HTTP server binds to. */
  host: string;
  /** Origin that users and integrators reach the service at; used in links, signed URLs and OAuth metadata. */
  publicUrl: string;
  /**
   * Which reverse proxies' `X-Forwarded-For` to believe when telling clients' addresses apart (the
   * address throttles): `false` for none (the connection's address counts), a number of proxy hops,
   * or proxy addresses and ranges, as Express's `trust proxy` setting takes them.
   */
  trustProxy: false | number | string[];
  /**
   * The web origins whose pages may call `/mcp` from a browser (CORS, and the MCP transport's `Origin`
   * check): `'any'`, or a list of origins, when a request with another `Origin` is refused.
   */
  mcpAllowedOrigins: 'any' | string[];
}

export function readServer(read: EnvReader): ServerSettings {
  const port = read.integer('PORT', 3000, 0, 65535);
  return {
    port,
    host: read.text('HOST') || '127.0.0.1',
    publicUrl: readPublicUrl(read, port),
    trustProxy: readTrustProxy(read),
    mcpAllowedOrigins: readOrigins(read, 'MCP_ALLOWED_ORIGINS'),
  };
}

/** `*` (or nothing) is any origin; otherwise a list of http(s) origins, each without a path. */
function readOrigins(read: EnvReader, name: string): 'any' | string[] {
  const entries = read.list(name);
  if (entries.length === 0 || (entries.length === 1 && entries[0] === '*')) return 'any';
  const origins = entries.map((entry) => {
    try {
      const url = new URL(entry);
      if ((url.protocol === 'http:' || url.protocol === 'https:') && url.origin === entry.replace(/\/+$/, '')) {
        return url.origin;
      }
    } catch {
      // reported below
    }
    read.problem(
      `${name} must be * or a comma-separated list of origins such as https://app.example.com, got "${entry}"`,
    );
    return entry;
  });
  return origins;
}

function readPublicUrl(read: EnvReader, port: number): string {
  const publicUrl = (read.text('PUBLIC_URL') || `http://localhost:${port}`).replace(/\/+$/, '');
  try {
    const url = new URL(publicUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error();
    if (url.pathname !== '/' || url.search || url.hash) {
      read.problem(`PUBLIC_URL must be an origin without a path, got "${publicUrl}"`);
    }
  } catch {
    read.problem(`PUBLIC_URL must be an http(s) URL, got "${publicUrl}"`);
  }
  return publicUrl;
}

// Express's names for ranges of proxy addresses.
const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

function readTrustProxy(read: EnvReader): ServerSettings['trustProxy'] {
  const raw = read.text('TRUST_PROXY');
  if (raw === undefined || raw.trim() === '' || raw === 'false') return false;
  const hops = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : undefined;
  if (hops !== undefined && hops >= 1 && hops <= 10) return hops;
  const entries = read.list('TRUST_PROXY');
  // Written-out addresses only (ipaddr.js alone would take `0` for 0.0.0.0). `true` (believe any
  // X-Forwarded-For) is refused: a client could then name any address it likes.
  const isAddress = (entry: string) =>
    net.isIP(entry.split('/')[0]!) !== 0 && (entry.includes('/') ? ipaddr.isValidCIDR(entry) : true);
  const valid =
    hops === undefined &&
    entries.length > 0 &&
    entries.every((entry) => PROXY_RANGE_NAMES.includes(entry) || isAddress(entry));
  if (!valid) {
    read.problem(
      'TRUST_PROXY must be a number of proxy hops (1-10) or proxy addresses, CIDR ranges, loopback, linklocal ' +
        `or uniquelocal; got "${raw}"`,
    );
    return false;
  }
  return entries;
}
