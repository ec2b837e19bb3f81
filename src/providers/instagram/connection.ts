import type { Clock } from '../../core/clock.js';
import type { InstagramLoginConfig } from '../../core/config.js';
import {
  ConnectionRefusedError,
  type AccountCredentials,
  type AccountIdentity,
  type ConsentConnection,
} from '../connection-contract.js';
import { graphErrorOf, type GraphAnswer, type GraphApi } from '../meta/graph.js';
import type { InstagramCredentials } from './credentials.js';

/**
 * What the app asks of an Instagram professional account through Business Login for Instagram: its
 * profile (asked of every app), publishing to it, and commenting on its media (a post's first comment).
 */
export const INSTAGRAM_LOGIN_SCOPES = [
  'instagram_business_basic',
  'instagram_business_content_publish',
  'instagram_business_manage_comments',
];

/** Without it the account takes no posts: a consent that left it out connects nothing. */
const PUBLISHING_SCOPE = 'instagram_business_content_publish';

/**
 * A long-lived token is refreshed once it has less than this left: Instagram refreshes only a token still
 * good (and at least a day old), so an account used at least once a month keeps its token for good.
 */
const REFRESH_BEFORE_EXPIRY_MS = 30 * 86_400_000;

/** One grant of the code exchange, as the endpoint's reference answers it or inside `data` as the login guide does. */
interface CodeGrant {
  access_token?: string;
  /** A JSON array in the reference's answer, comma-separated text in the guide's. */
  permissions?: string[] | string;
}

/** The token endpoint's own error shape (not the Graph envelope). */
interface TokenRefusal {
  error_type?: string;
  code?: number;
  error_message?: string;
}

interface LongLivedToken {
  access_token?: string;
  token_type?: string;
  expires_in?: number;
}

interface Me {
  id?: string;
  user_id?: unknown;
  username?: string;
  name?: string;
  profile_picture_url?: string;
}

/**
 * Connecting an Instagram professional account without a Facebook Page (the Instagram API with
 * Instagram Login, developers.facebook.com's Business Login for Instagram): the authorization window
 * at www.instagram.com/oauth/authorize with `state`, the code traded at api.instagram.com's
 * `POST /oauth/access_token` for a token of an hour, at once exchanged for one of 60 days
 * (`ig_exchange_token`), refreshed (`ig_refresh_token`) while it is still good, and the account's
 * identity from graph.instagram.com's `/me`. Instagram's window takes no PKCE: the code is bound to
 * the app's secret and the exact redirect URI.
 */
export class InstagramLoginConnection implements ConsentConnection {
  readonly kind = 'consent';
  readonly consentOrigin: string;
  readonly refreshBeforeExpiryMs = REFRESH_BEFORE_EXPIRY_MS;

  constructor(
    private readonly config: InstagramLoginConfig,
    private readonly graph: GraphApi,
    private readonly clock: Clock,
  ) {
    this.consentOrigin = new URL(config.authorizeUrl).origin;
  }

  authorizeUrl(input: { state: string; redirectUri: string }): string {
    const query = new URLSearchParams({
      client_id: this.config.appId,
      redirect_uri: input.redirectUri,
      response_type: 'code',
      scope: INSTAGRAM_LOGIN_SCOPES.join(','),
      state: input.state,
    });
    return `${this.config.authorizeUrl}?${query.toString()}`;
  }

  async exchangeCode(input: { code: string; redirectUri: string }): Promise<AccountCredentials> {
    const answer = await this.graph.call<CodeGrant & TokenRefusal & { data?: CodeGrant[] }>(
      `${this.config.tokenUrl}/oauth/access_token`,
      {
        method: 'POST',
        params: {
          client_id: this.config.appId,
          client_secret: this.config.appSecret,
          grant_type: 'authorization_code',
          redirect_uri: input.redirectUri,
          code: input.code,
        },
      },
    );
    // The answer's `user_id` is a number too large for JSON.parse to keep: the account's id is read from /me.
    const grant = answer.data.data?.[0] ?? answer.data;
    if (answer.status === 200 && grant.access_token) {
      const scopes = scopesOf(grant.permissions);
      if (!scopes.includes(PUBLISHING_SCOPE))
        throw new ConnectionRefusedError('publishing to the account was not allowed on Instagram');
      const long = await this.longLived('access_token', 'ig_exchange_token', grant.access_token, {
        client_secret: this.config.appSecret,
      });
      return this.credentialsFrom(long, scopes);
    }
    const words = answer.data.error_message ?? graphErrorOf(answer)?.message ?? `HTTP ${answer.status}`;
    // The endpoint refuses a code it does not take (used, expired, another redirect URI) with a 400.
    if (answer.status === 400) throw new ConnectionRefusedError(`Instagram refused the code (${words})`);
    throw new Error(`Instagram's token endpoint answered ${answer.status} (${words})`);
  }

