import { sql } from 'kysely';
import type { Channel } from '../channels/tables.js';
import type { Keyring } from '../crypto/keyring.js';
import type { Db } from '../db/database.js';
import { channelCredentials, credentialsContext } from './account-credentials.js';
import { ReconnectNeededError } from './adapter.js';
import { ConnectionRefusedError, type AccountCredentials, type ConnectionAdapter } from './connection.js';

interface Stored {
  credentials: AccountCredentials;
  encrypted: string;
  externalId: string;
}

// An access token this close to its expiry is refreshed before use.
const REFRESH_MARGIN_MS = 60_000;

/**
 * The access tokens of connected channels, for the adapters that call the networks: decrypted when
 * needed, refreshed shortly before they expire (and once after the network refuses one), and the
 * refreshed tokens stored encrypted at once. A store only replaces the tokens it refreshed, so two
 * workers refreshing at once never overwrite a newer pair with an older one. A refused refresh means
 * the user must connect the account again.
 */
export class AccountTokens {
  constructor(
    private readonly db: Db,
    private readonly keyring: Keyring,
    private readonly connection: ConnectionAdapter,
    private readonly clock: () => Date,
  ) {}

  /** A usable access token of the channel. */
  async accessToken(channel: Channel): Promise<string> {
    const stored = await this.current(channel);
    const expiresAt = stored.credentials.expiresAt ? Date.parse(stored.credentials.expiresAt) : Infinity;
    if (expiresAt - REFRESH_MARGIN_MS > this.clock().getTime()) return stored.credentials.accessToken;
    return (await this.refresh(channel, stored)).accessToken;
  }

  /** After the network refused `rejected`: a fresh access token, unless another worker refreshed it meanwhile. */
  async afterRefusal(channel: Channel, rejected: string): Promise<string> {
    const stored = await this.current(channel);
    if (stored.credentials.accessToken !== rejected) return stored.credentials.accessToken;
    return (await this.refresh(channel, stored)).accessToken;
  }

  /** The channel's tokens, and the encrypted value they were read from. */
  private async current(channel: Channel): Promise<Stored> {
    const row = await this.db.selectFrom('channels').selectAll().where('id', '=', channel.id).executeTakeFirst();
    const credentials = row && channelCredentials(this.keyring, row);
    if (!row?.credentials || !row.external_id || !credentials) {
      throw new ReconnectNeededError(`the channel ${channel.name} holds no credentials; connect it in Settings → Channels`);
    }
    return { credentials, encrypted: row.credentials, externalId: row.external_id };
  }

  private async refresh(channel: Channel, stored: Stored): Promise<AccountCredentials> {
    let fresh: AccountCredentials;
    try {
      fresh = await this.connection.refresh(stored.credentials);
    } catch (error) {
      if (error instanceof ConnectionRefusedError) throw new ReconnectNeededError(error.message);
      throw error;
    }
    const context = credentialsContext(channel.organization_id, channel.provider, stored.externalId);
    // Replaces the pair it refreshed only: a pair another worker stored meanwhile stays.
    await sql`update channels set credentials = ${this.keyring.encrypt(JSON.stringify(fresh), context)}
      where id = ${channel.id} and credentials = ${stored.encrypted}`.execute(this.db);
    return fresh;
  }
}
