import type { Generated, Insertable, Selectable } from 'kysely';
import type { ChannelStatus, Provider } from '../core/contract.js';

/** What the database holds of a channel's state: the contract's statuses, and `removed`. */
export type ChannelState = ChannelStatus | 'removed';
import type { CreatedAt } from '../db/columns.js';

export interface ChannelTable {
  id: string;
  organization_id: string;
  provider: Provider;
  name: string;
  username: string | null;
  picture: string | null;
  /** `active`, `needs_reconnect`, `disabled` (the contract's ChannelStatus), or `removed`: gone from every list, its posts kept. */
  status: Generated<ChannelState>;
  /** The account's id on its network, for a channel a user connected: connecting it again updates this channel. */
  external_id: Generated<string | null>;
  /** The account's tokens, encrypted (see channels/credentials.ts); null for a channel added by the operator. */
  credentials: Generated<string | null>;
  connected_at: Generated<Date | null>;
  created_at: CreatedAt;
}

/** An authorization in progress: the user is at the network's consent page. */
export interface ChannelConnectionTable {
  id: string;
  state_hash: string;
  organization_id: string;
  provider: Provider;
  /** The PKCE verifier, encrypted. */
  code_verifier: string;
  session_id: string | null;
  created_at: Generated<Date>;
  expires_at: Date;
}

export interface ChannelTables {
  channels: ChannelTable;
  channel_connections: ChannelConnectionTable;
}

export type Channel = Selectable<ChannelTable>;
export type NewChannel = Insertable<ChannelTable>;

declare module '../db/schema.js' {
  // Adds this feature's tables to the database type (see src/db/schema.ts).
  interface Database extends ChannelTables {}
}
