import type { Clock } from '../../core/clock.js';
import type { ThreadsConfig } from '../../core/config.js';
import {
  ConnectionRefusedError,
  type AccountCredentials,
  type AccountIdentity,
  type ConsentConnection,
} from '../connection-contract.js';
import { graphErrorOf, type GraphAnswer, type GraphApi } from '../meta/graph.js';

/**
 * What the app asks of a Threads account: its profile (`threads_basic`, which every call needs),
 * publishing posts and replies (`threads_content_publish`), reading the replies' quota before a thread's
 * reply is published (`threads_publishing_limit`'s `reply_quota_usage` needs `threads_manage_replies`),
 * and reading the account's replies, among which a reply whose answer was lost is looked for
 * (`GET /{user-id}/replies` needs `threads_read_replies`).
 */
export const THREADS_SCOPES = [
  'threads_basic',
  'threads_content_publish',
  'threads_manage_replies',
  'threads_read_replies',
];

/**
 * A long-lived token is refreshed this long before it expires: Threads refreshes one that is at least a
 * day old and not expired (`th_refresh_token`), and one that expired is lost with the channel's
 * connection, so any use of the channel in the token's last 30 days renews it for 60 more.
 */
export const THREADS_REFRESH_AHEAD_MS = 30 * 86_400_000;

interface TokenAnswer {
  access_token?: string;
  expires_in?: number;
  /** The token endpoint's own error shape (not the Graph envelope). */
  error_message?: string;
  error_type?: string;
}

interface Profile {
  id?: string;
  username?: string;
  name?: string;
  threads_profile_picture_url?: string;
}

/**
 * Connecting a Threads account through Threads's own OAuth (developers.facebook.com, Threads API, "Get
 * Access Tokens and Permissions"): the consent page at threads.net/oauth/authorize with the app's id, the
 * redirect URI registered in the app's Threads use case and `state`; the code traded at
 * `POST graph.threads.net/oauth/access_token` for a short-lived token (an hour), exchanged at once for a
 * long-lived one (`th_exchange_token`, 60 days), which is what the channel keeps; the account's identity
 * from `/me`. Threads answers the user's id in the code's answer as a JSON number too large for a
 * double: the id is read from `/me`, as a string. The long-lived token is refreshed with itself
 * (`th_refresh_token`), there being no refresh token.
 */
export class ThreadsConnection implements ConsentConnection {
  readonly kind = 'consent';
  // Threads refreshes a token only while it is good: a use in its last 30 days renews it (housekeeping, an idle one).
  readonly refreshBeforeExpiryMs = THREADS_REFRESH_AHEAD_MS;
  readonly consentOrigin: string;

  constructor(
    private readonly config: ThreadsConfig,
    private readonly graph: GraphApi,
    private readonly clock: Clock,
  ) {
    this.consentOrigin = new URL(config.authorizeUrl).origin;
  }

  authorizeUrl(input: { state: string; redirectUri: string }): string {
    const query = new URLSearchParams({
      client_id: this.config.appId,
      redirect_uri: input.redirectUri,
      scope: THREADS_SCOPES.join(','),
      response_type: 'code',
      state: input.state,
    });
    return `${this.config.authorizeUrl}?${query.toString()}`;
  }

  async exchangeCode(input: { code: string; redirectUri: string }): Promise<AccountCredentials> {
    const short = await this.graph.call<TokenAnswer>(`${this.config.graphUrl}/oauth/access_token`, {
      method: 'POST',
      params: {
        client_id: this.config.appId,
        client_secret: this.config.appSecret,
        grant_type: 'authorization_code',
        redirect_uri: input.redirectUri,
        code: input.code,
      },
    });
    const shortToken = tokenOf(short, 'the code');
    const long = await this.graph.call<TokenAnswer>(`${this.config.graphUrl}/access_token`, {
      method: 'GET',
      accessToken: shortToken,
      params: { grant_type: 'th_exchange_token', client_secret: this.config.appSecret },
    });
    return this.credentialsFrom(long, 'the exchange of the short-lived token');
  }

  async refresh(credentials: AccountCredentials): Promise<AccountCredentials> {
    const answer = await this.graph.call<TokenAnswer>(`${this.config.graphUrl}/refresh_access_token`, {
      method: 'GET',
      accessToken: credentials.accessToken,
      params: { grant_type: 'th_refresh_token' },
    });
    return this.credentialsFrom(answer, 'the refresh of the token');
  }

  async identity(credentials: AccountCredentials): Promise<AccountIdentity> {
    const answer = await this.graph.call<Profile>('me', {
      method: 'GET',
      accessToken: credentials.accessToken,
      params: { fields: 'id,username,name,threads_profile_picture_url' },
    });
    const error = graphErrorOf(answer);
    if (error?.code === 190)
      throw new ConnectionRefusedError(`Threads refused the token (${error.message})`, error.fbtraceId);
    const profile = answer.data;
    if (error || !profile.id)
      throw new Error(`Threads answered ${answer.status} to /me${error ? `: ${error.message}` : ''}`);
    return {
      externalId: profile.id,
      name: profile.name || profile.username || profile.id,
      username: profile.username ?? null,
      picture: profile.threads_profile_picture_url ?? null,
    };
  }

  /**
   * Meta documents no way for an app to revoke a Threads token: the channel's token was taken off the
   * channel already, and lapses after its 60 days; the account's owner removes the app's access in
   * Threads (Settings → Account → Website permissions). Nothing is left to do here.
   */
  revoke(): Promise<void> {
    return Promise.resolve();
  }

  private credentialsFrom(answer: GraphAnswer<TokenAnswer>, what: string): AccountCredentials {
    const accessToken = tokenOf(answer, what);
    const expiresIn = answer.data.expires_in;
    return {
      accessToken,
      refreshToken: null,
      expiresAt:
        typeof expiresIn === 'number' ? new Date(this.clock.now().getTime() + expiresIn * 1000).toISOString() : null,
      // Threads's answers do not say which permissions the user granted.
      scopes: [],
    };
  }
}

/**
 * The token of a token endpoint's answer. Threads refuses a code, or a token it no longer takes, with a
 * 4xx (its token endpoint's `{error_type, code, error_message}` or the Graph envelope, code 190): the
 * user connects the account again. A 5xx is Threads's own passing trouble.
 */
function tokenOf(answer: GraphAnswer<TokenAnswer>, what: string): string {
  if (answer.status === 200 && answer.data.access_token) return answer.data.access_token;
  const error = graphErrorOf(answer);
  const message = answer.data.error_message ?? error?.message ?? `HTTP ${answer.status}`;
  if (answer.status >= 400 && answer.status < 500)
    throw new ConnectionRefusedError(`Threads refused ${what} (${message})`, error?.fbtraceId);
  throw new Error(`Threads answered ${answer.status} to ${what}: ${message}`);
}