  /** A new 60-day token for the current one, which Instagram refreshes only while it is good. */
  async refresh(credentials: AccountCredentials): Promise<AccountCredentials> {
    const long = await this.longLived('refresh_access_token', 'ig_refresh_token', credentials.accessToken);
    return this.credentialsFrom(long, credentials.scopes);
  }

  async identity(credentials: AccountCredentials): Promise<AccountIdentity> {
    const answer = await this.graph.call<Me>('me', {
      method: 'GET',
      accessToken: credentials.accessToken,
      params: { fields: 'user_id,username,name,profile_picture_url' },
    });
    refusedToken(answer);
    const me = answer.data;
    // `user_id` is the professional account's id, the one its media are published under (and the id the
    // Instagram API with Facebook Login knows it by); `id` is only this app's id of the user. The Graph API
    // writes ids as strings: one written as a number would not be kept exactly, so it is not taken.
    const externalId = typeof me.user_id === 'string' ? me.user_id : me.id;
    if (answer.status !== 200 || !externalId)
      throw new Error(`Instagram answered ${answer.status} to /me (${graphErrorOf(answer)?.message ?? 'no id'})`);
    return {
      externalId,
      name: me.name || me.username || externalId,
      username: me.username ?? null,
      picture: me.profile_picture_url || null,
    };
  }

  /**
   * Instagram gives an app no way to end an Instagram Login token: its owner removes the app in
   * Instagram's settings (Settings → Website permissions → Apps and websites), and a token nobody
   * refreshes ends with its 60 days. Nothing is left that this installation can revoke.
   */
  revoke(): Promise<void> {
    return Promise.reject(
      new ConnectionRefusedError(
        'Instagram offers no revocation of an Instagram Login token; its owner removes the app in Instagram’s settings',
      ),
    );
  }

  /** `GET /access_token` or `/refresh_access_token` of graph.instagram.com (unversioned, as Meta documents them). */
  private async longLived(
    path: string,
    grantType: string,
    accessToken: string,
    params: Record<string, string> = {},
  ): Promise<LongLivedToken & { access_token: string }> {
    const answer = await this.graph.call<LongLivedToken>(`${this.config.graphUrl}/${path}`, {
      method: 'GET',
      accessToken,
      params: { grant_type: grantType, ...params },
    });
    refusedToken(answer);
    const token = answer.data;
    if (answer.status === 200 && token.access_token) return { ...token, access_token: token.access_token };
    const error = graphErrorOf(answer);
    throw new Error(
      `Instagram answered ${answer.status} to ${grantType} (${error?.message ?? 'no token'})` +
        (error?.fbtraceId ? ` (fbtrace_id ${error.fbtraceId})` : ''),
    );
  }

  private credentialsFrom(token: LongLivedToken & { access_token: string }, scopes: string[]): InstagramCredentials {
    return {
      accessToken: token.access_token,
      // The long-lived token is itself what is refreshed.
      refreshToken: null,
      expiresAt: token.expires_in ? new Date(this.clock.now().getTime() + token.expires_in * 1000).toISOString() : null,
      scopes,
      instagram: { api: 'instagram' },
    };
  }
}

function scopesOf(permissions: CodeGrant['permissions']): string[] {
  const list = Array.isArray(permissions) ? permissions : (permissions ?? '').split(',');
  return list.map((scope) => scope.trim()).filter(Boolean);
}

/**
 * Instagram no longer takes the token (code 190: expired, or the app removed by the account's owner):
 * the account must be connected again.
 */
function refusedToken(answer: GraphAnswer<unknown>): void {
  const error = graphErrorOf(answer);
  if (error?.code === 190)
    throw new ConnectionRefusedError(
      `Instagram no longer takes the account's token (${error.message})`,
      error.fbtraceId,
    );
}
