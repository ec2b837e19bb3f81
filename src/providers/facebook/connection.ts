import type { Clock } from '../../core/clock.js';
import type { Provider } from '../../core/contract.js';
import type { MetaConfig } from '../../core/config/meta.js';
import {
  AccountWithoutChannelError,
  ConnectionRefusedError,
  type AccountCredentials,
  type AccountIdentity,
  type ConsentConnection,
  type GrantedAccount,
} from '../connection-contract.js';
import { graphErrorOf, type GraphAnswer, type GraphApi } from '../meta/graph.js';
import type { StoredFacebookCredentials } from './credentials.js';

/**
 * What the dialog asks for when the operator made no Facebook Login for Business configuration
 * (META_LOGIN_CONFIG_ID): the user's Pages and their tokens, publishing to them and their first
 * comments, the Instagram professional accounts linked to them and publishing there with their first
 * comments, and the Pages a business portfolio holds (without which those Pages are not listed).
 */
export const FACEBOOK_SCOPES = [
  'pages_show_list',
  'pages_read_engagement',
  'pages_manage_posts',
  'pages_manage_engagement',
  'instagram_basic',
  'instagram_content_publish',
  'instagram_manage_comments',
  'business_management',
];

/** What a Page's token needs its user to be able to do there to publish (Pages API: CREATE_CONTENT). */
const PAGE_PUBLISHING_TASK = 'CREATE_CONTENT';
/** The Page tasks with which a user may publish for the Instagram account linked to it (Instagram Platform). */
const INSTAGRAM_PUBLISHING_TASKS = ['MANAGE', 'CREATE_CONTENT', 'MODERATE', 'ADVERTISE'];

/** The credentials of a Facebook or Instagram channel connected through Facebook Login for Business. */
export interface MetaPageCredentials extends StoredFacebookCredentials {
  /**
   * A Page's: the long-lived user token its Page token was derived from (the Resumable Upload API asks
   * a user's token), and the Facebook user whose it is.
   */
  facebook?: { userAccessToken: string; userId?: string };
  /** An Instagram account's: published to through the Page it is linked to, with that Page's token. */
  instagram?: { api: 'facebook'; pageId: string };
}

/**
 * The network through which a channel's account was connected, and is connected again and revoked: its
 * own, but Facebook for an Instagram account connected through the Facebook Page it is linked to (its
 * token is that Page's).
 */
export function connectedThrough(provider: Provider, credentials: AccountCredentials | undefined): Provider {
  const meta: MetaPageCredentials | undefined = credentials;
  return provider === 'instagram' && meta?.instagram?.api === 'facebook' ? 'facebook' : provider;
}

interface PageEntry {
  id?: string;
  name?: string;
  username?: string;
  tasks?: string[];
  access_token?: string;
  picture?: { data?: { url?: string } };
  instagram_business_account?: { id?: string };
}

interface TokenDebug {
  user_id?: string;
  scopes?: string[];
  expires_at?: number;
  data_access_expires_at?: number;
  is_valid?: boolean;
}

/** How many pages of `/me/accounts` are read (25 Pages each by default): more than any user chooses among. */
const MAX_ACCOUNT_PAGES = 20;

/**
 * Connecting Facebook Pages and the Instagram professional accounts linked to them (Facebook Login for
 * Business, "Manually Build a Login Flow"): the login dialog with the operator's configuration (or the
 * permissions asked for by name), the code traded for a short-lived user token and that one for a
 * long-lived one (`fb_exchange_token`), then the user's Pages with their Page tokens (`/me/accounts`)
 * and each Page's `instagram_business_account`. One consent reaches several accounts, among which the
 * user chooses (`grantedAccounts`); each chosen one is a channel whose token is its Page's.
 *
 * A Page token derived from a long-lived user token does not expire (the channel's `expiresAt` is null,
 * so nothing tries to refresh it); the user's data access does (`data_access_expires_at`, 90 days unless
 * the user comes back), and so does the user token a Page keeps for its videos (about 60 days): the
 * channel keeps the first of these as the end of its access (`GrantedAccount.accessEndsAt`), of which
 * the user is warned. There is no refresh: a channel whose access ended is connected again.
 */
export class FacebookConnection implements ConsentConnection {
  readonly kind = 'consent';
  readonly consentOrigin: string;

  constructor(
    private readonly config: MetaConfig,
    private readonly graph: GraphApi,
    private readonly clock: Clock,
  ) {
    this.consentOrigin = new URL(config.dialogUrl).origin;
  }

  /** The dialog; it has no PKCE (the code is traded with the app's secret). */
  authorizeUrl(input: { state: string; redirectUri: string }): string {
    const query = new URLSearchParams({
      client_id: this.config.appId,
      redirect_uri: input.redirectUri,
      state: input.state,
      response_type: 'code',
    });
    // A configuration names its permissions (and its token type) in the App Dashboard.
    if (this.config.loginConfigId) query.set('config_id', this.config.loginConfigId);
    else query.set('scope', FACEBOOK_SCOPES.join(','));
    return `${this.config.dialogUrl}/${this.config.graphVersion}/dialog/oauth?${query.toString()}`;
  }

