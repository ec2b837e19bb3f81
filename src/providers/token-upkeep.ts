import { markNeedsReconnect } from '../channels/channels.js';
import { channelCredentials } from './account-credentials.js';
import { AccountTokens } from './account-tokens.js';
import { ReconnectNeededError } from './publishing-contract.js';
import type { ProvidersContext } from './registry.js';

/**
 * Refreshes ahead of use the tokens of connected channels on networks that refresh a token only while
 * it is still good (`refreshBeforeExpiryMs`: Meta's 60-day tokens), so that an account with nothing to
 * publish for two months stays connected. A token the network no longer refreshes (expired, or the
 * app removed by the account's owner) marks its channel `needs_reconnect`. A housekeeping step; the
 * refresh itself is AccountTokens's, one worker at a time.
 */
export async function refreshTokensAhead(ctx: ProvidersContext): Promise<void> {
  const now = ctx.clock.now().getTime();
  for (const network of Object.values(ctx.providers)) {
    const connection = network.connection;
    if (connection?.kind !== 'consent' || connection.refreshBeforeExpiryMs === undefined) continue;
    const tokens = new AccountTokens(ctx.db, ctx.keyring, connection, ctx.clock, ctx.metrics);
    const channels = await ctx.db
      .selectFrom('channels')
      .selectAll()
      .where('provider', '=', network.provider)
      .where('status', 'in', ['active', 'disabled'])
      .where('credentials', 'is not', null)
      .execute();
    for (const channel of channels) {
      // One channel that cannot be read or refreshed stops neither the others nor the rest of housekeeping.
      try {
        const expiresAt = channelCredentials(ctx.keyring, channel)?.expiresAt;
        if (!expiresAt || Date.parse(expiresAt) - connection.refreshBeforeExpiryMs > now) continue;
        await tokens.accessToken(channel);
      } catch (error) {
        if (error instanceof ReconnectNeededError) await markNeedsReconnect(ctx.db, channel.id, ctx.clock.now());
        else ctx.logger.warn({ err: error, provider: network.provider }, 'refreshing a channel’s token ahead failed');
      }
    }
  }
}
