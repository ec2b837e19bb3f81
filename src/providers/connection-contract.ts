import type { Provider } from '../core/contract.js';

/** The tokens of a connected account, as the network issued them; stored encrypted, never shown. */
export interface AccountCredentials {
  accessToken: string;
  /** Absent when the network gave none (then the account is connected again when the access token expires). */
  refreshToken: string | null;
  /** When the access token expires (ISO 8601), if the network said. */
  expiresAt: string | null;
  scopes: string[];
  /**
   * The server the account lives on, for a network whose accounts live on servers of their own (a
   * Mastodon instance's origin, `https://mastodon.social`): every later call goes there.
   */
  site?: string;
}

/** Who the connected account is on its network. */
export interface AccountIdentity {
  /** The account's stable id on the network: connecting it again updates its channel. */
  externalId: string;
  name: string;
  username: string | null;
  picture: string | null;
}

/** The network refused a code or a refresh token: the user must connect the account again. */
export class ConnectionRefusedError extends Error {
  constructor(
    message: string,
    /** The network's own id of the refusing answer (TikTok's `log_id`), which its support asks for. */
    readonly logId?: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * The account signed in and allowed access, but has no channel on the network to publish to (a
 * Google account without a YouTube channel): nothing is connected until the user creates one there.
 */
export class AccountWithoutChannelError extends ConnectionRefusedError {}

/** The site a user named cannot be used (not a server of the network, unreachable, an address refused). */
export class SiteRefusedError extends Error {
  override name = 'SiteRefusedError';
}

/**
 * A network whose accounts live on servers of their own (Mastodon's instances): the user names theirs
 * before the consent page, which is on that server. The site goes with the connection to
 * `authorizeUrl` and `exchangeCode`, and is kept in the account's credentials (`site`).
 */
export interface SiteChoice {
  /** What the user names, as a form's label says it ("Your Mastodon instance"). */
  readonly label: string;
  /** An example of it, as the form's field shows it (`mastodon.social`). */
  readonly example: string;
  /**
   * The site as the user wrote it, checked and written the one way the connection keeps it (an
   * origin), with whatever the network needs there made ready (this installation's app registered).
   * `SiteRefusedError`, in words for the user, when it cannot be used.
   */
  prepare(input: string, redirectUri: string): Promise<string>;
}

/**
 * How an account of one network is connected: through the network's consent page (`ConsentConnection`),
 * or by signing in on a page of this server with a password the account's owner made for it
 * (`SignInConnection`).
 */
export type ConnectionAdapter = ConsentConnection | SignInConnection;

/**
 * A network whose accounts are connected through its consent page: the network's authorization-code
 * flow for this installation's app (PKCE where the network supports it), the code exchange, the
 * refresh of an access token, and the account's identity.
 */
export interface ConsentConnection {
  readonly kind: 'consent';
  /**
   * The origin of the network's consent page: the pages that send the user there allow it as a form
   * target. Absent where the consent page is on the site the user names (`site`).
   */
  readonly consentOrigin?: string;
  /** Present on a network whose accounts live on servers of their own: the user names theirs first. */
  readonly site?: SiteChoice;
  /** Where a user creates a channel for an account that has none, on a network where an account may lack one. */
  readonly createChannelUrl?: string;
  /**
   * How long before an access token's expiry it is refreshed when used (a minute when absent). A
   * network that refreshes a token only while it is still good (Meta's 60-day tokens) asks for days, so
   * that an account used now and then is refreshed before its token runs out.
   */
  readonly refreshBeforeExpiryMs?: number;
  /** The network's consent page, to which the user's browser is sent (on `site`, the prepared site, if any). */
  authorizeUrl(input: {
    state: string;
    redirectUri: string;
    codeChallenge: string;
    site?: string;
  }): string | Promise<string>;
  /** Trades the code of the network's answer for tokens; `ConnectionRefusedError` when the network refuses it. */
  exchangeCode(input: {
    code: string;
    redirectUri: string;
    codeVerifier: string;
    site?: string;
  }): Promise<AccountCredentials>;
  /**
   * Present on a network whose one consent reaches several accounts (Facebook's Pages and the Instagram
   * accounts linked to them): the accounts the tokens `exchangeCode` answered reach, each with its own
   * credentials, among which the user chooses on a page of this server (one channel each) instead of one
   * account being connected. `AccountWithoutChannelError` when the consent reached none.
   */
  grantedAccounts?(credentials: AccountCredentials): Promise<GrantedAccount[]>;
  /** A fresh access token; `ConnectionRefusedError` when the refresh token was revoked or expired. */
  refresh(credentials: AccountCredentials): Promise<AccountCredentials>;
  identity(credentials: AccountCredentials): Promise<AccountIdentity>;
  /**
   * Ends this installation's access to the account at the network (its refresh token, or its access
   * token when it has none). `ConnectionRefusedError` when the network no longer knows the token
   * (revoked already, or expired), or gives an app no way to revoke one: nothing is left to revoke.
   */
  revoke(credentials: AccountCredentials): Promise<void>;
}

/** One of the accounts a consent reached, as the user is offered it. */
export interface GrantedAccount {
  /** The network its channel is of (a Facebook consent reaches Instagram accounts too). */
  provider: Provider;
  identity: AccountIdentity;
  credentials: AccountCredentials;
  /**
   * When access to it ends unless the user connects it again (ISO 8601), where the network says and no
   * refresh renews it (Meta's data access expiry).
   */
  accessEndsAt?: string;
  /**
   * Why it cannot be chosen, in words for the user (the consent lets it be seen, not published to);
   * absent when it can.
   */
  unavailable?: string;
}

/** How the user names the site of their account, on a network whose accounts live on servers of their own. */
export function siteChoiceOf(connection: ConnectionAdapter | undefined): SiteChoice | undefined {
  return connection?.kind === 'consent' ? connection.site : undefined;
}

/** What a sign-in page asks for, in the network's own words. */
export interface SignInForm {
  /** The account, as the user names it (`Handle`), and an example of it (`alice.bsky.social`). */
  readonly account: { label: string; example: string };
  /** The password made for this service (`App password`), and where its owner makes one. */
  readonly password: { label: string; help: string };
  /** The server the account lives on, for a user whose account is not where its name leads. */
  readonly server: { label: string; help: string; example: string };
}

/** What a user typed on a network's sign-in page. */
export interface SignInInput {
  account: string;
  password: string;
  /** Empty when the user left it to the account's name to say. */
  server: string;
}

/** A field of a network's sign-in page. */
export type SignInField = keyof SignInInput;

/**
 * The network refused the sign-in for a reason the user can mend on the same page (a mistyped name, a
 * password that is not one made for this service): the message says what, in words for the user, and
 * `field` which field to mend (none when it is no field's, as a limit of sign-ins).
 */
export class SignInRefusedError extends Error {
  override name = 'SignInRefusedError';

  constructor(
    message: string,
    readonly field?: SignInField,
  ) {
    super(message);
  }
}

/**
 * A network without an app registration for an installation like this one (Bluesky): its user signs
 * in on a page of this server with a password they made for it at the network, which the service keeps
 * (encrypted) as the account's credentials and can revoke no more than it can issue: its owner revokes
 * it at the network.
 */
export interface SignInConnection {
  readonly kind: 'sign-in';
  readonly form: SignInForm;
  /**
   * Signs in as the user asked and reads who the account is. `SignInRefusedError` or `SiteRefusedError`
   * (in words for the user) when it cannot be mended but by the user; any other error when the network
   * could not be reached.
   */
  signIn(input: SignInInput): Promise<{ credentials: AccountCredentials; identity: AccountIdentity }>;
}