  /** The long-lived user token of the consent (about 60 days). */
  async exchangeCode(input: { code: string; redirectUri: string }): Promise<AccountCredentials> {
    const { appId, appSecret } = this.config;
    const short = await this.token({
      client_id: appId,
      client_secret: appSecret,
      redirect_uri: input.redirectUri,
      code: input.code,
    });
    const long = await this.token({
      grant_type: 'fb_exchange_token',
      client_id: appId,
      client_secret: appSecret,
      fb_exchange_token: short.access_token,
    });
    // What was granted, and until when, `grantedAccounts` asks Meta (`/debug_token`).
    return {
      accessToken: long.access_token,
      refreshToken: null,
      expiresAt: long.expires_in ? new Date(this.clock.now().getTime() + long.expires_in * 1000).toISOString() : null,
      scopes: [],
    };
  }

  /**
   * The Pages the user gave the app and the Instagram accounts linked to them. A Page the user may not
   * publish to (without the CREATE_CONTENT task), or whose publishing permission was declined, is
   * listed with the reason it cannot be chosen.
   */
  async grantedAccounts(user: AccountCredentials): Promise<GrantedAccount[]> {
    const debug = await this.debug(user.accessToken);
    const scopes = debug.scopes ?? user.scopes;
    const userId = debug.user_id;
    // The Page tokens do not expire (no refresh is tried on them); the user's data access does, and a
    // Page's videos go up with the user token, which expires too: the user is warned before the first.
    const dataAccessEnds = instant(debug.data_access_expires_at);
    const userTokenEnds = instant(debug.expires_at) ?? user.expiresAt;
    const pageAccessEnds = [dataAccessEnds, userTokenEnds].filter((end) => end !== null).sort()[0];
    const pages = await this.pages(user.accessToken);
    const accounts: GrantedAccount[] = [];
    for (const page of pages) {
      if (!page.id || !page.access_token) continue;
      const tasks = page.tasks ?? [];
      const base: MetaPageCredentials = { accessToken: page.access_token, refreshToken: null, expiresAt: null, scopes };
      const pageCredentials: MetaPageCredentials = {
        ...base,
        facebook: { userAccessToken: user.accessToken, ...(userId ? { userId } : {}) },
      };
      accounts.push({
        provider: 'facebook',
        identity: {
          externalId: page.id,
          name: page.name || page.id,
          username: page.username ?? null,
          picture: page.picture?.data?.url ?? null,
        },
        credentials: pageCredentials,
        ...(pageAccessEnds ? { accessEndsAt: pageAccessEnds } : {}),
        ...unavailability(
          !scopes.includes('pages_manage_posts')
            ? 'publishing to Pages (pages_manage_posts) was not allowed'
            : !tasks.includes(PAGE_PUBLISHING_TASK)
              ? 'your role on this Page does not let you create content on it'
              : undefined,
        ),
      });
      const instagramId = page.instagram_business_account?.id;
      if (!instagramId) continue;
      // Without instagram_basic the account cannot even be read: it is shown by its id, not offered.
      const readable = scopes.includes('instagram_basic');
      const identity = readable
        ? await this.instagramIdentity(instagramId, page.access_token)
        : {
            externalId: instagramId,
            name: `Instagram account of ${page.name || page.id}`,
            username: null,
            picture: null,
          };
      const credentials: MetaPageCredentials = { ...base, instagram: { api: 'facebook', pageId: page.id } };
      accounts.push({
        provider: 'instagram',
        identity,
        credentials,
        ...(dataAccessEnds ? { accessEndsAt: dataAccessEnds } : {}),
        ...unavailability(
          !readable
            ? 'reading Instagram accounts (instagram_basic) was not allowed'
            : !scopes.includes('instagram_content_publish')
              ? 'publishing to Instagram (instagram_content_publish) was not allowed'
              : !tasks.some((task) => INSTAGRAM_PUBLISHING_TASKS.includes(task))
                ? `your role on its Page, ${page.name || page.id}, does not let you publish for it`
                : undefined,
        ),
      });
    }
    if (accounts.length === 0)
      throw new AccountWithoutChannelError(
        'the Facebook account you logged in with gave this app no Page, so nothing was connected; connect ' +
          'again and choose your Pages in the dialog (a business portfolio’s Pages need business_management)',
      );
    return accounts;
  }

  /** A Page token has no refresh: access that ended is given again by connecting the Page again. */
  refresh(): Promise<AccountCredentials> {
    return Promise.reject(new ConnectionRefusedError('Facebook has no refresh for a Page token; connect it again'));
  }

