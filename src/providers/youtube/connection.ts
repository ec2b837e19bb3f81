import type { Clock } from '../../core/clock.js';
import type { OutboundClient } from '../../net/outbound-client.js';
import {
  AccountWithoutChannelError,
  ConnectionRefusedError,
  type AccountCredentials,
  type AccountIdentity,
  type ConsentConnection,
} from '../connection-contract.js';

/** Google's endpoints and this installation's Google app; the base URLs are overridable for tests. */
export interface YouTubeSettings {
  clientId: string;
  clientSecret: string;
  /** Where the consent page is (https://accounts.google.com). */
  accountsUrl: string;
  /** Where tokens are issued and revoked (https://oauth2.googleapis.com). */
  oauthUrl: string;
  /** Where the YouTube Data API answers (https://www.googleapis.com). */
  apiUrl: string;
}

/** Uploading videos, and reading the channel's identity and its videos. */
export const YOUTUBE_SCOPES = [
  'https://www.googleapis.com/auth/youtube.upload',
  'https://www.googleapis.com/auth/youtube.readonly',
];
/** Where a Google account gets a YouTube channel (Google's guide to `youtubeSignupRequired`). */
export const CREATE_CHANNEL_URL = 'https://www.youtube.com/create_channel';
const TIMEOUT_SECONDS = 30;
const MAX_ANSWER_BYTES = 256 * 1024;

interface TokenAnswer {
  access_token?: string;
  refresh_token?: string;
  expires_in?: number;
  scope?: string;
  error?: string;
  error_description?: string;
}

/**
 * A YouTube channel connected through Google's OAuth 2.0 for web server apps: offline access (a
 * refresh token) asked with `prompt=consent` so that connecting again always yields one, PKCE with
 * S256, and the channel's identity from `channels.list?mine=true`.
 */
export class YouTubeConnection implements ConsentConnection {
  readonly kind = 'consent';
  readonly consentOrigin: string;
  readonly createChannelUrl = CREATE_CHANNEL_URL;

  constructor(
    private readonly settings: YouTubeSettings,
    private readonly outbound: OutboundClient,
    private readonly clock: Clock,
  ) {
    this.consentOrigin = new URL(settings.accountsUrl).origin;
  }

  authorizeUrl(input: { state: string; redirectUri: string; codeChallenge: string }): string {
    const query = new URLSearchParams({
      client_id: this.settings.clientId,
      redirect_uri: input.redirectUri,
      response_type: 'code',
      scope: YOUTUBE_SCOPES.join(' '),
      access_type: 'offline',
      prompt: 'consent',
      include_granted_scopes: 'true',
      state: input.state,
      code_challenge: input.codeChallenge,
      code_challenge_method: 'S256',
    });
    return `${this.settings.accountsUrl}/o/oauth2/v2/auth?${query.toString()}`;
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
    if (!credentials.refreshToken) throw new ConnectionRefusedError('Google gave no refresh token for this channel');
    const answer = await this.token({ grant_type: 'refresh_token', refresh_token: credentials.refreshToken });
    // Google keeps the refresh token; it sends a new one only when it rotates it.
    return this.credentialsFrom(answer, credentials.refreshToken);
  }

  async identity(credentials: AccountCredentials): Promise<AccountIdentity> {
    const response = await this.outbound.call(`${this.settings.apiUrl}/youtube/v3/channels?part=snippet&mine=true`, {
      method: 'GET',
      trusted: true,
      headers: { Authorization: `Bearer ${credentials.accessToken}`, Accept: 'application/json' },
      timeoutSeconds: TIMEOUT_SECONDS,
      maxResponseBytes: MAX_ANSWER_BYTES,
    });
    const text = response.body.toString('utf8');
    // A Google account without a YouTube channel: YouTube answers 401 youtubeSignupRequired, or no channel.
    const noChannel = new AccountWithoutChannelError(
      `this Google account has no YouTube channel; create one at ${CREATE_CHANNEL_URL} with that account, ` +
        'then connect again',
    );
    if (signupRequired(response.status, text)) throw noChannel;
    if (response.status === 401) throw new ConnectionRefusedError('Google refused the access token');
    if (response.status !== 200) throw new Error(`YouTube answered ${response.status} to channels.list`);
    const body = JSON.parse(text) as {
      items?: {
        id: string;
        snippet?: { title?: string; customUrl?: string; thumbnails?: { default?: { url?: string } } };
      }[];
    };
    const channel = body.items?.[0];
    if (!channel) throw noChannel;
    return {
      externalId: channel.id,
      name: channel.snippet?.title ?? channel.id,
      username: channel.snippet?.customUrl ?? null,
      picture: channel.snippet?.thumbnails?.default?.url ?? null,
    };
  }

  async revoke(credentials: AccountCredentials): Promise<void> {
    const response = await this.outbound.call(`${this.settings.oauthUrl}/revoke`, {
      method: 'POST',
      trusted: true,
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
      body: new URLSearchParams({ token: credentials.refreshToken ?? credentials.accessToken }).toString(),
      timeoutSeconds: TIMEOUT_SECONDS,
      maxResponseBytes: MAX_ANSWER_BYTES,
    });
    if (response.status === 200) return;
    // Google answers 400 invalid_token for a token it no longer knows.
    if (response.status === 400) throw new ConnectionRefusedError('Google no longer knows the token');
    throw new Error(`Google's revocation endpoint answered ${response.status}`);
  }

  private async token(form: Record<string, string>): Promise<TokenAnswer> {
    const body = new URLSearchParams({
      ...form,
      client_id: this.settings.clientId,
      client_secret: this.settings.clientSecret,
    }).toString();
    const response = await this.outbound.call(`${this.settings.oauthUrl}/token`, {
      method: 'POST',
      trusted: true,
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
      body,
      timeoutSeconds: TIMEOUT_SECONDS,
      maxResponseBytes: MAX_ANSWER_BYTES,
    });
    let answer: TokenAnswer = {};
    try {
      answer = JSON.parse(response.body.toString('utf8')) as TokenAnswer;
    } catch {
      // Not JSON: the status says it.
    }
    if (response.status === 200 && answer.access_token) return answer;
    // invalid_grant: the code was used or expired, or the refresh token was revoked or expired.
    if (answer.error === 'invalid_grant')
      throw new ConnectionRefusedError(`Google refused the grant (${answer.error_description ?? 'invalid_grant'})`);
    throw new Error(`Google's token endpoint answered ${response.status}${answer.error ? ` ${answer.error}` : ''}`);
  }

  private credentialsFrom(answer: TokenAnswer, previousRefreshToken: string | null): AccountCredentials {
    return {
      accessToken: answer.access_token!,
      refreshToken: answer.refresh_token ?? previousRefreshToken,
      expiresAt: answer.expires_in
        ? new Date(this.clock.now().getTime() + answer.expires_in * 1000).toISOString()
        : null,
      scopes: answer.scope ? answer.scope.split(' ') : [],
    };
  }
}

/**
 * Whether an answer of YouTube is the 401 saying that the Google account has no YouTube channel
 * (reason `youtubeSignupRequired`), which no fresh token changes, rather than a refused token.
 */
export function signupRequired(status: number, body: string): boolean {
  if (status !== 401) return false;
  try {
    const error = (JSON.parse(body) as { error?: { errors?: { reason?: string }[] } }).error;
    return error?.errors?.some((e) => e.reason === 'youtubeSignupRequired') ?? false;
  } catch {
    return false;
  }
}
