import type { Clock } from '../../core/clock.js';
import type { TikTokConfig } from '../../core/config.js';
import {
  ConnectionRefusedError,
  type AccountCredentials,
  type AccountIdentity,
  type ConsentConnection,
} from '../connection-contract.js';
import { TikTokError, type TikTokApi } from './api.js';

/**
 * What the app asks of a TikTok account (Login Kit): its profile and totals, its videos, and posting
 * videos directly or to the creator's inbox.
 */
export const TIKTOK_SCOPES = ['user.info.basic', 'user.info.stats', 'video.list', 'video.publish', 'video.upload'];

interface TokenAnswer {
  access_token?: string;
  expires_in?: number;
  open_id?: string;
  refresh_token?: string;
  refresh_expires_in?: number;
  scope?: string;
  error?: string;
  error_description?: string;
  log_id?: string;
}

/** Codes of TikTok's token endpoint that mean the user must authorize the app again. */
const REFUSALS = new Set(['invalid_grant', 'access_denied', 'invalid_request', 'unauthorized_client']);

/**
 * Connecting a TikTok account (TikTok Login Kit for Web, OAuth v2): the consent page at
 * `/v2/auth/authorize/`, tokens from `/v2/oauth/token/` (form-encoded, with the app's client key and
 * secret), which issues a new refresh token with every refresh, and the account's identity from
 * `/v2/user/info/`. Web apps use `state` (bound to the connection here); TikTok asks PKCE of
 * desktop and mobile apps only.
 */
export class TikTokConnection implements ConsentConnection {
  readonly kind = 'consent';
  readonly consentOrigin: string;

  constructor(
    private readonly config: TikTokConfig,
    private readonly api: TikTokApi,
    private readonly clock: Clock,
  ) {
    this.consentOrigin = new URL(config.authUrl).origin;
  }

  authorizeUrl(input: { state: string; redirectUri: string }): string {
    const query = new URLSearchParams({
      client_key: this.config.clientKey,
      response_type: 'code',
      scope: TIKTOK_SCOPES.join(','),
      redirect_uri: input.redirectUri,
      state: input.state,
    });
    return `${this.config.authUrl}/v2/auth/authorize/?${query.toString()}`;
  }

  async exchangeCode(input: { code: string; redirectUri: string }): Promise<AccountCredentials> {
    const answer = await this.token({
      grant_type: 'authorization_code',
      code: input.code,
      redirect_uri: input.redirectUri,
    });
    return this.credentialsFrom(answer);
  }

  async refresh(credentials: AccountCredentials): Promise<AccountCredentials> {
    if (!credentials.refreshToken) throw new ConnectionRefusedError('TikTok gave no refresh token for this account');
    // TikTok answers a new refresh token each time: the caller stores it before anything else.
    return this.credentialsFrom(
      await this.token({ grant_type: 'refresh_token', refresh_token: credentials.refreshToken }),
    );
  }

  async identity(credentials: AccountCredentials): Promise<AccountIdentity> {
    try {
      const { data } = await this.api.call<{ user?: { open_id?: string; display_name?: string; avatar_url?: string } }>(
        '/v2/user/info/?fields=open_id,display_name,avatar_url',
        { accessToken: credentials.accessToken, method: 'GET' },
      );
      const user = data.user;
      if (!user?.open_id) throw new Error('TikTok answered no open_id');
      // The handle comes with the creator info (user.info.profile, which would give it here, is not asked for).
      const username = await this.api
        .call<{ creator_username?: string }>('/v2/post/publish/creator_info/query/', {
          accessToken: credentials.accessToken,
        })
        .then(({ data: creator }) => creator.creator_username ?? null)
        .catch(() => null);
      return {
        externalId: user.open_id,
        name: user.display_name || username || user.open_id,
        username,
        picture: user.avatar_url || null,
      };
    } catch (error) {
      if (
        error instanceof TikTokError &&
        (error.code === 'access_token_invalid' || error.code === 'scope_not_authorized')
      ) {
        throw new ConnectionRefusedError(`TikTok refused the account's token (${error.code})`);
      }
      throw error;
    }
  }

  async revoke(credentials: AccountCredentials): Promise<void> {
    const response = await this.api.send(`${this.config.apiUrl}/v2/oauth/revoke/`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        client_key: this.config.clientKey,
        client_secret: this.config.clientSecret,
        token: credentials.accessToken,
      }).toString(),
    });
    if (response.status === 200) {
      const answer = parse(response.body);
      if (!answer.error || answer.error === 'ok') return;
    }
    if (response.status >= 500 || response.status === 429)
      throw new Error(`TikTok's revocation endpoint answered ${response.status}`);
    // TikTok refuses a token it no longer knows: nothing is left to revoke.
    throw new ConnectionRefusedError('TikTok no longer knows the token');
  }

  private async token(form: Record<string, string>): Promise<TokenAnswer> {
    const response = await this.api.send(`${this.config.apiUrl}/v2/oauth/token/`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Cache-Control': 'no-cache' },
      body: new URLSearchParams({
        client_key: this.config.clientKey,
        client_secret: this.config.clientSecret,
        ...form,
      }).toString(),
    });
    const answer = parse(response.body);
    if (response.status === 200 && answer.access_token) return answer;
    if (answer.error && REFUSALS.has(answer.error)) {
      throw new ConnectionRefusedError(
        `TikTok refused the grant (${answer.error_description || answer.error})`,
        answer.log_id || undefined,
      );
    }
    throw new Error(
      `TikTok's token endpoint answered ${response.status}${answer.error ? ` ${answer.error}` : ''}` +
        (answer.log_id ? ` (log_id ${answer.log_id})` : ''),
    );
  }

  private credentialsFrom(answer: TokenAnswer): AccountCredentials {
    return {
      accessToken: answer.access_token!,
      refreshToken: answer.refresh_token ?? null,
      expiresAt: answer.expires_in
        ? new Date(this.clock.now().getTime() + answer.expires_in * 1000).toISOString()
        : null,
      scopes: answer.scope ? answer.scope.split(',').map((scope) => scope.trim()) : [],
    };
  }
}

function parse(body: Buffer): TokenAnswer {
  try {
    return JSON.parse(body.toString('utf8')) as TokenAnswer;
  } catch {
    return {};
  }
}
