import type { Clock } from '../../core/clock.js';
import type { PinterestConfig } from '../../core/config.js';
import {
  ConnectionRefusedError,
  type AccountCredentials,
  type AccountIdentity,
  type ConsentConnection,
} from '../connection-contract.js';
import { jsonOf, pinterestMessage, type PinterestApi } from './api.js';

/**
 * What the app asks of a Pinterest account: its boards to choose from (`boards:read`), creating pins
 * (`pins:write`), and who it is (`user_accounts:read`). Pinterest's reference lists `boards:write` and
 * `pins:read` among the scopes of `POST /v5/pins` too, and `pins:read` is what reading a board's pins
 * (finding a pin whose answer was lost) and a video's processing status ask for; without them a pin could
 * be refused, so they are asked as well.
 */
export const PINTEREST_SCOPES = ['boards:read', 'boards:write', 'pins:read', 'pins:write', 'user_accounts:read'];

/**
 * An access token is refreshed this long before its 30 days end, ahead of use (token upkeep): each
 * refresh gives a new continuous refresh token of 60 days, so an account with nothing to publish for
 * months stays connected.
 */
const REFRESH_AHEAD_MS = 7 * 86_400_000;

interface TokenAnswer {
  access_token?: string;
  refresh_token?: string;
  expires_in?: number;
  refresh_token_expires_in?: number;
  scope?: string;
  code?: number;
  message?: string;
}

/**
 * Connecting a Pinterest account (developers.pinterest.com, "Set up authentication and authorization"):
 * the consent page at www.pinterest.com/oauth/ with the scopes comma-separated, tokens from
 * `POST /v5/oauth/token` with this server's app authenticated by HTTP Basic, and the account from
 * `GET /v5/user_account`. Pinterest's refresh tokens are continuous ones: each refresh answers a new
 * refresh token valid 60 days (`refresh_token_expires_in`), and the one sent is not to be used again, so
 * the caller stores the new pair before anything else (AccountTokens, one refresher per account).
 */
export class PinterestConnection implements ConsentConnection {
  readonly kind = 'consent';
  readonly consentOrigin: string;
  readonly refreshBeforeExpiryMs = REFRESH_AHEAD_MS;

  constructor(
    private readonly config: PinterestConfig,
    private readonly api: PinterestApi,
    private readonly clock: Clock,
  ) {
    this.consentOrigin = new URL(config.authorizeUrl).origin;
  }

  authorizeUrl(input: { state: string; redirectUri: string }): string {
    const query = new URLSearchParams({
      client_id: this.config.appId,
      redirect_uri: input.redirectUri,
      response_type: 'code',
      scope: PINTEREST_SCOPES.join(','),
      state: input.state,
    });
    return `${this.config.authorizeUrl}?${query.toString()}`;
  }

  async exchangeCode(input: { code: string; redirectUri: string }): Promise<AccountCredentials> {
    const answer = await this.token({
      grant_type: 'authorization_code',
      code: input.code,
      redirect_uri: input.redirectUri,
    });
    return this.credentialsFrom(answer, null);
  }

  async refresh(credentials: AccountCredentials): Promise<AccountCredentials> {
    if (!credentials.refreshToken) throw new ConnectionRefusedError('Pinterest gave no refresh token for this account');
    // continuous_refresh: apps made before September 2025 ask for the continuous refresh token by it.
    const answer = await this.token({
      grant_type: 'refresh_token',
      refresh_token: credentials.refreshToken,
      continuous_refresh: 'true',
    });
    return this.credentialsFrom(answer, credentials.refreshToken);
  }

  async identity(credentials: AccountCredentials): Promise<AccountIdentity> {
    const answer = await this.api.send('/v5/user_account', {
      method: 'GET',
      authorization: `Bearer ${credentials.accessToken}`,
    });
    if (answer.status === 401 || answer.status === 403)
      throw new ConnectionRefusedError(`Pinterest refused the access token (${pinterestMessage(answer)})`);
    const user = jsonOf<{ id?: string; username?: string; business_name?: string | null; profile_image?: string }>(
      answer,
    );
    if (answer.status !== 200 || !user?.id) throw new Error(`Pinterest answered ${answer.status} to user_account`);
    return {
      externalId: user.id,
      name: user.business_name || user.username || user.id,
      username: user.username ?? null,
      picture: user.profile_image || null,
    };
  }

  /**
   * Pinterest revokes only the tokens of its system users (`POST /v5/oauth/token/revoke`), not a user's
   * grant to an app: removing a channel ends nothing at Pinterest. This server forgets the tokens, and
   * the account's owner removes the app in Pinterest's settings to end its access.
   */
  revoke(): Promise<void> {
    return Promise.reject(new ConnectionRefusedError('Pinterest gives an app no revocation of a user’s grant'));
  }

  private async token(form: Record<string, string>): Promise<TokenAnswer> {
    const answer = await this.api.send('/v5/oauth/token', {
      method: 'POST',
      authorization: this.api.appAuthorization(),
      body: { form },
    });
    const body = jsonOf<TokenAnswer>(answer) ?? {};
    if (answer.status === 200 && body.access_token) return body;
    // 400: the code or refresh token is no longer good (used, expired, revoked). A 401 is the app's own
    // credentials, which the operator fixes: no reconnecting helps.
    if (answer.status === 400)
      throw new ConnectionRefusedError(`Pinterest refused the grant (${pinterestMessage(answer)})`);
    throw new Error(`Pinterest's token endpoint answered ${answer.status} (${pinterestMessage(answer)})`);
  }

  private credentialsFrom(answer: TokenAnswer, previousRefreshToken: string | null): AccountCredentials {
    return {
      accessToken: answer.access_token!,
      refreshToken: answer.refresh_token ?? previousRefreshToken,
      expiresAt: answer.expires_in
        ? new Date(this.clock.now().getTime() + answer.expires_in * 1000).toISOString()
        : null,
      scopes: answer.scope ? answer.scope.split(/[,\s]+/).filter(Boolean) : [],
    };
  }
}
