import { isValidHandle } from '@atproto/syntax';
import type { BlueskyConfig } from '../../core/config.js';
import {
  SignInRefusedError,
  SiteRefusedError,
  type AccountCredentials,
  type AccountIdentity,
  type SignInConnection,
  type SignInInput,
} from '../connection-contract.js';
import { siteOrigin } from '../site-origin.js';
import { PdsAddressRefusedError, XrpcError, type BlueskyApi, type BlueskySession } from './api.js';
import { storedBlueskyCredentials } from './credentials.js';

/**
 * The scopes of the access token a session of an app password carries; the account's own password
 * gives `com.atproto.access`, which the service refuses to keep.
 */
const APP_PASSWORD_SCOPES = new Set(['com.atproto.appPass', 'com.atproto.appPassPrivileged']);
const PROFILE = 'app.bsky.actor.profile';

/**
 * Connecting a Bluesky account: its owner makes an app password for this service and signs in with it
 * and their handle (or DID) on a page of this server. Where they name no server, the handle is resolved
 * to its DID at the entryway and the DID to its PDS through its document, and the account signs in at
 * that PDS; a self-hosted PDS may be named outright. Every address, the named server's as the resolved
 * ones, goes through the outbound address policy. The credentials kept are the DID (a handle can change),
 * the app password and the PDS; sessions are made from them per publication (see BlueskyAdapter).
 */
export class BlueskyConnection implements SignInConnection {
  readonly kind = 'sign-in';
  readonly form = {
    account: { label: 'Handle', example: 'alice.bsky.social' },
    password: {
      label: 'App password',
      help:
        'Make one for this service in Bluesky: Settings → Privacy and security → App passwords. ' +
        'Not your account’s own password, which this service refuses.',
    },
    server: {
      label: 'Hosting provider',
      help: 'Leave empty unless your account is on a PDS of your own: its address is found from your handle.',
      example: 'https://pds.example.com',
    },
  };

  constructor(
    private readonly config: BlueskyConfig,
    private readonly api: BlueskyApi,
  ) {}

  async signIn(input: SignInInput): Promise<{ credentials: AccountCredentials; identity: AccountIdentity }> {
    const account = accountOf(input.account);
    const password = input.password.trim();
    if (password === '') throw new SignInRefusedError('enter the app password you made for this service', 'password');
    const server = input.server.trim() === '' ? await this.serverOf(account) : namedServer(input.server);
    const signedIn = await this.session(server, account, password);
    const session = await this.verified(signedIn, server, account);
    if (session.status)
      throw new SignInRefusedError(`the Bluesky account is ${session.status} and cannot post`, 'account');
    if (!APP_PASSWORD_SCOPES.has(scopeOf(session.accessJwt) ?? ''))
      throw new SignInRefusedError(
        'this is the account’s own password; make an app password for this service in Bluesky’s settings and use that',
        'password',
      );
    return {
      credentials: storedBlueskyCredentials({ identifier: session.did, appPassword: password, service: session.pds }),
      identity: await this.identity(session),
    };
  }

  /**
   * The session with the account's PDS as its DID document names it, read at the PLC directory (or the
   * `did:web` host), never taken from the server that signed in: a server the user named could answer
   * any account's DID. It must be the account's PDS, unless it is the operator's entryway (an account
   * named by its e-mail address signs in there); an account named by its DID or handle must be the one
   * that signed in.
   */
  private async verified(session: BlueskySession, server: string, account: string): Promise<BlueskySession> {
    if (account.startsWith('did:') && session.did !== account)
      throw new SignInRefusedError(`the server signed in another account than ${account}`, 'server');
    if (!account.startsWith('did:') && !account.includes('@') && session.handle.toLowerCase() !== account)
      throw new SignInRefusedError(`the server signed in another account than ${account}`, 'server');
    const pds = await this.asked(() => this.api.pdsOfDid(this.config.plcUrl, session.did));
    if (!pds) throw new SignInRefusedError(`the account ${session.did} names no PDS in its DID document`, 'account');
    if (origin(pds) !== origin(server) && origin(server) !== origin(this.config.entrywayUrl))
      throw new SignInRefusedError(
        `the server at ${origin(server)} is not the PDS of ${account} (its DID document names ${origin(pds)})`,
        'server',
      );
    return { ...session, pds: pds.replace(/\/+$/, '') };
  }

