import type { AccountCredentials } from '../connection-contract.js';

/**
 * Which of Instagram's two APIs a channel's token is for: the Instagram API with Instagram Login
 * (graph.instagram.com, the account's own long-lived token) or the Instagram API with Facebook Login
 * (graph.facebook.com, the token of the Facebook Page the account is linked to).
 */
export type InstagramApi = { api: 'instagram' } | { api: 'facebook'; pageId: string };

/** How an Instagram channel's credentials are stored: the standard ones, and the API they are for beside them. */
export interface InstagramCredentials extends AccountCredentials {
  instagram: InstagramApi;
}
