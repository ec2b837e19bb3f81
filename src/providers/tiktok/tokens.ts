import type { Channel } from '../../channels/tables.js';
import type { AccountTokens } from '../account-tokens.js';
import { ReconnectNeededError } from '../publishing-contract.js';
import { TikTokError } from './api.js';

/**
 * Calls of TikTok's API with a channel's access token: refreshed before it expires, and once more
 * after TikTok refuses it (`access_token_invalid`). A token still refused, or a scope the user did not
 * grant, means the account must be connected again.
 */
export class TikTokTokens {
  constructor(private readonly tokens: AccountTokens) {}

  async authorized<T>(channel: Channel, call: (accessToken: string) => Promise<T>): Promise<T> {
    const token = await this.tokens.accessToken(channel);
    try {
      return await call(token);
    } catch (error) {
      if (!(error instanceof TikTokError)) throw error;
      if (error.code === 'scope_not_authorized')
        throw new ReconnectNeededError(
          `the account did not grant this app what it needs (${error.message})`,
          error.logId,
        );
      if (error.code !== 'access_token_invalid') throw error;
    }
    try {
      return await call(await this.tokens.afterRefusal(channel, token));
    } catch (error) {
      if (
        error instanceof TikTokError &&
        (error.code === 'access_token_invalid' || error.code === 'scope_not_authorized')
      ) {
        throw new ReconnectNeededError(`TikTok refused the account's access token (${error.code})`, error.logId);
      }
      throw error;
    }
  }
}
