import type { Clock } from '../core/clock.js';
import type { Metrics } from '../core/metrics.js';
import { sql } from 'kysely';
import type { Channel } from '../channels/tables.js';
import type { Keyring } from '../crypto/keyring.js';
import type { Db } from '../db/database.js';
import { channelCredentials, credentialsContext } from './account-credentials.js';
import { PublishError, ReconnectNeededError, TransientPublishError } from './publishing-contract.js';
import { ConnectionRefusedError, type AccountCredentials, type ConsentConnection } from './connection-contract.js';

interface Stored {
  credentials: AccountCredentials;
  encrypted: string;
  externalId: string;
}

// An access token this close to its expiry is refreshed before use, unless its network asks for more.
const REFRESH_MARGIN_MS = 60_000;
/**
 * How long a worker may take to refresh a channel's tokens before another may try: well above the
 * longest token call (30 seconds at every network), so that no worker takes the lease of a refresh
 * still in flight and spends the refresh token it is spending.
 */
const REFRESH_LEASE_MS = 120_000;
/** How long a worker waits for another's refresh, looking every REFRESH_POLL_MS. */
const REFRESH_WAIT_MS = 45_000;
const REFRESH_POLL_MS = 200;

/**
 * The channel's access token could not be refreshed for now: the network's token endpoint failed or
 * could not be reached, or another worker's refresh did not finish in time. Trying again later may
 * work; the call it was for was not made. A publication counts it as a passing failure whose step may
 * have got through (as for any call without an answer); a read (creator info, analytics, boards) answers
 * 502.
 */
export class TokenRefreshFailedError extends TransientPublishError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, { answered: false });
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}

/**
 * The access tokens of connected channels, for the adapters that call the networks: decrypted when
 * needed, refreshed shortly before they expire (and once after the network refuses one), and the
 * refreshed tokens stored encrypted at once. One worker refreshes an account at a time (the others
 * use its result), so a refresh token a network accepts only once is never spent twice, and a newer
 * pair is never overwritten with an older one. A refused refresh means the user must connect the
 * account again.
 */
export class AccountTokens {
  constructor(
    private readonly db: Db,
    private readonly keyring: Keyring,
    private readonly connection: ConsentConnection,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
  ) {}

  /** A usable access token of the channel. */
  async accessToken(channel: Channel): Promise<string> {
    const stored = await this.current(channel);
    const expiresAt = stored.credentials.expiresAt ? Date.parse(stored.credentials.expiresAt) : Infinity;
    const now = this.clock.now().getTime();
    if (expiresAt - (this.connection.refreshBeforeExpiryMs ?? REFRESH_MARGIN_MS) > now)
      return stored.credentials.accessToken;
    if (expiresAt - REFRESH_MARGIN_MS <= now) return (await this.refresh(channel, stored)).accessToken;
    // Refreshed early: a network that cannot be reached now leaves the token in use while it is good.
    try {
      return (await this.refresh(channel, stored)).accessToken;
    } catch (error) {
      if (error instanceof ReconnectNeededError) throw error;
      return stored.credentials.accessToken;
    }
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
      throw new ReconnectNeededError(
        `the channel ${channel.name} holds no credentials; connect it in Settings → Channels`,
      );
    }
    return { credentials, encrypted: row.credentials, externalId: row.external_id };
  }

  /**
   * Refreshes the tokens `seen`, one worker at a time: the one that takes the channel's refresh lease
   * asks the network and stores the new pair; the others wait for it and use that pair. A network
   * that rotates refresh tokens accepts each once, so two refreshes with the same token would lose
   * the account.
   */
  private async refresh(channel: Channel, seen: Stored): Promise<AccountCredentials> {
    // How long to wait is a duration: measured on the monotonic timer, not read from the clock.
    const giveUpAt = performance.now() + REFRESH_WAIT_MS;
    for (;;) {
      const now = this.clock.now();
      const lease = new Date(now.getTime() + REFRESH_LEASE_MS);
      const { rows } = await sql<{
        id: string;
      }>`update channels set refreshing_until = ${lease}
        where id = ${channel.id} and credentials = ${seen.encrypted}
          and (refreshing_until is null or refreshing_until < ${now})
        returning id`.execute(this.db);
      if (rows.length > 0) return this.refreshHolding(channel, seen, lease);
      // Another worker refreshes, or has refreshed: its pair, once stored.
      const current = await this.current(channel);
      if (current.encrypted !== seen.encrypted) return current.credentials;
      if (performance.now() > giveUpAt)
        throw new TokenRefreshFailedError('another worker’s refresh of the account’s tokens did not finish in time');
      await new Promise((resolve) => setTimeout(resolve, REFRESH_POLL_MS));
    }
  }

  /**
   * The refresh under the lease this worker took (`lease`, its end, names it): only that lease is let go,
   * never one another worker took since. A refused refresh token may have been spent by another worker
   * (its lease taken after this one's ran out): the pair it stored is used then, not given up on.
   */
  private async refreshHolding(channel: Channel, seen: Stored, lease: Date): Promise<AccountCredentials> {
    let fresh: AccountCredentials;
    try {
      fresh = await this.connection.refresh(seen.credentials);
    } catch (error) {
      this.metrics.tokenRefreshFailures.inc({ network: channel.provider });
      await sql`update channels set refreshing_until = null
        where id = ${channel.id} and refreshing_until = ${lease}`.execute(this.db);
      if (error instanceof ConnectionRefusedError) {
        const current = await this.current(channel);
        if (current.encrypted !== seen.encrypted) return current.credentials;
        throw new ReconnectNeededError(error.message, error.logId);
      }
      // The network's own verdict (unreachable, overloaded) stands; anything else is said as what it was for.
      if (error instanceof PublishError) throw error;
      throw new TokenRefreshFailedError(
        `the network's token endpoint could not refresh the access token (${(error as Error).message})`,
        { cause: error },
      );
    }
    const context = credentialsContext(channel.organization_id, channel.provider, seen.externalId);
    // Replaces the pair it refreshed only: a pair connected anew meanwhile stays.
    const credentials = this.keyring.encrypt(JSON.stringify(fresh), context);
    await sql`update channels set credentials = ${credentials},
        refreshing_until = case when refreshing_until = ${lease} then null else refreshing_until end
      where id = ${channel.id} and credentials = ${seen.encrypted}`.execute(this.db);
    return fresh;
  }
}
