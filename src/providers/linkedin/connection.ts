import type { Clock } from '../../core/clock.js';
import type { LinkedInConfig } from '../../core/config.js';
import {
  ConnectionRefusedError,
  type AccountCredentials,
  type AccountIdentity,
  type ConsentConnection,
  type GrantedAccount,
} from '../connection-contract.js';
import type { NetworkAnswer } from '../network-call.js';
import { jsonOf, linkedinLogId, linkedinMessage, type LinkedInApi } from './api.js';

/**
 * What every consent asks for: the member's identity (Sign In with LinkedIn using OpenID Connect) and
 * posting, commenting and uploading as the member (Share on LinkedIn).
 */
export const LINKEDIN_MEMBER_SCOPES = ['openid', 'profile', 'w_member_social'];
/**
 * What the consent asks for besides when the operator's app has the Community Management API: the
 * pages the member administers, posting and commenting as them, and reading their posts (to find one
 * whose answer was lost).
 */
export const LINKEDIN_ORGANIZATION_SCOPES = ['r_organization_admin', 'w_organization_social', 'r_organization_social'];

/** How a LinkedIn channel keeps its tokens (encrypted like every network's, `account-credentials.ts`). */
export interface StoredLinkedInCredentials extends AccountCredentials {
  linkedin?: {
    /**
     * When the refresh token ends, where LinkedIn gave one: its life is fixed at the first consent and
     * a refresh does not lengthen it, so the member consents again by then.
     */
    refreshTokenExpiresAt?: string;
  };
}

interface TokenAnswer {
  access_token?: string;
  expires_in?: number;
  refresh_token?: string;
  refresh_token_expires_in?: number;
  scope?: string;
  error?: string;
  error_description?: string;
}

interface UserInfo {
  sub?: string;
  name?: string;
  given_name?: string;
  family_name?: string;
  picture?: string;
}

interface OrganizationAcl {
  organization?: string;
  role?: string;
  state?: string;
}

interface Organization {
  id?: number;
  localizedName?: string;
  vanityName?: string;
}

/** The pages of ACLs read at most (LinkedIn's pages of 100): more pages than any member administers. */
const MAX_ACL_PAGES = 5;
const ORGANIZATION_URN = /^urn:li:organization:(\d+)$/;

/**
 * Connecting LinkedIn members and the company pages they administer (OAuth 2.0, 3-legged, Microsoft's
 * "Authorization Code Flow" for LinkedIn): the consent page at /oauth/v2/authorization, the code traded
 * at /oauth/v2/accessToken with the app's secret (LinkedIn takes no PKCE from a web app), the member
 * from OpenID's `/v2/userinfo`, and, with the Community Management API, the pages where the member's
 * role is ADMINISTRATOR (`organizationAcls`). One consent reaches the member and those pages, among
 * which the user chooses (`grantedAccounts`): each is a channel, with the member's token (a page's
 * posts are the member's acts for it).
 *
 * An access token lasts 60 days. LinkedIn gives refresh tokens only to some apps: with one, the token is
 * refreshed, and access ends with the refresh token (a year from the consent); without one, access ends
 * with the access token. Either way the channel keeps that end (`accessEndsAt`), of which the user is
 * warned a week before, and a token LinkedIn refuses then makes the channel need connecting again.
 */
export class LinkedInConnection implements ConsentConnection {
  readonly kind = 'consent';
  readonly consentOrigin: string;
  /**
   * Housekeeping looks at a channel's token as it ends, used or not (`refreshTokensAhead`): refreshed
   * where LinkedIn gave a refresh token, so an idle channel stays connected; otherwise the channel is
   * marked as needing to be connected again when its access ends, not only at its next post.
   */
  readonly refreshBeforeExpiryMs = 60_000;

  constructor(
    private readonly config: LinkedInConfig,
    private readonly api: LinkedInApi,
    private readonly clock: Clock,
  ) {
    this.consentOrigin = config.authUrl;
  }