  /** The Page of a Page token, or the Instagram account linked to it. */
  async identity(credentials: AccountCredentials): Promise<AccountIdentity> {
    const { instagram } = credentials as MetaPageCredentials;
    if (instagram) {
      const answer = await this.graph.call<PageEntry>(instagram.pageId, {
        method: 'GET',
        accessToken: credentials.accessToken,
        params: { fields: 'instagram_business_account' },
      });
      const id = this.data(answer, 'the Page').instagram_business_account?.id;
      if (!id) throw new AccountWithoutChannelError('the Page has no Instagram professional account linked any more');
      return this.instagramIdentity(id, credentials.accessToken);
    }
    const answer = await this.graph.call<PageEntry>('me', {
      method: 'GET',
      accessToken: credentials.accessToken,
      params: { fields: 'id,name,username,picture' },
    });
    const page = this.data(answer, 'the Page');
    if (!page.id) throw new Error('Facebook answered a Page without its id');
    return {
      externalId: page.id,
      name: page.name || page.id,
      username: page.username ?? null,
      picture: page.picture?.data?.url ?? null,
    };
  }

  /**
   * Meta has no revocation of one Page token: a Page token lives as long as the grant of the user it
   * came from, which `DELETE /{user-id}/permissions` ends as a whole, with the tokens of every other Page
   * and Instagram account the same user connected (in any organization of this installation). Removing
   * one channel therefore ends nothing at Meta: this server forgets the token, and the user removes the
   * app under Business Integrations in their Facebook settings to end its access everywhere.
   */
  revoke(): Promise<void> {
    return Promise.resolve();
  }

  private async instagramIdentity(id: string, pageToken: string): Promise<AccountIdentity> {
    const answer = await this.graph.call<{
      id?: string;
      username?: string;
      name?: string;
      profile_picture_url?: string;
    }>(id, { method: 'GET', accessToken: pageToken, params: { fields: 'id,username,name,profile_picture_url' } });
    const account = this.data(answer, 'the Instagram account');
    return {
      externalId: account.id ?? id,
      name: account.name || account.username || id,
      username: account.username ?? null,
      picture: account.profile_picture_url ?? null,
    };
  }

  private async pages(userToken: string): Promise<PageEntry[]> {
    const pages: PageEntry[] = [];
    let next: string | undefined = 'me/accounts';
    for (let read = 0; next && read < MAX_ACCOUNT_PAGES; read += 1) {
      const answer: GraphAnswer<{ data?: PageEntry[]; paging?: { next?: string } }> = await this.graph.call(next, {
        method: 'GET',
        accessToken: userToken,
        ...(read === 0
          ? { params: { fields: 'id,name,username,tasks,access_token,picture,instagram_business_account' } }
          : {}),
      });
      const body = this.data(answer, 'the Pages');
      pages.push(...(body.data ?? []));
      next = body.paging?.next;
    }
    return pages;
  }

  /** What Meta says of a user token (`/debug_token`, asked with the app's token). */
  private async debug(token: string): Promise<TokenDebug> {
    const answer = await this.graph.call<{ data?: TokenDebug }>('debug_token', {
      method: 'GET',
      accessToken: `${this.config.appId}|${this.config.appSecret}`,
      params: { input_token: token },
    });
    const data = this.data(answer, 'the token').data ?? {};
    if (data.is_valid === false) throw new ConnectionRefusedError('Facebook no longer takes the token it gave');
    return data;
  }

  private async token(params: Record<string, string>): Promise<{ access_token: string; expires_in?: number }> {
    const answer = await this.graph.call<{ access_token?: string; expires_in?: number }>('oauth/access_token', {
      method: 'GET',
      params,
    });
    const body = this.data(answer, 'the code');
    if (!body.access_token) throw new Error('Facebook answered no access token');
    return { access_token: body.access_token, ...(body.expires_in ? { expires_in: body.expires_in } : {}) };
  }

  /**
   * The body of a success; a refusal of the code or of a token (OAuthException, 100 or 190, or a
   * permission error) as `ConnectionRefusedError`, anything else as an error to try again later.
   */
  private data<T>(answer: GraphAnswer<T>, what: string): T {
    const error = graphErrorOf(answer);
    if (!error) return answer.data;
    const refusal =
      error.type === 'OAuthException' ||
      error.code === 100 ||
      error.code === 190 ||
      error.code === 10 ||
      (error.code !== undefined && error.code >= 200 && error.code <= 299);
    const trace = error.fbtraceId ? ` (fbtrace_id ${error.fbtraceId})` : '';
    if (answer.status < 500 && refusal)
      throw new ConnectionRefusedError(`Facebook refused ${what}: ${error.message}`, error.fbtraceId);
    throw new Error(`Facebook answered ${answer.status} about ${what}: ${error.message}${trace}`);
  }
}

/** An instant Meta gives in seconds since the epoch (0: none), as ISO 8601. */
function instant(seconds: number | undefined): string | null {
  return seconds ? new Date(seconds * 1000).toISOString() : null;
}

const unavailability = (reason: string | undefined) => (reason ? { unavailable: reason } : {});
