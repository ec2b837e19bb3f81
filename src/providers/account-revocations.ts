import { newId } from '../core/ids.js';
import type { Db } from '../db/database.js';
import type { Channel } from '../channels/tables.js';
import { credentialsContext } from './account-credentials.js';
import { ConnectionRefusedError, type AccountCredentials } from './connection-contract.js';
import { connectedThrough } from './facebook/connection.js';
import type { ProvidersContext } from './registry.js';

/** How long the service keeps asking a network to revoke a removed channel's tokens. */
const GIVE_UP_AFTER_MS = 24 * 60 * 60_000;
/** A claimed revocation is not claimed again for this long (a worker that died with it lets it go). */
const CLAIM_MS = 10 * 60_000;
const BATCH = 20;

/**
 * Takes a removed channel's tokens off the channel, in the caller's transaction, and keeps them for
 * revocation at the network: nothing of the account is usable from this installation afterwards.
 */
export async function queueRevocation(trx: Db, channel: Channel): Promise<void> {
  if (!channel.credentials || !channel.external_id) return;
  await trx
    .insertInto('account_revocations')
    .values({
      id: newId('rev'),
      organization_id: channel.organization_id,
      provider: channel.provider,
      external_id: channel.external_id,
      credentials: channel.credentials,
    })
    .execute();
  await trx.updateTable('channels').set({ credentials: null }).where('id', '=', channel.id).execute();
}

/**
 * The account is connected again: its old tokens are not revoked (at some networks revoking one
 * token ends every grant of the account to the app, the new one too).
 */
export async function cancelRevocations(
  trx: Db,
  account: { organizationId: string; provider: string; externalId: string },
): Promise<void> {
  await trx
    .deleteFrom('account_revocations')
    .where('organization_id', '=', account.organizationId)
    .where('provider', '=', account.provider as Channel['provider'])
    .where('external_id', '=', account.externalId)
    .execute();
}

/**
 * Asks the networks to revoke the tokens of removed channels (housekeeping). A revocation done, or
 * refused because the network no longer knows the token, is forgotten; one that did not get through
 * is tried again later, with a growing wait, for a day.
 */
export async function revokeRemovedAccounts(ctx: ProvidersContext): Promise<void> {
  const now = ctx.clock.now();
  const claimed = await ctx.db
    .updateTable('account_revocations')
    .set({ next_attempt_at: new Date(now.getTime() + CLAIM_MS) })
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('account_revocations')
        .select('id')
        .where('next_attempt_at', '<=', now)
        .orderBy('next_attempt_at')
        .limit(BATCH),
    )
    .where('next_attempt_at', '<=', now)
    .returningAll()
    .execute();
  for (const revocation of claimed) {
    try {
      // The account is connected here again, maybe in another organization (one deleted and started
      // over): revoking its old tokens could end the grant it is connected with now.
      const connectedAgain = await ctx.db
        .selectFrom('channels')
        .select('id')
        .where('provider', '=', revocation.provider)
        .where('external_id', '=', revocation.external_id)
        .where('credentials', 'is not', null)
        .executeTakeFirst();
      if (connectedAgain) {
        await ctx.db.deleteFrom('account_revocations').where('id', '=', revocation.id).execute();
        continue;
      }
      const context = credentialsContext(revocation.organization_id, revocation.provider, revocation.external_id);
      const credentials = JSON.parse(ctx.keyring.decrypt(revocation.credentials, context)) as AccountCredentials;
      // Revoked where it was connected (an Instagram account's Page token at Facebook).
      const connection = ctx.providers[connectedThrough(revocation.provider, credentials)].connection;
      // A password the user made for this service (a sign-in network's) is revoked by its owner only.
      if (connection?.kind === 'consent') await connection.revoke(credentials);
    } catch (error) {
      if (!(error instanceof ConnectionRefusedError)) {
        const attempts = revocation.attempts + 1;
        if (now.getTime() - revocation.created_at.getTime() < GIVE_UP_AFTER_MS) {
          const waitMs = Math.min(60 * 60_000, 60_000 * 2 ** attempts);
          await ctx.db
            .updateTable('account_revocations')
            .set({ attempts, next_attempt_at: new Date(now.getTime() + waitMs) })
            .where('id', '=', revocation.id)
            .execute();
          continue;
        }
        ctx.logger.warn(
          { err: error, provider: revocation.provider, attempts },
          'gave up revoking the tokens of a removed channel at its network',
        );
      }
    }
    await ctx.db.deleteFrom('account_revocations').where('id', '=', revocation.id).execute();
  }
}
