import type { components } from '../../generated/public-v1.js';
import { newId } from '../core/ids.js';
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
    disabled: channel.disabled,
    createdAt: channel.created_at.toISOString(),
  };
}

export function listChannels(db: Db, organizationId: string): Promise<Channel[]> {
  return db
    .selectFrom('channels')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** A channel of this organization; another organization's channel is `undefined`, exactly like an unknown one. */
export function findChannel(db: Db, organizationId: string, channelId: string): Promise<Channel | undefined> {
  return db
    .selectFrom('channels')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('id', '=', channelId)
    .executeTakeFirst();
}

export function addChannel(db: Db, channel: Omit<NewChannel, 'id'>): Promise<Channel> {
  return db
    .insertInto('channels')
    .values({ id: newId('ch'), ...channel })
    .returningAll()
    .executeTakeFirstOrThrow();
}
