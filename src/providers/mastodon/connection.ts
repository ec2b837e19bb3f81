import {
  ConnectionRefusedError,
  type AccountCredentials,
  type AccountIdentity,
  type ConsentConnection,
  type SiteChoice,
} from '../connection-contract.js';
import { MastodonError, MastodonUnreachableError, type MastodonApi } from './api.js';
import { MASTODON_SCOPES, type MastodonInstances } from './instance.js';

/** A Mastodon account's credentials: on its instance (`site`), issued to the app `clientId` of that instance. */
export interface MastodonCredentials extends AccountCredentials {
  site: string;
  clientId: string;
}

/** The credentials of a Mastodon channel, as stored; `undefined` for what lacks the instance. */
export function mastodonCredentials(credentials: AccountCredentials): MastodonCredentials | undefined {
  const { site, clientId } = credentials as Partial<MastodonCredentials>;
  return typeof site === 'string' && typeof clientId === 'string' ? { ...credentials, site, clientId } : undefined;
}

interface TokenAnswer {
  access_token?: string;
  scope?: string;
}

interface Account {
  id?: string;
  username?: string;
  display_name?: string;
  avatar?: string;
}

/**
 * Connecting a Mastodon account (docs.joinmastodon.org, OAuth): the user names their instance, where
 * this installation registers an app the first time (`MastodonInstances`); the consent page is the
 * instance's `/oauth/authorize`, with PKCE (S256) where the instance supports it (4.3 and later), and
 * the code is traded at its `/oauth/token`. Mastodon issues no refresh tokens and its access tokens
 * do not expire: a token the instance refuses was revoked, and the account must be connected again.
 */
export class MastodonConnection implements ConsentConnection {
  readonly kind = 'consent';
  readonly site: SiteChoice;

  constructor(
    private readonly api: MastodonApi,
    private readonly instances: MastodonInstances,
  ) {
    this.site = {
      label: 'Your Mastodon instance',
      example: 'mastodon.social',
      prepare: (input, redirectUri) => instances.prepare(input, redirectUri),
    };
  }

  async authorizeUrl(input: {
    state: string;
    redirectUri: string;
    codeChallenge: string;
    site?: string;
  }): Promise<string> {
    const site = siteOf(input);
    const [app, info] = await Promise.all([this.instances.app(site, input.redirectUri), this.instances.info(site)]);
    const query = new URLSearchParams({
      client_id: app.clientId,
      redirect_uri: input.redirectUri,
      response_type: 'code',
      scope: MASTODON_SCOPES.join(' '),
      state: input.state,
      ...(info.pkce ? { code_challenge: input.codeChallenge, code_challenge_method: 'S256' } : {}),
    });
    return `${site}/oauth/authorize?${query.toString()}`;
  }

  async exchangeCode(input: {
    code: string;
    redirectUri: string;
    codeVerifier: string;
    site?: string;
  }): Promise<MastodonCredentials> {
    const site = siteOf(input);
    const [app, info] = await Promise.all([this.instances.app(site, input.redirectUri), this.instances.info(site)]);
    const answer = await this.api.send(site, '/oauth/token', {
      method: 'POST',
      form: {
        grant_type: 'authorization_code',
        code: input.code,
        redirect_uri: input.redirectUri,
        client_id: app.clientId,
        client_secret: app.clientSecret,
        scope: MASTODON_SCOPES.join(' '),
        // An instance that took no challenge refuses a verifier (Doorkeeper): sent where PKCE was.
        ...(info.pkce ? { code_verifier: input.codeVerifier } : {}),
      },
    });
    const body = parse(answer.body) as TokenAnswer & { error?: string; error_description?: string };
    if (answer.status === 200 && body.access_token) {
      return {
        accessToken: body.access_token,
        refreshToken: null,
        expiresAt: null,
        scopes: (body.scope ?? MASTODON_SCOPES.join(' ')).split(/\s+/).filter(Boolean),
        site,
        clientId: app.clientId,
      };
    }
    if (body.error === 'invalid_client') {
      // The instance no longer knows the app (its admin removed it): the next connection registers another.
      await this.instances.forgetApp(site, app.clientId);
      throw new ConnectionRefusedError('the instance no longer knows this server’s app; connect again');
    }
    if (body.error === 'invalid_grant' || body.error === 'access_denied' || body.error === 'invalid_request')
      throw new ConnectionRefusedError(`the instance refused the grant (${body.error_description || body.error})`);
    throw new Error(`the instance's token endpoint answered ${answer.status}${body.error ? ` ${body.error}` : ''}`);
  }

  /** Mastodon has no refresh tokens: a refused access token was revoked, and nothing renews it. */
  refresh(): Promise<AccountCredentials> {
    return Promise.reject(
      new ConnectionRefusedError('Mastodon issues no refresh tokens; the account must be connected again'),
    );
  }

  async identity(credentials: AccountCredentials): Promise<AccountIdentity> {
    const mastodon = required(credentials);
    try {
      const { data } = await this.api.call<Account>(mastodon.site, '/api/v1/accounts/verify_credentials', {
        method: 'GET',
        accessToken: mastodon.accessToken,
      });
      if (!data.id || !data.username) throw new Error('the instance answered no account');
      const host = new URL(mastodon.site).host;
      return {
        // An account's id is the instance's own: the instance makes it unique among the networks' accounts.
        externalId: `${data.id}@${host}`,
        name: data.display_name || data.username,
        username: `@${data.username}@${host}`,
        picture: data.avatar || null,
      };
    } catch (error) {
      if (error instanceof MastodonError && (error.status === 401 || error.status === 403))
        throw new ConnectionRefusedError(`the instance refused the account's token (${error.message})`);
      throw error;
    }
  }

  async revoke(credentials: AccountCredentials): Promise<void> {
    const mastodon = required(credentials);
    const app = await this.instances.appByClientId(mastodon.site, mastodon.clientId);
    if (!app) throw new ConnectionRefusedError('the app the token was issued to is no longer known here');
    let answer;
    try {
      answer = await this.api.send(mastodon.site, '/oauth/revoke', {
        method: 'POST',
        form: { client_id: app.clientId, client_secret: app.clientSecret, token: mastodon.accessToken },
      });
    } catch (error) {
      // An instance this server may no longer reach (the address policy refuses it now) never will be.
      if (error instanceof MastodonUnreachableError && !error.sent) throw new ConnectionRefusedError(error.message);
      throw error;
    }
    if (answer.status === 200) return;
    if (answer.status === 429 || answer.status >= 500)
      throw new Error(`the instance's revocation endpoint answered ${answer.status}`);
    // 401 invalid_client (the app was removed there) or 403: nothing this app can revoke is left.
    throw new ConnectionRefusedError(`the instance refused the revocation (${answer.status})`);
  }
}

function siteOf(input: { site?: string }): string {
  if (!input.site) throw new ConnectionRefusedError('no Mastodon instance was named');
  return input.site;
}

function required(credentials: AccountCredentials): MastodonCredentials {
  const mastodon = mastodonCredentials(credentials);
  if (!mastodon) throw new ConnectionRefusedError('the account’s credentials name no instance');
  return mastodon;
}

function parse(body: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(body);
    return value && typeof value === 'object' ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
