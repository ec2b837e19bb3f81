import type { Clock } from '../../core/clock.js';
import type { XConfig } from '../../core/config.js';
import {
  ConnectionRefusedError,
  type AccountCredentials,
  type AccountIdentity,
  type ConsentConnection,
} from '../connection-contract.js';
import { jsonOf, xMessage, type XApi } from './api.js';

/**
 * What the app asks of an X account: reading and writing posts (reading finds a post whose answer was
 * lost), the user's identity, uploading media, and a refresh token (`offline.access`), without which
 * the access token's two hours would be the channel's whole life.
 */
export const X_SCOPES = ['tweet.read', 'tweet.write', 'users.read', 'media.write', 'offline.access'];

interface TokenAnswer {
  token_type?: string;
  access_token?: string;
  refresh_token?: string;
  expires_in?: number;
  scope?: string;
  error?: string;
  error_description?: string;
}

/**
 * The errors of X's token endpoint that mean the user must authorize the app again: X answers
 * `invalid_request` "Value passed for the token was invalid." for a code or refresh token it no
 * longer takes (used, expired, revoked). `invalid_client` and `unauthorized_client` are the app's
 * credentials, which the operator fixes: no reconnecting helps, so they are not among these.
 */
const REFUSALS = new Set(['invalid_request', 'invalid_grant']);

/**
 * Connecting an X account (OAuth 2.0 authorization code with PKCE, docs.x.com): the consent page at
 * x.com/i/oauth2/authorize with S256, tokens from `POST /2/oauth2/token` with this server's app
 * authenticated by HTTP Basic (a confidential client), and the account's identity from
 * `/2/users/me`. X rotates refresh tokens: each refresh answers a new pair and the refresh token used
 * is dead from then on, so the caller stores the new pair before anything else (AccountTokens, one
 * refresher per account).
 */
export class XConnection implements ConsentConnection {
  readonly kind = 'consent';
  readonly consentOrigin: string;

  constructor(
    private readonly config: XConfig,
    private readonly api: XApi,
    private readonly clock: Clock,
  ) {
    this.consentOrigin = new URL(config.authorizeUrl).origin;
  }

  authorizeUrl(input: { state: string; redirectUri: string; codeChallenge: string }): string {
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: this.config.clientId,
      redirect_uri: input.redirectUri,
      scope: X_SCOPES.join(' '),
      state: input.state,
      code_challenge: input.codeChallenge,
      code_challenge_method: 'S256',
    });
    return `${this.config.authorizeUrl}?${query.toString()}`;
  }

  async exchangeCode(input: { code: string; redirectUri: string; codeVerifier: string }): Promise<AccountCredentials> {
    const answer = await this.token({
      grant_type: 'authorization_code',
      code: input.code,
      redirect_uri: input.redirectUri,
      code_verifier: input.codeVerifier,
    });
    return this.credentialsFrom(answer, null);
  }

  async refresh(credentials: AccountCredentials): Promise<AccountCredentials> {
    if (!credentials.refreshToken) throw new ConnectionRefusedError('X gave no refresh token for this account');
    const answer = await this.token({ grant_type: 'refresh_token', refresh_token: credentials.refreshToken });
    return this.credentialsFrom(answer, credentials.refreshToken);
  }

  async identity(credentials: AccountCredentials): Promise<AccountIdentity> {
    const answer = await this.api.send('/2/users/me?user.fields=profile_image_url', {
      method: 'GET',
      authorization: `Bearer ${credentials.accessToken}`,
    });
    if (answer.status === 401 || answer.status === 403)
      throw new ConnectionRefusedError(`X refused the access token (${xMessage(answer)})`);
    const user = jsonOf<{ data?: { id?: string; name?: string; username?: string; profile_image_url?: string } }>(
      answer,
    )?.data;
    if (answer.status !== 200 || !user?.id) throw new Error(`X answered ${answer.status} to users/me`);
    return {
      externalId: user.id,
      name: user.name || user.username || user.id,
      username: user.username ?? null,
      picture: user.profile_image_url ?? null,
    };
  }

  /**
   * Revokes the refresh token (RFC 7009), which ends the whole grant at X, or the access token when
   * there is none. X answers a token it does not know as revoked.
   */
  async revoke(credentials: AccountCredentials): Promise<void> {
    const [token, hint] = credentials.refreshToken
      ? [credentials.refreshToken, 'refresh_token']
      : [credentials.accessToken, 'access_token'];
    const answer = await this.api.send('/2/oauth2/revoke', {
      method: 'POST',
      authorization: this.api.appAuthorization(),
      body: { form: { token, token_type_hint: hint } },
    });
    if (answer.status === 200) return;
    const error = jsonOf<TokenAnswer>(answer)?.error;
    if (answer.status === 400 && error && REFUSALS.has(error))
      throw new ConnectionRefusedError('X no longer knows the token');
    throw new Error(`X's revocation endpoint answered ${answer.status}${error ? ` ${error}` : ''}`);
  }

  private async token(form: Record<string, string>): Promise<TokenAnswer> {
    const answer = await this.api.send('/2/oauth2/token', {
      method: 'POST',
      authorization: this.api.appAuthorization(),
      body: { form },
    });
    const body = jsonOf<TokenAnswer>(answer) ?? {};
    if (answer.status === 200 && body.access_token) return body;
    if (answer.status === 400 && body.error && REFUSALS.has(body.error))
      throw new ConnectionRefusedError(`X refused the grant (${body.error_description || body.error})`);
    throw new Error(`X's token endpoint answered ${answer.status}${body.error ? ` ${body.error}` : ''}`);
  }

  private credentialsFrom(answer: TokenAnswer, previousRefreshToken: string | null): AccountCredentials {
    return {
      accessToken: answer.access_token!,
      // X answers a new refresh token with every refresh; the one sent is dead once it did.
      refreshToken: answer.refresh_token ?? previousRefreshToken,
      expiresAt: answer.expires_in
        ? new Date(this.clock.now().getTime() + answer.expires_in * 1000).toISOString()
        : null,
      scopes: answer.scope ? answer.scope.split(' ').filter(Boolean) : [],
    };
  }
}
