import type { Channel } from '../../channels/tables.js';
import type { AccountTokens } from '../account-tokens.js';
import type { NetworkAnswer } from '../network-call.js';
import { ReconnectNeededError } from '../publishing-contract.js';
import { xMessage } from './api.js';

/** Where a channel's access tokens come from: AccountTokens, which refreshes and stores them. */
export type AccessTokens = Pick<AccountTokens, 'accessToken' | 'afterRefusal'>;

/**
 * Calls of X's API with a channel's access token: refreshed shortly before it expires (X's live two
 * hours), and once more after X refuses one (401). A token still refused means the user removed the
 * app's access: the account must be connected again. A refused refresh says the same (AccountTokens).
 */
export class XTokens {
  constructor(private readonly tokens: AccessTokens) {}

  async authorized(channel: Channel, call: (authorization: string) => Promise<NetworkAnswer>): Promise<NetworkAnswer> {
    const token = await this.tokens.accessToken(channel);
    const answer = await call(`Bearer ${token}`);
    if (answer.status !== 401) return answer;
    const again = await call(`Bearer ${await this.tokens.afterRefusal(channel, token)}`);
    if (again.status === 401)
      throw new ReconnectNeededError(`X refused the account's access token (${xMessage(again)})`);
    return again;
  }
}
