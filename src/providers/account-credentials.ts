import type { Channel } from '../channels/tables.js';
import type { Keyring } from '../crypto/keyring.js';
import type { Db } from '../db/database.js';
import type { AccountCredentials } from './connection-contract.js';
import { transaction } from '../db/transaction.js';

/** The tokens of a connected channel, decrypted for the adapter that uses them. */
export function channelCredentials(keyring: Keyring, channel: Channel): AccountCredentials | undefined {
  if (!channel.credentials || !channel.external_id) return undefined;
  return JSON.parse(
    keyring.decrypt(
      channel.credentials,
      credentialsContext(channel.organization_id, channel.provider, channel.external_id),
    ),
  ) as AccountCredentials;
}

/** Where a channel's tokens are stored: they decrypt only there (a copy in another row does not). */
export function credentialsContext(organizationId: string, provider: string, externalId: string): string {
  return `channels:${organizationId}:${provider}:${externalId}:credentials`;
}

/**
 * Encrypts every connected channel's tokens, the tokens waiting to be revoked, and every pending
 * connection's verifier and the accounts its consent granted, with the keyring's current key; how many
 * values were written.
 */
export async function reencryptAccountSecrets(db: Db, keyring: Keyring): Promise<number> {
  return transaction(db, async (trx) => {
    let written = 0;
    const channels = await trx
      .selectFrom('channels')
      .selectAll()
      .where('credentials', 'is not', null)
      .forUpdate()
      .execute();
    for (const channel of channels) {
      if (!channel.external_id) continue;
      const context = credentialsContext(channel.organization_id, channel.provider, channel.external_id);
      const credentials = keyring.reencrypted(channel.credentials!, context);
      if (credentials === undefined) continue;
      await trx.updateTable('channels').set({ credentials }).where('id', '=', channel.id).execute();
      written += 1;
    }
    const revocations = await trx.selectFrom('account_revocations').selectAll().forUpdate().execute();
    for (const revocation of revocations) {
      const context = credentialsContext(revocation.organization_id, revocation.provider, revocation.external_id);
      const credentials = keyring.reencrypted(revocation.credentials, context);
      if (credentials === undefined) continue;
      await trx.updateTable('account_revocations').set({ credentials }).where('id', '=', revocation.id).execute();
      written += 1;
    }
    const pending = await trx
      .selectFrom('channel_connections')
      .select(['id', 'code_verifier', 'granted_accounts'])
      .forUpdate()
      .execute();
    for (const connection of pending) {
      const verifier = keyring.reencrypted(connection.code_verifier, verifierContext(connection.id));
      const granted =
        connection.granted_accounts === null
          ? undefined
          : keyring.reencrypted(connection.granted_accounts, grantedAccountsContext(connection.id));
      if (verifier === undefined && granted === undefined) continue;
      await trx
        .updateTable('channel_connections')
        .set({
          ...(verifier === undefined ? {} : { code_verifier: verifier }),
          ...(granted === undefined ? {} : { granted_accounts: granted }),
        })
        .where('id', '=', connection.id)
        .execute();
      written += 1;
    }
    return written;
  });
}

/** Where a pending connection's PKCE verifier is stored. */
export function verifierContext(connectionId: string): string {
  return `channel_connections:${connectionId}:code_verifier`;
}

/** Where what a pending connection's consent granted is stored, until the user chooses among its accounts. */
export function grantedAccountsContext(connectionId: string): string {
  return `channel_connections:${connectionId}:granted_accounts`;
}