  get scopes(): string[] {
    return this.config.communityManagement
      ? [...LINKEDIN_MEMBER_SCOPES, ...LINKEDIN_ORGANIZATION_SCOPES]
      : LINKEDIN_MEMBER_SCOPES;
  }

  authorizeUrl(input: { state: string; redirectUri: string }): string {
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: this.config.clientId,
      redirect_uri: input.redirectUri,
      state: input.state,
      scope: this.scopes.join(' '),
    });
    return `${this.config.authUrl}/oauth/v2/authorization?${query.toString()}`;
  }

  async exchangeCode(input: { code: string; redirectUri: string }): Promise<AccountCredentials> {
    const answer = await this.token({
      grant_type: 'authorization_code',
      code: input.code,
      redirect_uri: input.redirectUri,
    });
    return this.credentialsFrom(answer, undefined);
  }

  /**
   * The member and the pages they administer. A page is offered only when the consent allowed posting
   * as pages (w_organization_social); the member only when it allowed posting as the member.
   */
  async grantedAccounts(credentials: AccountCredentials): Promise<GrantedAccount[]> {
    const scopes = credentials.scopes;
    const accessEndsAt = accessEndOf(credentials);
    const ends = accessEndsAt ? { accessEndsAt } : {};
    const accounts: GrantedAccount[] = [
      {
        provider: 'linkedin',
        identity: await this.member(credentials.accessToken),
        credentials,
        ...ends,
        ...unavailability(
          scopes.includes('w_member_social') ? undefined : 'posting as you (w_member_social) was not allowed',
        ),
      },
    ];
    if (!this.config.communityManagement || !scopes.includes('r_organization_admin')) return accounts;
    for (const organization of await this.administered(credentials.accessToken))
      accounts.push({
        provider: 'linkedin',
        identity: organization,
        credentials,
        ...ends,
        ...unavailability(
          scopes.includes('w_organization_social')
            ? undefined
            : 'posting as your pages (w_organization_social) was not allowed',
        ),
      });
    return accounts;
  }

  async refresh(credentials: AccountCredentials): Promise<AccountCredentials> {
    if (!credentials.refreshToken)
      throw new ConnectionRefusedError(
        'LinkedIn gives this app no refresh token, and the access token has ended: connect the account again',
      );
    const answer = await this.token({ grant_type: 'refresh_token', refresh_token: credentials.refreshToken });
    return this.credentialsFrom(answer, credentials);
  }

  /** The member whose token it is (a page's identity comes with the choice, `grantedAccounts`). */
  identity(credentials: AccountCredentials): Promise<AccountIdentity> {
    return this.member(credentials.accessToken);
  }

  /**
   * Nothing is revoked at LinkedIn: the member's token is the token of every page they connected with the
   * same consent, and LinkedIn's revocation ends the token as a whole. The member removes the app under
   * Settings → Data privacy → Permitted services at LinkedIn to end its access everywhere.
   */
  revoke(): Promise<void> {
    return Promise.resolve();
  }

  private async member(accessToken: string): Promise<AccountIdentity> {
    const answer = await this.api.send('/v2/userinfo', { method: 'GET', authorization: `Bearer ${accessToken}` });
    const user = this.body<UserInfo>(answer, 'the member');
    if (!user.sub) throw new Error('LinkedIn answered userinfo without the member (sub)');
    const name = user.name || [user.given_name, user.family_name].filter(Boolean).join(' ') || user.sub;
    return { externalId: `urn:li:person:${user.sub}`, name, username: null, picture: user.picture ?? null };
  }

  private async administered(accessToken: string): Promise<AccountIdentity[]> {
    const ids: string[] = [];
    for (let page = 0, start = 0; page < MAX_ACL_PAGES; page += 1) {
      const query = new URLSearchParams({
        q: 'roleAssignee',
        role: 'ADMINISTRATOR',
        state: 'APPROVED',
        start: String(start),
        count: '100',
      });
      const answer = await this.api.send(`/rest/organizationAcls?${query.toString()}`, {
        method: 'GET',
        authorization: `Bearer ${accessToken}`,
      });
      const body = this.body<{ elements?: OrganizationAcl[]; paging?: { total?: number } }>(answer, 'your pages');
      const elements = body.elements ?? [];
      for (const acl of elements) {
        const id = ORGANIZATION_URN.exec(acl.organization ?? '')?.[1];
        if (id && acl.role === 'ADMINISTRATOR' && acl.state === 'APPROVED' && !ids.includes(id)) ids.push(id);
      }
      start += elements.length;
      if (elements.length === 0 || start >= (body.paging?.total ?? 0)) break;
    }
    const organizations: AccountIdentity[] = [];
    for (const id of ids) {
      const answer = await this.api.send(`/rest/organizations/${id}`, {
        method: 'GET',
        authorization: `Bearer ${accessToken}`,
      });
      const organization = this.body<Organization>(answer, 'a page');
      organizations.push({
        externalId: `urn:li:organization:${id}`,
        name: organization.localizedName || organization.vanityName || `Page ${id}`,
        username: organization.vanityName ?? null,
        picture: null,
      });
    }
    return organizations;
  }

  private async token(form: Record<string, string>): Promise<TokenAnswer> {
    const answer = await this.api.oauth('/oauth/v2/accessToken', {
      ...form,
      client_id: this.config.clientId,
      client_secret: this.config.clientSecret,
    });
    const body = jsonOf<TokenAnswer>(answer) ?? {};
    if (answer.status === 200 && body.access_token) return body;
    // invalid_request or invalid_grant: a code or refresh token LinkedIn no longer takes (used, expired, revoked).
    if (answer.status === 400 || answer.status === 401)
      throw new ConnectionRefusedError(
        `LinkedIn refused the grant (${body.error_description || body.error || answer.status})`,
      );
    throw new Error(`LinkedIn's token endpoint answered ${answer.status}${body.error ? ` ${body.error}` : ''}`);
  }

  private credentialsFrom(
    answer: TokenAnswer,
    previous: StoredLinkedInCredentials | undefined,
  ): StoredLinkedInCredentials {
    const now = this.clock.now().getTime();
    const refreshToken = answer.refresh_token ?? previous?.refreshToken ?? null;
    const refreshTokenExpiresAt = answer.refresh_token_expires_in
      ? new Date(now + answer.refresh_token_expires_in * 1000).toISOString()
      : previous?.linkedin?.refreshTokenExpiresAt;
    return {
      accessToken: answer.access_token!,
      refreshToken,
      expiresAt: answer.expires_in ? new Date(now + answer.expires_in * 1000).toISOString() : null,
      // LinkedIn lists the scopes granted with commas.
      scopes: answer.scope ? answer.scope.split(/[\s,]+/).filter(Boolean) : (previous?.scopes ?? []),
      ...(refreshToken && refreshTokenExpiresAt ? { linkedin: { refreshTokenExpiresAt } } : {}),
    };
  }

  /**
   * The body of a success; a refused token as `ConnectionRefusedError`, anything else as an error to try
   * again later.
   */
  private body<T>(answer: NetworkAnswer, what: string): T {
    if (answer.status === 200) return jsonOf<T>(answer) ?? ({} as T);
    const message = linkedinMessage(answer);
    if (answer.status === 426)
      throw new Error(
        `LinkedIn no longer serves the API version this server sends (${this.config.version}): ${message}; ` +
          'the operator sets LINKEDIN_VERSION to a version LinkedIn supports',
      );
    if (answer.status === 401 || answer.status === 403)
      throw new ConnectionRefusedError(`LinkedIn refused to show ${what}: ${message}`, linkedinLogId(answer));
    throw new Error(`LinkedIn answered ${answer.status} about ${what}: ${message}`);
  }
}

/**
 * When access ends unless the member consents again: the refresh token's end where LinkedIn gave one,
 * else the access token's.
 */
export function accessEndOf(credentials: StoredLinkedInCredentials): string | null {
  if (credentials.refreshToken) return credentials.linkedin?.refreshTokenExpiresAt ?? null;
  return credentials.expiresAt;
}

const unavailability = (reason: string | undefined) => (reason ? { unavailable: reason } : {});
