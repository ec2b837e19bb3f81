import type { components } from '../../generated/public-v1.js';
import { sql } from 'kysely';
import { newId } from '../core/ids.js';
import { compiledOnce } from '../db/compiled-once.js';
import type { Db } from '../db/database.js';
import type { Channel, NewChannel } from './tables.js';

export type ChannelBody = components['schemas']['Channel'];

export function toChannelBody(channel: Channel): ChannelBody {
  return {
    id: channel.id,
    provider: channel.provider,
    name: channel.name,
    username: channel.username,
    picture: channel.picture,
    status: channel.status === 'removed' ? 'disabled' : channel.status,
    disabled: !acceptsPosts(channel),
    createdAt: channel.created_at.toISOString(),
  };
}

/** Only an active channel takes new posts and publishes. */
export function acceptsPosts(channel: Pick<Channel, 'status'>): boolean {
  return channel.status === 'active';
}

/** The organization's channels in the order lists show them, to select from. */
export function channelsOf(db: Db, organizationId: string) {
  return db
    .selectFrom('channels')
    .where('channels.organization_id', '=', organizationId)
    .where('channels.status', '<>', 'removed')
    .orderBy('channels.created_at')
    .orderBy('channels.id');
}

const channelsOfOrganization = compiledOnce(1, (db, organizationId: string) =>
  channelsOf(db, organizationId).selectAll(),
);

export async function listChannels(db: Db, organizationId: string): Promise<Channel[]> {
  return (await db.executeQuery(channelsOfOrganization(db, organizationId))).rows;
}

/** A channel of this organization; another organization's channel is `undefined`, exactly like an unknown one. */
export function findChannel(db: Db, organizationId: string, channelId: string): Promise<Channel | undefined> {
  return db
    .selectFrom('channels')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('id', '=', channelId)
    .where('status', '<>', 'removed')
    .executeTakeFirst();
}

/**
 * A user turns a channel off (`disabled`) or on again (`active`). Enabling does not reconnect: a
 * channel that needs reconnecting stays so until its account is connected again.
 */
export async function setChannelEnabled(
  db: Db,
  organizationId: string,
  channelId: string,
  enabled: boolean,
): Promise<Channel | undefined> {
  const [from, to] = enabled ? (['disabled', 'active'] as const) : (['active', 'disabled'] as const);
  await db
    .updateTable('channels')
    .set({ status: to })
    .where('organization_id', '=', organizationId)
    .where('id', '=', channelId)
    .where('status', '=', from)
    .execute();
  return findChannel(db, organizationId, channelId);
}

/** The network refused the channel's credentials: it takes no posts until a user connects it again. */
export async function markNeedsReconnect(db: Db, channelId: string, at: Date): Promise<void> {
  // The change and its event in one statement: webhooks hear of it once, when it happens.
  await sql`
    with changed as (
      update channels set status = 'needs_reconnect' where id = ${channelId} and status = 'active'
      returning organization_id, id
    )
    insert into channel_events (organization_id, channel_id, type, at)
    select organization_id, id, 'needs_reconnect', ${at}::timestamptz from changed`.execute(db);
}

export function addChannel(db: Db, channel: Omit<NewChannel, 'id'>): Promise<Channel> {
  return db
    .insertInto('channels')
    .values({ id: newId('ch'), ...channel })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * Locks the channels' rows for the rest of the transaction, in id order so that two transactions
 * never wait on each other in a cycle. Posts counted against a channel's quota are inserted or
 * scheduled only under this lock, so two concurrent requests cannot both take the last slot.
 */
export function lockChannels(trx: Db, organizationId: string, channelIds: string[]): Promise<Channel[]> {
  return trx
    .selectFrom('channels')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('id', 'in', [...new Set(channelIds)])
    .orderBy('id')
    .forNoKeyUpdate()
    .execute();
}

/** Like `lockChannels`, for a write that needs only to know whether each channel still takes posts. */
export function lockChannelStates(
  trx: Db,
  organizationId: string,
  channelIds: string[],
): Promise<Pick<Channel, 'id' | 'status'>[]> {
  return trx
    .selectFrom('channels')
    .select(['id', 'status'])
    .where('organization_id', '=', organizationId)
    .where('id', 'in', [...new Set(channelIds)])
    .orderBy('id')
    .forNoKeyUpdate()
    .execute();
}
