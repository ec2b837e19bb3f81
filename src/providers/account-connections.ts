import { createHash, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Provider } from '../core/contract.js';
import { UnprocessableError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { hashSecret } from '../crypto/issued-secrets.js';
import type { Keyring } from '../crypto/keyring.js';
import type { Db } from '../db/database.js';
import { RateLimiter, startAttempt } from '../http/rate-limit.js';
import {
  AccountWithoutChannelError,
  ConnectionRefusedError,
  SignInRefusedError,
  type SignInField,
  SiteRefusedError,
  type AccountCredentials,
  type AccountIdentity,
  type ConsentConnection,
  type GrantedAccount,
  type SignInInput,
} from './connection-contract.js';
import type { ProvidersContext } from './registry.js';
import type { Channel } from '../channels/tables.js';
import { credentialsContext, grantedAccountsContext, verifierContext } from './account-credentials.js';
import { cancelRevocations } from './account-revocations.js';
import { plainText } from './network-text.js';
import { transaction } from '../db/transaction.js';
import { recordAudit, type AuditActor } from '../audit/log.js';

/** How long a user may stay at the network's consent page. */
const CONNECTION_LIFETIME_MS = 15 * 60_000;

/** Where the networks send the user back: `/channels/callback/{provider}` of this server. */
export function callbackUrl(publicUrl: string, provider: Provider): string {
  return `${publicUrl}/channels/callback/${provider}`;
}

/** Where a connection started through the Public API sends the user back, with the caller's `state`. */
export interface ConnectionReturn {
  url: string;
  state: string | null;
  /** The OAuth app whose access token started it, if one did. */
  appId: string | null;
  /** The API key that started it, if one did. */
  apiKeyId?: string | null;
}

/** Where a network whose accounts live on servers of their own asks the user which one: a page of this server. */
export function sitePageUrl(publicUrl: string, provider: Provider, state: string): string {
  return `${publicUrl}/channels/site/${provider}?${new URLSearchParams({ state }).toString()}`;
}

/** Where the user of a network without a consent page signs in (`SignInConnection`): a page of this server. */
export function signInPageUrl(publicUrl: string, provider: Provider, state: string): string {
  return `${publicUrl}/channels/sign-in/${provider}?${new URLSearchParams({ state }).toString()}`;
}

/** How many passwords a sign-in page takes for one connection before the connection is given up. */
export const MAX_SIGN_IN_ATTEMPTS = 5;

/**
 * Starts connecting an account of `provider` to the organization: records the authorization in
 * progress (the hash of a fresh `state`, an encrypted PKCE verifier, the site the account lives on
 * where the network has sites, and either the browser session that may finish it or where to send
 * the user back) and answers the network's consent page to send the user to. On a network whose
 * accounts live on servers of their own (Mastodon), a connection started without its `site` answers
 * a page of this server that asks the user for it first (`chooseSite`); `SiteRefusedError` when the
 * site given cannot be used. On a network without a consent page, the page to send the user to is this
 * server's sign-in page (`finishSignIn`).
 */
export async function startConnection(
  ctx: ProvidersContext,
  request: { organizationId: string; provider: Provider; site?: string } & (
    { sessionId: string } | { returnTo: ConnectionReturn }
  ),
): Promise<{ authorizationUrl: string; expiresAt: Date }> {
  const adapter = ctx.providers[request.provider].connection;
  if (!adapter)
    throw new UnprocessableError(
      `Connecting ${request.provider} accounts is not configured by the operator of this server.`,
    );
  const redirectUri = callbackUrl(ctx.config.publicUrl, request.provider);
  const siteChoice = adapter.kind === 'consent' ? adapter.site : undefined;
  if (request.site !== undefined && !siteChoice)
    throw new SiteRefusedError(`${ctx.providers[request.provider].name} accounts are not on sites of their own`);
  const site = request.site === undefined ? undefined : await siteChoice!.prepare(request.site, redirectUri);
  const id = newId('conn');
  const state = randomBytes(32).toString('base64url');
  const verifier = randomBytes(32).toString('base64url');
  const expiresAt = new Date(ctx.clock.now().getTime() + CONNECTION_LIFETIME_MS);
  const returnTo = 'returnTo' in request ? request.returnTo : undefined;
  await ctx.db
    .insertInto('channel_connections')
    .values({
      id,
      state_hash: hashSecret(state),
      organization_id: request.organizationId,
      provider: request.provider,
      code_verifier: ctx.keyring.encrypt(verifier, verifierContext(id)),
      session_id: 'sessionId' in request ? request.sessionId : null,
      return_url: returnTo?.url ?? null,
      client_state: returnTo?.state ?? null,
      app_id: returnTo?.appId ?? null,
      api_key_id: returnTo?.apiKeyId ?? null,
      site: site ?? null,
      expires_at: expiresAt,
    })
    .execute();
  if (adapter.kind === 'sign-in')
    return { authorizationUrl: signInPageUrl(ctx.config.publicUrl, request.provider, state), expiresAt };
  if (adapter.site && site === undefined)
    return { authorizationUrl: sitePageUrl(ctx.config.publicUrl, request.provider, state), expiresAt };
  const codeChallenge = createHash('sha256').update(verifier).digest('base64url');
  return {
    authorizationUrl: await adapter.authorizeUrl({
      state,
      redirectUri,
      codeChallenge,
      ...(site === undefined ? {} : { site }),
    }),
    expiresAt,
  };
}

/**
 * A connection in progress whose user has yet to name the site their account lives on (started
 * through the Public API without it): `undefined` when the state names none, or one that expired or
 * has its site already.
 */
export async function connectionAwaitingSite(
  ctx: ProvidersContext,
  provider: Provider,
  state: string,
): Promise<{ expiresAt: Date } | undefined> {
  const pending = await ctx.db
    .selectFrom('channel_connections')
    .select(['expires_at', 'site'])
    .where('state_hash', '=', hashSecret(state))
    .where('provider', '=', provider)
    .executeTakeFirst();
  if (!pending || pending.site !== null || pending.expires_at.getTime() < ctx.clock.now().getTime()) return undefined;
  return { expiresAt: pending.expires_at };
}

/**
 * Records the site the user named for a connection awaiting it, and answers the consent page on
 * that site; `undefined` when the state names no connection awaiting a site. `SiteRefusedError` when
 * the site cannot be used (the connection still awaits one).
 */
export async function chooseSite(
  ctx: ProvidersContext,
  provider: Provider,
  state: string,
  input: string,
): Promise<string | undefined> {
  const adapter = ctx.providers[provider].connection;
  if (adapter?.kind !== 'consent' || !adapter.site || !(await connectionAwaitingSite(ctx, provider, state)))
    return undefined;
  const redirectUri = callbackUrl(ctx.config.publicUrl, provider);
  const site = await adapter.site.prepare(input, redirectUri);
  // Named once: a second answer (another tab) finds the site set and changes nothing.
  const chosen = await ctx.db
    .updateTable('channel_connections')
    .set({ site })
    .where('state_hash', '=', hashSecret(state))
    .where('provider', '=', provider)
    .where('site', 'is', null)
    .returning(['id', 'code_verifier'])
    .executeTakeFirst();
  if (!chosen) return undefined;
  const verifier = ctx.keyring.decrypt(chosen.code_verifier, verifierContext(chosen.id));
  const codeChallenge = createHash('sha256').update(verifier).digest('base64url');
  return adapter.authorizeUrl({ state, redirectUri, codeChallenge, site });
}

/**
 * What a connection came to: its channels (one, or those the user chose among the accounts a consent
 * reached), a failure, or, on a network whose consent reaches several accounts, the page of this
 * server where the user chooses among them (`chooseAt`).
 */
export type ConnectionResult =
  | {
      ok: true;
      organizationId: string;
      /** The channels connected, at least one, in the order the network listed their accounts. */
      channels: Channel[];
      /** Whether every one of them was a channel of the organization before (now updated and `active`). */
      reconnected: boolean;
      returnTo?: ConnectionReturn;
    }
  | { ok: 'choose'; chooseAt: string }
  | { ok: false; organizationId?: string; failure: ConnectionFailure; reason: string; returnTo?: ConnectionReturn };

/** Why a connection did not finish, as a code the pages turn into words of their own. */
export type ConnectionFailure =
  'unknown' | 'expired' | 'other_session' | 'denied' | 'refused' | 'no_channel' | 'unreachable' | 'none_chosen';

/** The answer to a `state` that names no connection in progress (unknown, finished, or another's). */
const UNKNOWN_CONNECTION: ConnectionResult = {
  ok: false,
  failure: 'unknown',
  reason: 'This connection is unknown or was finished already; start it again.',
};

/** Where the user chooses among the accounts one consent reached: a page of this server. */
export function choicePageUrl(publicUrl: string, provider: Provider, state: string): string {
  return `${publicUrl}/channels/choose/${provider}?${new URLSearchParams({ state }).toString()}`;
}

/**
 * Finishes a connection when the network sends the user back: the `state` must be one this server
 * issued for this provider, unused and unexpired; one started in the web app must come back to the
 * browser session that started it, one started by an OAuth app only while the app still has the
 * organization's approval. Then the code is traded for tokens, the account's identity read, and its
 * channel created, or updated (tokens, name, picture, `active` again) when the organization
 * connected that account before.
 */
export async function finishConnection(
  ctx: ProvidersContext,
  provider: Provider,
  answer: { state?: string; code?: string; error?: string },
  sessionId: string | undefined,
): Promise<ConnectionResult> {
  const adapter = ctx.providers[provider].connection;
  if (adapter?.kind !== 'consent' || !answer.state)
    return { ok: false, failure: 'unknown', reason: 'This is not an answer to a connection this server started.' };
  const pending = await takePendingConnection(ctx.db, provider, answer.state);
  if (!pending) return UNKNOWN_CONNECTION;
  const { organizationId, returnTo, failed } = outcomesOf(pending);
  const refused = (await refusalOf(ctx, pending, sessionId, failed)) ?? answerRefusal(answer, failed);
  if (refused) return refused;
  try {
    const connected = await connectAccount(ctx, adapter, pending, answer.code!);
    if ('chooseAt' in connected) return { ok: 'choose', chooseAt: connected.chooseAt };
    return { ok: true, organizationId, channels: [connected.channel], reconnected: connected.reconnected, returnTo };
  } catch (error) {
    // The network's words, as text (some networks write HTML): they reach a page and a return URL.
    if (error instanceof AccountWithoutChannelError)
      return failed('no_channel', `${capitalized(plainText(error.message))}.`);
    if (error instanceof ConnectionRefusedError)
      return failed('refused', `The network refused the connection: ${plainText(error.message)}.`);
    ctx.logger.warn({ err: error, provider }, 'connecting an account failed');
    return failed('unreachable', 'The network could not be reached to finish the connection; try again in a moment.');
  }
}

/**
 * A connection in progress whose user signs in on this server's page: `undefined` when the state
 * names none of `provider`, or one that expired.
 */
export async function connectionAwaitingSignIn(
  ctx: ProvidersContext,
  provider: Provider,
  state: string,
): Promise<{ expiresAt: Date } | undefined> {
  if (ctx.providers[provider].connection?.kind !== 'sign-in') return undefined;
  const pending = await ctx.db
    .selectFrom('channel_connections')
    .select('expires_at')
    .where('state_hash', '=', hashSecret(state))
    .where('provider', '=', provider)
    .executeTakeFirst();
  if (!pending || pending.expires_at.getTime() < ctx.clock.now().getTime()) return undefined;
  return { expiresAt: pending.expires_at };
}

/**
 * What signing in on this server's page came to: the connection's result, or words for another try with
 * the field they concern (none when no field is to blame, as when the network could not be reached).
 */
/**
 * What a sign-in came to: the connection's outcome, or a problem to mend on the page and try again
 * (after `retryAfter` seconds, when the organization's failed sign-ins are paused).
 */
export type SignInResult = ConnectionResult | { ok: false; retry: string; field?: SignInField; retryAfter?: number };

/**
 * Finishes a connection on a network without a consent page with what the user typed on this server's
 * sign-in page: the same checks as an answer of a consent page (the `state` issued for this provider,
 * unexpired, the browser session that started it, the app still approved), then the network is asked.
 * A sign-in the user can mend (a mistyped handle or password, a server that cannot be used, the network
 * out of reach) leaves the connection waiting for another try, up to `MAX_SIGN_IN_ATTEMPTS` passwords;
 * the account signed in, the connection is used up and the channel saved, as after a consent page.
 */
export async function finishSignIn(
  ctx: ProvidersContext,
  provider: Provider,
  state: string,
  input: SignInInput,
  sessionId: string | undefined,
): Promise<SignInResult> {
  const adapter = ctx.providers[provider].connection;
  if (adapter?.kind !== 'sign-in' || !state) return UNKNOWN_CONNECTION;
  // Counted before the network is asked: two tries at once both count.
  const pending = await countSignInAttempt(ctx.db, provider, state, 1);
  if (!pending) return UNKNOWN_CONNECTION;
  const { organizationId, returnTo, failed } = outcomesOf(pending);
  const refused = await refusalOf(ctx, pending, sessionId, failed);
  if (refused || pending.sign_in_attempts > MAX_SIGN_IN_ATTEMPTS) {
    await takePendingConnection(ctx.db, provider, state);
    return (
      refused ??
      failed(
        'refused',
        `After ${MAX_SIGN_IN_ATTEMPTS} tries that did not sign in, this connection was given up; start it again.`,
      )
    );
  }
  // Each connection gives up after a few failures, and anyone who may start connections for the
  // organization could start another for more guesses: the organization's failures are limited too,
  // counted before the network is asked and taken back for a sign-in that did not fail by the user's input.
  const limit = ctx.config.signInFailures;
  const attempt = await startAttempt([
    {
      limiter: new RateLimiter(
        ctx.db,
        'sign-in-failures',
        { max: limit.perOrganization, windowSeconds: limit.windowSeconds },
        ctx.clock,
      ),
      key: organizationId,
    },
  ]);
  if (!attempt.allowed) {
    // Not tried: it uses up none of the connection's tries.
    await countSignInAttempt(ctx.db, provider, state, -1);
    const minutes = Math.ceil(attempt.refusedBy.resetSeconds / 60);
    return {
      ok: false,
      retry:
        `Too many sign-ins failed for this organization’s connections in a short time; nothing was sent to ` +
        `the network. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`,
      retryAfter: attempt.refusedBy.resetSeconds,
    };
  }
  let signedIn;
  try {
    signedIn = await adapter.signIn(input);
  } catch (error) {
    if (error instanceof SignInRefusedError)
      return { ok: false, retry: `${capitalized(error.message)}.`, field: error.field };
    // The server named, or the one the account's name leads to when none was.
    if (error instanceof SiteRefusedError)
      return { ok: false, retry: `${capitalized(error.message)}.`, field: input.server.trim() ? 'server' : 'account' };
    await attempt.takeBack();
    ctx.logger.warn({ err: error, provider }, 'signing in to a network failed');
    return { ok: false, retry: 'The network could not be reached to sign in; try again in a moment.' };
  }
  await attempt.takeBack();
  // Another try that signed in at the same moment used the connection up: this one saves nothing.
  if (!(await takePendingConnection(ctx.db, provider, state))) return UNKNOWN_CONNECTION;
  const { channel, reconnected } = await saveConnectedChannel(ctx.db, ctx.keyring, {
    startedBy: pending,
    organizationId,
    provider,
    identity: signedIn.identity,
    credentials: signedIn.credentials,
    now: ctx.clock.now(),
  });
  return { ok: true, organizationId, channels: [channel], reconnected, returnTo };
}

/** Counts a try to sign in on a pending connection (or, with `-1`, takes one back); the connection after it. */
function countSignInAttempt(db: Db, provider: Provider, state: string, by: 1 | -1) {
  return db
    .updateTable('channel_connections')
    .set((eb) => ({ sign_in_attempts: eb('sign_in_attempts', '+', by) }))
    .where('state_hash', '=', hashSecret(state))
    .where('provider', '=', provider)
    .returningAll()
    .executeTakeFirst();
}

/**
 * The pending connection of a `state`, taken out before anything else happens: a state is used once.
 * One awaiting the network's answer, or (`awaiting: 'choice'`) one awaiting the user's choice among the
 * accounts the network's answer reached.
 */
function takePendingConnection(db: Db, provider: Provider, state: string, awaiting: 'answer' | 'choice' = 'answer') {
  return db
    .deleteFrom('channel_connections')
    .where('state_hash', '=', hashSecret(state))
    .where('provider', '=', provider)
    .where('granted_accounts', awaiting === 'answer' ? 'is' : 'is not', null)
    .returningAll()
    .executeTakeFirst();
}

type PendingConnection = NonNullable<Awaited<ReturnType<typeof takePendingConnection>>>;
type Failed = (failure: ConnectionFailure, reason: string) => ConnectionResult;

/** Where a pending connection's outcome goes, and its failures as results. */
function outcomesOf(pending: PendingConnection): {
  organizationId: string;
  returnTo: ConnectionReturn | undefined;
  failed: Failed;
} {
  const organizationId = pending.organization_id;
  const returnTo = pending.return_url
    ? { url: pending.return_url, state: pending.client_state, appId: pending.app_id }
    : undefined;
  const failed: Failed = (failure, reason) => ({ ok: false, organizationId, failure, reason, returnTo });
  return { organizationId, returnTo, failed };
}

/**
 * Why a pending connection cannot be finished, whatever the network answered: `undefined` when it can
 * (unexpired, back in the browser session that started it, its app still approved).
 */
async function refusalOf(
  ctx: ProvidersContext,
  pending: PendingConnection,
  sessionId: string | undefined,
  failed: Failed,
): Promise<ConnectionResult | undefined> {
  if (pending.expires_at.getTime() < ctx.clock.now().getTime())
    return failed('expired', 'This connection took too long; start it again.');
  if (pending.session_id !== null && pending.session_id !== sessionId) {
    return {
      ok: false,
      failure: 'other_session',
      reason: 'This connection was started in another browser session; start it again here.',
    };
  }
  if (pending.app_id !== null && !(await appStillApproved(ctx.db, pending.app_id, pending.organization_id))) {
    return failed(
      'refused',
      'The app that started this connection no longer has access to the organization; nothing was connected.',
    );
  }
  return undefined;
}

/**
 * The errors with which a network's consent page says the user said no: OAuth's `access_denied`, and
 * LinkedIn's own for a member who cancelled its sign-in or its consent.
 */
const DENIALS = new Set(['access_denied', 'user_cancelled_login', 'user_cancelled_authorize']);

/** Why the network's answer does not finish the connection, if it does not: `undefined` when it does. */
function answerRefusal(answer: { code?: string; error?: string }, failed: Failed): ConnectionResult | undefined {
  if (answer.error || !answer.code) {
    const denied = answer.error !== undefined && DENIALS.has(answer.error);
    const reason = denied
      ? 'You did not allow access on the network; nothing was connected.'
      : `The network answered ${answer.error ?? 'without a code'}; nothing was connected.`;
    return failed(denied ? 'denied' : 'refused', reason);
  }
  return undefined;
}

/**
 * Trades the code for tokens, reads the account's identity and saves its channel; on a network whose
 * consent reaches several accounts, keeps them with the connection for the user to choose among
 * instead, and answers where.
 */
async function connectAccount(
  ctx: ProvidersContext,
  adapter: ConsentConnection,
  pending: PendingConnection,
  code: string,
): Promise<{ channel: Channel; reconnected: boolean } | { chooseAt: string }> {
  const codeVerifier = ctx.keyring.decrypt(pending.code_verifier, verifierContext(pending.id));
  // On a network with sites, the consent page was on the one the user named: the code is traded there.
  if (adapter.site && pending.site === null)
    throw new ConnectionRefusedError('the site of the account was never named');
  const credentials = await adapter.exchangeCode({
    code,
    redirectUri: callbackUrl(ctx.config.publicUrl, pending.provider),
    codeVerifier,
    ...(pending.site === null ? {} : { site: pending.site }),
  });
  if (adapter.grantedAccounts) {
    const accounts = await adapter.grantedAccounts(credentials);
    return { chooseAt: await awaitChoice(ctx, pending, { user: credentials, accounts }) };
  }
  const identity = await adapter.identity(credentials);
  return saveConnectedChannel(ctx.db, ctx.keyring, {
    startedBy: pending,
    organizationId: pending.organization_id,
    provider: pending.provider,
    identity,
    credentials,
    now: ctx.clock.now(),
  });
}

/** Whether the organization still approves the app (a user may have revoked it since it started the connection). */
async function appStillApproved(db: Db, appId: string, organizationId: string): Promise<boolean> {
  const grant = await db
    .selectFrom('oauth_grants')
    .select('id')
    .where('app_id', '=', appId)
    .where('organization_id', '=', organizationId)
    .executeTakeFirst();
  return grant !== undefined;
}

/** What one consent granted, kept (encrypted) with its connection until the user chooses among its accounts. */
interface GrantedAccounts {
  /** The user's token the accounts' tokens come from; never shown, never in an address. */
  user: AccountCredentials;
  accounts: GrantedAccount[];
}

/** How the choice page and its form name an account: its network and its id there. */
export const accountKey = (account: { provider: Provider; identity: { externalId: string } }) =>
  `${account.provider}:${account.identity.externalId}`;

/**
 * Puts a connection whose consent reached several accounts back, with what the consent granted and a
 * fresh `state` for the page where the user chooses (the one the network sent back is used up); it
 * keeps its id, its browser session or return URL, and its expiry. Answers that page.
 */
async function awaitChoice(ctx: ProvidersContext, pending: PendingConnection, granted: GrantedAccounts) {
  const state = randomBytes(32).toString('base64url');
  await ctx.db
    .insertInto('channel_connections')
    .values({
      ...pending,
      state_hash: hashSecret(state),
      granted_accounts: ctx.keyring.encrypt(JSON.stringify(granted), grantedAccountsContext(pending.id)),
    })
    .execute();
  return choicePageUrl(ctx.config.publicUrl, pending.provider, state);
}

/** An account the consent reached, as the choice page offers it. */
export interface OfferedAccount {
  key: string;
  provider: Provider;
  identity: AccountIdentity;
  /** Why it cannot be chosen, if it cannot. */
  unavailable?: string;
  /** The organization has a channel of it already (choosing it updates that channel). */
  connected: boolean;
}

/**
 * A connection awaiting the user's choice among the accounts its consent reached, with them: `undefined`
 * when the state names none of `provider`; a failure (taking the connection) when it can no longer be
 * finished here (expired, another browser session's, its app no longer approved).
 */
export async function connectionAwaitingChoice(
  ctx: ProvidersContext,
  provider: Provider,
  state: string,
  sessionId: string | undefined,
): Promise<{ expiresAt: Date; accounts: OfferedAccount[] } | ConnectionResult | undefined> {
  if (!state) return undefined;
  const pending = await ctx.db
    .selectFrom('channel_connections')
    .selectAll()
    .where('state_hash', '=', hashSecret(state))
    .where('provider', '=', provider)
    .where('granted_accounts', 'is not', null)
    .executeTakeFirst();
  if (!pending) return undefined;
  const refused = await refusalOf(ctx, pending, sessionId, outcomesOf(pending).failed);
  if (refused) {
    await takePendingConnection(ctx.db, provider, state, 'choice');
    return refused;
  }
  const { accounts } = grantedOf(ctx.keyring, pending);
  // Nothing to choose: the connection ends here, and an integrator's return URL hears why at once.
  if (accounts.every((account) => account.unavailable)) {
    await takePendingConnection(ctx.db, provider, state, 'choice');
    const reasons = [...new Set(accounts.map((account) => account.unavailable!))];
    return outcomesOf(pending).failed(
      'no_channel',
      accounts.length === 0
        ? 'The accounts you allowed include nothing this server can publish to; nothing was connected.'
        : `None of the accounts you allowed can be published to (${reasons.join('; ')}); nothing was connected.`,
    );
  }
  const existing =
    accounts.length === 0
      ? []
      : await ctx.db
          .selectFrom('channels')
          .select(['provider', 'external_id'])
          .where('organization_id', '=', pending.organization_id)
          .where('status', '!=', 'removed')
          .where(
            'external_id',
            'in',
            accounts.map((account) => account.identity.externalId),
          )
          .execute();
  return {
    expiresAt: pending.expires_at,
    accounts: accounts.map((account) => ({
      key: accountKey(account),
      provider: account.provider,
      identity: account.identity,
      ...(account.unavailable ? { unavailable: account.unavailable } : {}),
      connected: existing.some((c) => c.provider === account.provider && c.external_id === account.identity.externalId),
    })),
  };
}

/**
 * Finishes a connection with the user's choice among the accounts its consent reached (`keys`, as
 * `accountKey` names them): the same checks as the network's answer had, then a channel of each account
 * chosen that may be, created or updated in one transaction. Nothing chosen: nothing is connected.
 */
export async function chooseAccounts(
  ctx: ProvidersContext,
  provider: Provider,
  state: string,
  keys: string[],
  sessionId: string | undefined,
): Promise<ConnectionResult> {
  const pending = state ? await takePendingConnection(ctx.db, provider, state, 'choice') : undefined;
  if (!pending) return UNKNOWN_CONNECTION;
  const { organizationId, returnTo, failed } = outcomesOf(pending);
  const refused = await refusalOf(ctx, pending, sessionId, failed);
  if (refused) return refused;
  const chosen = grantedOf(ctx.keyring, pending).accounts.filter(
    (account) => !account.unavailable && keys.includes(accountKey(account)),
  );
  if (chosen.length === 0)
    return failed('none_chosen', 'No account was chosen, so nothing was connected; start again to choose one.');
  const now = ctx.clock.now();
  const saved = await transaction(ctx.db, async (trx) => {
    const channels = [];
    for (const account of chosen)
      channels.push(
        await upsertChannel(trx, ctx.keyring, {
          startedBy: pending,
          organizationId,
          provider: account.provider,
          identity: account.identity,
          credentials: account.credentials,
          accessEndsAt: account.accessEndsAt ? new Date(account.accessEndsAt) : null,
          now,
        }),
      );
    return channels;
  });
  return {
    ok: true,
    organizationId,
    channels: saved.map((s) => s.channel),
    reconnected: saved.every((s) => s.reconnected),
    returnTo,
  };
}

function grantedOf(keyring: Keyring, pending: PendingConnection): GrantedAccounts {
  return JSON.parse(keyring.decrypt(pending.granted_accounts!, grantedAccountsContext(pending.id))) as GrantedAccounts;
}

function saveConnectedChannel(
  db: Db,
  keyring: Keyring,
  input: ChannelToSave,
): Promise<{ channel: Channel; reconnected: boolean }> {
  return transaction(db, (trx) => upsertChannel(trx, keyring, input));
}

interface ChannelToSave {
  /** The connection it finishes: who started it is who connected the channel, for the audit log. */
  startedBy: Pick<PendingConnection, 'session_id' | 'app_id' | 'api_key_id'>;
  organizationId: string;
  provider: Provider;
  identity: { externalId: string; name: string; username: string | null; picture: string | null };
  credentials: AccountCredentials;
  /** When the account's access ends unless connected again, if the network says (`GrantedAccount`). */
  accessEndsAt?: Date | null;
  now: Date;
}

/**
 * Creates the channel of a connected account, or updates the organization's channel of it (tokens,
 * name, picture, `active` again), with its `connected` event, in the caller's transaction.
 */
async function upsertChannel(
  trx: Db,
  keyring: Keyring,
  input: ChannelToSave,
): Promise<{ channel: Channel; reconnected: boolean }> {
  const { organizationId, provider, identity } = input;
  const credentials = keyring.encrypt(
    JSON.stringify(input.credentials),
    credentialsContext(organizationId, provider, identity.externalId),
  );
  const { rows } = await sql<Channel & { inserted: boolean }>`
    insert into channels (
      id, organization_id, provider, name, username, picture, status, external_id, credentials, connected_at
    )
    values (
      ${newId('ch')}, ${organizationId}, ${provider}, ${identity.name}, ${identity.username}, ${identity.picture},
      'active', ${identity.externalId}, ${credentials}, ${input.now}
    )
    on conflict (organization_id, provider, external_id) where external_id is not null do update set
      name = excluded.name, username = excluded.username, picture = excluded.picture, status = 'active',
      credentials = excluded.credentials, connected_at = excluded.connected_at
    returning *, (xmax = 0) as inserted`.execute(trx);
  // Connected again: its old tokens, if the channel was removed, must not be revoked now. After the
  // upsert, which waited for a removal of the row in progress, so that removal's revocation is seen.
  await cancelRevocations(trx, { organizationId, provider, externalId: identity.externalId });
  const { inserted, ...channel } = rows[0]!;
  // The new tokens' end, if the network named one; the old tokens' is over.
  await trx.deleteFrom('channel_access_ends').where('channel_id', '=', channel.id).execute();
  if (input.accessEndsAt)
    await trx
      .insertInto('channel_access_ends')
      .values({ channel_id: channel.id, ends_at: input.accessEndsAt })
      .execute();
  await trx
    .insertInto('channel_events')
    .values({
      organization_id: organizationId,
      channel_id: channel.id,
      type: 'connected',
      at: input.now,
      webhooks_dispatched_at: null,
    })
    .execute();
  await recordAudit(trx, {
    organizationId,
    actor: await connectionActor(trx, organizationId, input.startedBy),
    action: inserted ? 'channel.connected' : 'channel.reconnected',
    subject: { type: 'channel', id: channel.id, label: `${channel.name} (${channel.provider})` },
  });
  return { channel, reconnected: !inserted };
}

/** Who started a connection: the member of its browser session, the OAuth app or the API key that asked for it. */
async function connectionActor(
  trx: Db,
  organizationId: string,
  startedBy: ChannelToSave['startedBy'],
): Promise<AuditActor> {
  if (startedBy.session_id) {
    const session = await trx
      .selectFrom('sessions')
      .select('user_id')
      .where('id', '=', startedBy.session_id)
      .executeTakeFirst();
    if (session) return { user: session.user_id };
  }
  if (startedBy.app_id) {
    const grant = await trx
      .selectFrom('oauth_grants')
      .select('id')
      .where('app_id', '=', startedBy.app_id)
      .where('organization_id', '=', organizationId)
      .executeTakeFirst();
    if (grant) return { grant: grant.id };
  }
  if (startedBy.api_key_id) return { credential: { type: 'api_key', id: startedBy.api_key_id } };
  return 'operator';
}

/** Forgets connections whose user never came back. */
export async function forgetExpiredConnections(db: Db, now: Date): Promise<void> {
  await db.deleteFrom('channel_connections').where('expires_at', '<', now).execute();
}

const capitalized = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);
