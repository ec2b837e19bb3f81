import { randomBytes } from 'node:crypto';
import { type Answer, GraphError, type GraphRequest } from './fake-graph-protocol.js';

// How a Meta host of the fakes (Threads, Instagram with Instagram Login) lets its user in: the authorization
// window, the code, short-lived tokens exchanged for long-lived ones, refreshed, and checked on every call.

/** An access token the fake issued: short-lived (an hour) from the code, long-lived (60 days) from an exchange. */
export interface FakeGraphToken {
  value: string;
  kind: 'short' | 'long';
  scopes: string[];
  /** ms on the fake's clock. */
  issuedAt: number;
  expiresAt: number;
  /** The user removed the app, or Meta invalidated the session. */
  revoked: boolean;
}

export const SHORT_LIVED_SECONDS = 3600;
export const LONG_LIVED_SECONDS = 60 * 86_400;
/** A long-lived token can be refreshed once it is a day old (both hosts' long-lived token pages). */
export const REFRESHABLE_AFTER_SECONDS = 86_400;

/** Tokens of one app and its one user, checked as the Graph API checks them (code 190 when they are no good). */
export class TokenStore {
  readonly tokens: FakeGraphToken[] = [];

  constructor(
    private readonly now: () => number,
    /** How the host's tokens begin: `THAA` for Threads, `IGAA` for Instagram. */
    private readonly prefix: string,
    private readonly appId: string,
  ) {}

  issue(kind: FakeGraphToken['kind'], scopes: string[], lifetimeSeconds: number): FakeGraphToken {
    const token: FakeGraphToken = {
      value: `${this.prefix}${randomBytes(96)
        .toString('base64')
        .replace(/[^A-Za-z0-9]/g, '')}`,
      kind,
      scopes,
      issuedAt: this.now(),
      expiresAt: this.now() + lifetimeSeconds * 1000,
      revoked: false,
    };
    this.tokens.push(token);
    return token;
  }

  /** The token if it is good now, or the 190 Meta answers: unknown, revoked (subcode 458) or expired (463). */
  check(value: string | undefined): FakeGraphToken {
    const token = this.tokens.find((t) => t.value === value);
    if (!token)
      throw new GraphError(400, {
        message: 'Invalid OAuth access token - Cannot parse access token',
        type: 'OAuthException',
        code: 190,
      });
    if (token.revoked)
      throw new GraphError(400, {
        message: `Error validating access token: The user has not authorized application ${this.appId}.`,
        type: 'OAuthException',
        code: 190,
        error_subcode: 458,
      });
    if (token.expiresAt <= this.now())
      throw new GraphError(400, {
        message: `Error validating access token: Session has expired on ${new Date(token.expiresAt).toUTCString()}. The current time is ${new Date(this.now()).toUTCString()}.`,
        type: 'OAuthException',
        code: 190,
        error_subcode: 463,
      });
    return token;
  }

  /** Every token issued so far has expired (the clock does not move). */
  expireAll(): void {
    for (const token of this.tokens) token.expiresAt = Math.min(token.expiresAt, this.now() - 1000);
  }

  revokeAll(): void {
    for (const token of this.tokens) token.revoked = true;
  }
}

// ---- the authorization window and the code ----

/** A visit to the authorization window, as the fake recorded it. */
export interface FakeGraphConsent {
  clientId: string;
  redirectUri: string;
  /** The permissions asked for, in order. */
  scopes: string[];
  state: string | null;
  outcome: 'granted' | 'denied';
  /** What the user granted (all that was asked unless `grantOnly`). */
  granted: string[];
}

interface Code {
  value: string;
  redirectUri: string;
  scopes: string[];
  expiresAt: number;
  used: boolean;
}

/** The app registered with Meta, and what its authorization window asks. */
export interface GraphApp {
  appId: string;
  appSecret: string;
  /** Valid OAuth redirect URIs; empty: any http(s) URL, for a test that does not care. */
  redirectUris: string[];
  /** Every permission the host knows. */
  knownScopes: string[];
  /** The one permission every request must include (`threads_basic`, `instagram_business_basic`). */
  basicScope: string;
}

const CODE_LIFETIME_SECONDS = 3600;

/**
 * The authorization window and the code it gives, the same on both hosts: the window takes `client_id`,
 * `redirect_uri` (one of the app's, exactly), `scope` (comma- or space-separated), `response_type=code` and
 * an optional `state`, and consents at once (or, told to, denies); Meta appends `#_` to the redirect. A code
 * is good for an hour, once, with the same redirect URI.
 */
export class Authorization {
  readonly consents: FakeGraphConsent[] = [];
  private readonly codes: Code[] = [];
  denyNext = false;
  onlyScopes: string[] | undefined;

  constructor(
    private readonly app: GraphApp,
    private readonly now: () => number,
  ) {}

