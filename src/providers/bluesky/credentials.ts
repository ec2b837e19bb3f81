import type { AccountCredentials } from '../connection-contract.js';

/**
 * What a Bluesky channel signs in with: the account (its DID, or its handle), an app password its owner
 * made for this service (Settings → Privacy and security → App passwords), and the server it signs in
 * at (bsky.social's entryway, or the PDS a self-hosting user named). Bluesky has no OAuth client
 * registration for an installation like this one, and an app password can be revoked by its owner
 * at any time without touching the account's own password.
 */
export interface BlueskyCredentials {
  identifier: string;
  appPassword: string;
  /** The server's URL, e.g. `https://bsky.social`. */
  service: string;
}

/**
 * How a Bluesky channel's credentials are stored, encrypted like every network's tokens
 * (`account-credentials.ts`): the app password is the `accessToken` (it is what every session is made
 * from), no refresh token or expiry (sessions are made per publication and never stored), no scopes, and
 * the account and its server beside them.
 */
export interface StoredBlueskyCredentials extends AccountCredentials {
  bluesky: { identifier: string; service: string };
}

export function storedBlueskyCredentials(credentials: BlueskyCredentials): StoredBlueskyCredentials {
  return {
    accessToken: credentials.appPassword,
    refreshToken: null,
    expiresAt: null,
    scopes: [],
    bluesky: { identifier: credentials.identifier, service: credentials.service },
  };
}

/** The Bluesky credentials in a channel's stored ones; `undefined` when they are not a Bluesky account's. */
export function blueskyCredentials(stored: AccountCredentials): BlueskyCredentials | undefined {
  const account = (stored as Partial<StoredBlueskyCredentials>).bluesky;
  if (typeof account?.identifier !== 'string' || typeof account.service !== 'string' || !stored.accessToken)
    return undefined;
  return { identifier: account.identifier, appPassword: stored.accessToken, service: account.service };
}
