import type { Channel } from '../../channels/tables.js';
import type { AccountTokens } from '../account-tokens.js';
import type { NetworkAnswer } from '../network-call.js';
import { ReconnectNeededError } from '../publishing-contract.js';
import { linkedinLogId, linkedinMessage } from './api.js';

/** Where a channel's access tokens come from: AccountTokens, which refreshes and stores them. */
export type AccessTokens = Pick<AccountTokens, 'accessToken' | 'afterRefusal'>;

/**
 * Calls of LinkedIn's API with a channel's access token: refreshed before it expires where LinkedIn
 * gave a refresh token, and once more after LinkedIn refuses one (401). A token still refused, or one
 * that cannot be refreshed, means the member must connect the account again.
 */
export class LinkedInTokens {
  constructor(private readonly tokens: AccessTokens) {}

  async authorized(channel: Channel, call: (authorization: string) => Promise<NetworkAnswer>): Promise<NetworkAnswer> {
    const token = await this.tokens.accessToken(channel);
    const answer = await call(`Bearer ${token}`);
    if (answer.status !== 401) return answer;
    const again = await call(`Bearer ${await this.tokens.afterRefusal(channel, token)}`);
    if (again.status === 401)
      throw new ReconnectNeededError(
        `LinkedIn refused the account's access token (${linkedinMessage(again)})`,
        linkedinLogId(again),
      );
    return again;
  }
}
