import type { Clock } from '../core/clock.js';
import type { Config } from '../core/config.js';
import type { Db } from '../db/database.js';
import { RateLimiter, startAttempt } from '../http/rate-limit.js';
import { authenticateApp, findAppByClientId } from './apps.js';
import { OAuthError, OAuthThrottledError } from './errors.js';
import type { OAuthApp } from './tables.js';

export interface ClientCredentials {
  clientId: string;
  /** `undefined`: a public client, which sends its client_id alone (`token_endpoint_auth_method: none`). */
  clientSecret: string | undefined;
  /** `basic` makes a failure answer carry `WWW-Authenticate: Basic` (RFC 6749 §5.2). */
  via: 'basic' | 'body';
}

/** The body parameters that carry client credentials in `client_secret_post`. */
interface CredentialParameters {
  client_id?: string | undefined;
  client_secret?: string | undefined;
}

/** RFC 6749 §2.3.1: each half of the Basic credentials is form-urlencoded before base64. */
function formDecode(value: string): string {
  return decodeURIComponent(value.replace(/\+/g, ' '));
}

function parseBasic(header: string): { clientId: string; clientSecret: string } | undefined {
  const match = /^basic +([A-Za-z0-9+/=]+) *$/i.exec(header.trim());
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  try {
    return { clientId: formDecode(decoded.slice(0, colon)), clientSecret: formDecode(decoded.slice(colon + 1)) };
  } catch {
    return undefined;
  }
}

/**
 * Reads the client credentials from HTTP Basic or the body. RFC 6749 §2.3 forbids using more than one
 * method in a request; a body `client_id` that repeats the Basic one is tolerated (some libraries send it).
 */
export function readClientCredentials(
  authorization: string | undefined,
  body: CredentialParameters,
): ClientCredentials {
  if (authorization !== undefined) {
    const basic = parseBasic(authorization);
    if (!basic) {
      throw new OAuthError(
        'invalid_request',
        'The Authorization header must be HTTP Basic client credentials: Basic base64(client_id:client_secret).',
      );
    }
    if (body.client_secret !== undefined) {
      throw new OAuthError(
        'invalid_request',
        'Client credentials were sent both in the Authorization header and in the body; use one method.',
      );
    }
    if (body.client_id !== undefined && body.client_id !== basic.clientId) {
      throw new OAuthError(
        'invalid_request',
        'The client_id in the body differs from the one in the Authorization header.',
      );
    }
    return { ...basic, via: 'basic' };
  }
  if (!body.client_id) throw new OAuthError('invalid_request', 'The client_id parameter is missing.');
  // Without a secret this is a public client; a confidential one is then refused as invalid_client.
  if (body.client_secret === '') throw new OAuthError('invalid_request', 'The client_secret parameter is empty.');
  return { clientId: body.client_id, clientSecret: body.client_secret, via: 'body' };
}

/**
 * Authenticates OAuth clients and throttles guessing (RFC 6749 §10.10, RFC 6819 §5.1.4.2.3): failures
 * are counted per client id from one address and per address, and past either limit every request
 * from that address is refused until the window ends, even one with the right secret, so a guesser
 * learns nothing from trying on. The count is never per client id alone: client ids are public, and
 * anyone could then lock an app out of its own token exchanges by sending wrong secrets for it.
 */
export class ClientAuthenticator {
  private readonly perClientAddress: RateLimiter;
  private readonly perAddress: RateLimiter;

  constructor(
    private readonly db: Db,
    limits: Config['oauthClientAuthFailures'],
    clock: Clock,
  ) {
    const window = { windowSeconds: limits.windowSeconds };
    this.perClientAddress = new RateLimiter(
      db,
      'oauth-client-auth',
      { max: limits.perClientAddress, ...window },
      clock,
    );
    this.perAddress = new RateLimiter(db, 'oauth-address-auth', { max: limits.perAddress, ...window }, clock);
  }

  async authenticate(credentials: ClientCredentials, address: string): Promise<OAuthApp> {
    // An address holds no space, so the pair cannot be mistaken for another.
    const clientKey = `${address} ${credentials.clientId}`;
    if (credentials.clientSecret === undefined) {
      // A confidential client that forgot its secret is told so, as before public clients existed.
      const app = await findAppByClientId(this.db, credentials.clientId);
      if (app && app.secret_hash !== null)
        throw new OAuthError('invalid_request', 'The client_secret parameter is missing.');
    }
    // Counted as a failure before the secret is checked; a successful attempt is taken back.
    const attempt = await startAttempt([
      { limiter: this.perClientAddress, key: clientKey },
      { limiter: this.perAddress, key: address },
    ]);
    if (!attempt.allowed) throw new OAuthThrottledError(attempt.refusedBy.resetSeconds);
    const app = await authenticateApp(this.db, credentials.clientId, credentials.clientSecret);
    if (app) {
      await attempt.takeBack();
      return app;
    }
    // The same answer for an unknown client and a wrong secret, so client ids cannot be probed.
    throw new OAuthError(
      'invalid_client',
      'Client authentication failed: unknown client_id or wrong client_secret.',
      401,
      credentials.via === 'basic' ? { 'WWW-Authenticate': 'Basic realm="oauth"' } : {},
    );
  }
}
