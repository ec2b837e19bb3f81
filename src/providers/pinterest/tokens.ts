import type { Channel } from '../../channels/tables.js';
import type { AccountTokens } from '../account-tokens.js';
import type { NetworkAnswer } from '../network-call.js';
import { ReconnectNeededError } from '../publishing-contract.js';
import { pinterestMessage } from './api.js';

/** Where a channel's access tokens come from: AccountTokens, which refreshes and stores them. */
export type AccessTokens = Pick<AccountTokens, 'accessToken' | 'afterRefusal'>;

/**
 * Calls of Pinterest's API with a channel's access token: refreshed before it expires, and once more after
 * Pinterest refuses one (401, "Authentication failed."). A token still refused means the user removed the
 * app: the account must be connected again. A refused refresh says the same (AccountTokens).
 */
export class PinterestTokens {
  constructor(private readonly tokens: AccessTokens) {}

  async authorized(channel: Channel, call: (authorization: string) => Promise<NetworkAnswer>): Promise<NetworkAnswer> {
    const token = await this.tokens.accessToken(channel);
    const answer = await call(`Bearer ${token}`);
    if (answer.status !== 401) return answer;
    const again = await call(`Bearer ${await this.tokens.afterRefusal(channel, token)}`);
    if (again.status === 401)
      throw new ReconnectNeededError(`Pinterest refused the account's access token (${pinterestMessage(again)})`);
    return again;
  }
}