  /** Where the account signs in when the user named no server: its PDS, or the entryway for an e-mail address. */
  private async serverOf(account: string): Promise<string> {
    if (account.includes('@')) return this.config.entrywayUrl;
    const did = account.startsWith('did:')
      ? account
      : await this.asked(() => this.api.resolveHandle(this.config.entrywayUrl, account));
    if (!did) throw new SignInRefusedError(`no Bluesky account has the handle ${account}`, 'account');
    const pds = await this.asked(() => this.api.pdsOfDid(this.config.plcUrl, did));
    if (!pds) throw new SignInRefusedError(`${account} names no Bluesky account with a PDS`, 'account');
    return pds;
  }

  private async session(server: string, account: string, password: string): Promise<BlueskySession> {
    try {
      return await this.api.createSession(server, account, password);
    } catch (error) {
      if (error instanceof XrpcError && (error.status === 401 || error.error === 'AuthenticationRequired'))
        throw new SignInRefusedError(
          `Bluesky did not sign in ${account} with this app password: ${error.message}`,
          'password',
        );
      if (error instanceof XrpcError && (error.error === 'AccountTakedown' || error.error === 'AccountDeactivated'))
        throw new SignInRefusedError(`Bluesky refused the account: ${error.message}`, 'account');
      if (error instanceof XrpcError && error.status === 429)
        throw new SignInRefusedError('Bluesky allows no more sign-ins of this account for now; try again later');
      if (error instanceof PdsAddressRefusedError) throw new SiteRefusedError(error.message);
      throw error;
    }
  }

  /** The account's name and picture from its profile record; its handle when it has none. */
  private async identity(session: BlueskySession): Promise<AccountIdentity> {
    const profile = await this.api.getRecord(session.pds, session.did, PROFILE, 'self').catch(() => undefined);
    const displayName = profile?.value.displayName;
    const avatar = (profile?.value.avatar as { ref?: { $link?: unknown } } | undefined)?.ref?.$link;
    const query = typeof avatar === 'string' ? new URLSearchParams({ did: session.did, cid: avatar }) : undefined;
    return {
      externalId: session.did,
      name: typeof displayName === 'string' && displayName.trim() !== '' ? displayName.trim() : session.handle,
      username: session.handle,
      picture: query ? `${session.pds}/xrpc/com.atproto.sync.getBlob?${query.toString()}` : null,
    };
  }

  /** A resolution's answer; the address policy's refusal as the user's to mend. */
  private async asked<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof PdsAddressRefusedError) throw new SiteRefusedError(error.message);
      throw error;
    }
  }
}

/** The account as the user typed it: a handle (without its `@`), a DID, or an e-mail address. */
function accountOf(input: string): string {
  const text = input.trim().replace(/^@/, '');
  if (text === '') throw new SignInRefusedError('enter your handle, such as alice.bsky.social', 'account');
  if (text.startsWith('did:') || text.includes('@')) return text;
  const handle = text.toLowerCase();
  if (!isValidHandle(handle))
    throw new SignInRefusedError(`${text} is not a Bluesky handle, such as alice.bsky.social`, 'account');
  return handle;
}

function namedServer(input: string): string {
  const named = siteOrigin(input, 'a hosting provider', 'bsky.social');
  if ('problem' in named) throw new SiteRefusedError(named.problem);
  return named.origin;
}

/** The `scope` claim of a session's access token (read, not verified: the PDS issued it a moment ago). */
function scopeOf(jwt: string): string | undefined {
  try {
    const payload = JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8')) as {
      scope?: unknown;
    };
    return typeof payload.scope === 'string' ? payload.scope : undefined;
  } catch {
    return undefined;
  }
}

function origin(url: string): string {
  return URL.parse(url)?.origin ?? url;
}
