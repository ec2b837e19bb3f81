import type { Channel } from '../../channels/tables.js';
import type { Keyring } from '../../crypto/keyring.js';
import type { Db } from '../../db/database.js';
import { channelCredentials } from '../account-credentials.js';
import type { AccountTokens } from '../account-tokens.js';
import type { AccountCredentials } from '../connection-contract.js';
import { ReconnectNeededError } from '../publishing-contract.js';
import type { InstagramApi, InstagramCredentials } from './credentials.js';

/** Which of Meta's two Instagram APIs an account is reached through (see `InstagramApi`). */
export type InstagramApiKind = InstagramApi['api'];

/** An Instagram account as publishing reaches it: its id (the `{ig-user-id}` of every path), API and token. */
export interface InstagramAccount {
  igUserId: string;
  api: InstagramApiKind;
  accessToken: string;
}

/** The account in a channel's stored credentials; `undefined` when they are not an Instagram account's. */
export function instagramAccountOf(externalId: string, stored: AccountCredentials): InstagramAccount | undefined {
  const api = (stored as Partial<InstagramCredentials>).instagram?.api;
  if ((api !== 'facebook' && api !== 'instagram') || !stored.accessToken) return undefined;
  return { igUserId: externalId, api, accessToken: stored.accessToken };
}

/** Where the adapter finds a channel's account: read as stored now (a reconnection may have replaced it). */
export interface InstagramAccounts {
  account(channel: Channel): Promise<InstagramAccount>;
}

/**
 * The accounts as the channels store them; an Instagram Login token through `tokens`, which refreshes
 * it on use once it is near its end (absent without the operator's Instagram Login app).
 */
export class StoredInstagramAccounts implements InstagramAccounts {
  constructor(
    private readonly db: Db,
    private readonly keyring: Keyring,
    private readonly tokens: Pick<AccountTokens, 'accessToken'> | undefined,
  ) {}

  async account(channel: Channel): Promise<InstagramAccount> {
    const row = await this.db.selectFrom('channels').selectAll().where('id', '=', channel.id).executeTakeFirst();
    const credentials = row && channelCredentials(this.keyring, row);
    const account = row?.external_id && credentials && instagramAccountOf(row.external_id, credentials);
    if (!account)
      throw new ReconnectNeededError(
        `the channel ${channel.name} holds no Instagram credentials; connect it in Settings → Channels`,
      );
    if (account.api === 'instagram' && this.tokens)
      return { ...account, accessToken: await this.tokens.accessToken(channel) };
    return account;
  }
}