  window(query: URLSearchParams): Answer {
    const page = (problem: string): Answer => ({
      status: 400,
      html: `<!doctype html><title>Error</title><p>Invalid Request: ${problem.replace(/[<>&"]/g, '')}</p>`,
    });
    if (query.get('client_id') !== this.app.appId) return page('Invalid platform app');
    const redirectUri = query.get('redirect_uri') ?? '';
    let target: URL;
    try {
      target = new URL(redirectUri);
    } catch {
      return page('Invalid redirect_uri');
    }
    const registered =
      this.app.redirectUris.length === 0
        ? target.protocol === 'https:' || target.protocol === 'http:'
        : this.app.redirectUris.includes(redirectUri);
    if (!registered || target.hash) return page('Invalid redirect_uri');
    if (query.get('response_type') !== 'code') return page('Invalid response_type');
    const scopes = (query.get('scope') ?? '').split(/[\s,]+/).filter((s) => s !== '');
    const unknown = scopes.find((s) => !this.app.knownScopes.includes(s));
    if (unknown !== undefined) return page(`Invalid Scopes: ${unknown}`);
    if (!scopes.includes(this.app.basicScope)) return page(`Invalid Scopes: ${this.app.basicScope} is required`);
    const state = query.get('state');
    const back = (params: Record<string, string>): Answer => {
      for (const [name, value] of Object.entries(params)) target.searchParams.set(name, value);
      if (state !== null) target.searchParams.set('state', state);
      return { status: 302, headers: { Location: `${target.toString()}#_` } };
    };
    if (this.denyNext) {
      this.denyNext = false;
      this.consents.push({ clientId: this.app.appId, redirectUri, scopes, state, outcome: 'denied', granted: [] });
      return back({ error: 'access_denied', error_reason: 'user_denied', error_description: 'Permissions error' });
    }
    const granted = this.onlyScopes
      ? scopes.filter((s) => s === this.app.basicScope || this.onlyScopes!.includes(s))
      : scopes;
    this.onlyScopes = undefined;
    this.consents.push({ clientId: this.app.appId, redirectUri, scopes, state, outcome: 'granted', granted });
    const code: Code = {
      value: randomBytes(96).toString('base64url'),
      redirectUri,
      scopes: granted,
      expiresAt: this.now() + CODE_LIFETIME_SECONDS * 1000,
      used: false,
    };
    this.codes.push(code);
    return back({ code: code.value });
  }

  /**
   * `POST /oauth/access_token`: the granted scopes for a good code, or the token endpoint's own error shape,
   * `{error_type, code, error_message}` (not the Graph envelope).
   */
  exchange(form: URLSearchParams): string[] | Answer {
    const refuse = (message: string): Answer => ({
      status: 400,
      body: { error_type: 'OAuthException', code: 400, error_message: message },
    });
    for (const name of ['client_id', 'client_secret', 'grant_type', 'redirect_uri', 'code'])
      if (!form.get(name)) return refuse(`Missing required field '${name}'`);
    if (form.get('client_id') !== this.app.appId) return refuse('Invalid platform app');
    if (form.get('client_secret') !== this.app.appSecret) return refuse('Error validating client secret.');
    if (form.get('grant_type') !== 'authorization_code') return refuse('Unsupported grant_type');
    const code = this.codes.find((c) => c.value === form.get('code'));
    if (!code || code.expiresAt <= this.now()) return refuse('Invalid authorization code');
    if (code.used) return refuse('This authorization code has been used.');
    code.used = true;
    if (form.get('redirect_uri') !== code.redirectUri)
      return refuse(
        'Error validating verification code. Please make sure your redirect_uri is identical to the one you used in the OAuth dialog request',
      );
    return code.scopes;
  }
}

/**
 * The long-lived token endpoints, the same on both hosts but for the grant types' names: `GET /access_token`
 * exchanges a good short-lived token for a 60-day one (with the app secret), `GET /refresh_access_token`
 * gives a new 60-day token for a long-lived one at least a day old and not expired.
 */
export function longLivedTokens(tokens: TokenStore, app: GraphApp, grantTypes: { exchange: string; refresh: string }) {
  const answer = (token: FakeGraphToken): Answer => ({
    status: 200,
    body: {
      access_token: token.value,
      token_type: 'bearer',
      expires_in: Math.round((token.expiresAt - token.issuedAt) / 1000),
    },
  });
  const oauth = (message: string, code = 100) => new GraphError(400, { message, type: 'OAuthException', code });
  return {
    exchange(request: GraphRequest): Answer {
      if (request.params.get('grant_type') !== grantTypes.exchange)
        throw oauth(`Unsupported grant_type, expected ${grantTypes.exchange}`);
      if (request.params.get('client_secret') !== app.appSecret) throw oauth('Error validating client secret.', 1);
      const short = tokens.check(request.accessToken);
      if (short.kind !== 'short') throw oauth('The access token is already a long-lived token.');
      return answer(tokens.issue('long', short.scopes, LONG_LIVED_SECONDS));
    },
    refresh(request: GraphRequest, now: number): Answer {
      if (request.params.get('grant_type') !== grantTypes.refresh)
        throw oauth(`Unsupported grant_type, expected ${grantTypes.refresh}`);
      const current = tokens.check(request.accessToken);
      if (current.kind !== 'long') throw oauth('Only a long-lived access token can be refreshed.');
      // Meta documents the rule, not its wording: the fake's message is its own.
      if (now - current.issuedAt < REFRESHABLE_AFTER_SECONDS * 1000)
        throw oauth('A long-lived access token can be refreshed once it is at least 24 hours old.');
      return answer(tokens.issue('long', current.scopes, LONG_LIVED_SECONDS));
    },
  };
}
