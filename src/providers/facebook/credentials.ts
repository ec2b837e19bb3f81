import type { AccountCredentials } from '../connection-contract.js';

/**
 * How a Facebook Page's channel keeps its tokens (encrypted like every network's,
 * `account-credentials.ts`): the Page access token is the `accessToken`, with which every post,
 * photo and comment is made; beside it, the long-lived user token it was derived from, which the
 * Resumable Upload API asks for to upload a video (its sessions belong to a user, not to a Page).
 */
export interface StoredFacebookCredentials extends AccountCredentials {
  facebook?: { userAccessToken: string };
}

/** The user token of a Page's credentials, if the channel holds one. */
export function facebookUserToken(credentials: AccountCredentials): string | undefined {
  const token = (credentials as StoredFacebookCredentials).facebook?.userAccessToken;
  return typeof token === 'string' && token !== '' ? token : undefined;
}
