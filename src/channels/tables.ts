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
  /**
   * `active`, `needs_reconnect`, `disabled` (the contract's ChannelStatus), or `removed`: gone from
   * every list, its posts kept.
   */
  status: Generated<ChannelState>;
  /** The account's id on its network, for a channel a user connected: connecting it again updates this channel. */
  external_id: Generated<string | null>;
  /**
   * The account's tokens, encrypted (see providers/account-credentials.ts); null for a channel added
   * by the operator.
   */
  credentials: Generated<string | null>;
  connected_at: Generated<Date | null>;
  /** Until when a worker is refreshing the tokens: the others wait for its result. */
  refreshing_until: Generated<Date | null>;
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
  /** The browser session that started it in the web app: only that session may finish it. */
  session_id: string | null;
  /** For a connection started through the Public API: where the user goes back to, with the caller's `state`. */
  return_url: Generated<string | null>;
  client_state: Generated<string | null>;
  /** The OAuth app that started it, when its access token did. */
  app_id: Generated<string | null>;
  /** The API key that started it, when one did (for the audit log). */
  api_key_id: Generated<string | null>;
  /**
   * The server the account lives on, for a network whose accounts live on servers of their own (a
   * Mastodon instance's origin); null until the user named it, and for the other networks.
   */
  site: Generated<string | null>;
  /** On a network whose users sign in on a page of this server: the passwords tried so far. */
  sign_in_attempts: Generated<number>;
  /**
   * On a network whose one consent reaches several accounts (Facebook's Pages and Instagram accounts): what
   * it granted (`GrantedAccounts`), encrypted, from the network's answer until the user chooses among them;
   * null before the answer, and on the other networks.
   */
  granted_accounts: Generated<string | null>;
  created_at: Generated<Date>;
  expires_at: Date;
}

/** An origin the organization's API keys may send users back to after connecting an account. */
export interface ConnectionReturnOriginTable {
  organization_id: string;
  /** `scheme://host[:port]`, as `URL.origin` writes it. */
  origin: string;
  created_at: Generated<Date>;
}

/** A removed channel's tokens, kept (encrypted, as they were) until the network has revoked them. */
export interface AccountRevocationTable {
  id: string;
  organization_id: string;
  provider: Provider;
  external_id: string;
  credentials: string;
  attempts: Generated<number>;
  created_at: Generated<Date>;
  next_attempt_at: Generated<Date>;
}

/**
 * A change of a channel that webhooks report as `channel.<type>` (`connected`, `needs_reconnect`, `expiring`):
 * the channels' outbox.
 */
export interface ChannelEventTable {
  id: Generated<string>;
  organization_id: string;
  channel_id: string;
  /** `expiring`: the channel's access ends within a week (shown in the web app too). */
  type: 'connected' | 'needs_reconnect' | 'expiring';
  at: Date;
  /** When the webhook dispatcher made the event's deliveries; `null` until then. */
  webhooks_dispatched_at: Date | null;
}

/**
 * When a channel's access ends unless the user connects it again, where the network says and no refresh
 * renews it (Meta's data access expiry): the user is warned a week before (an `expiring` event).
 */
export interface ChannelAccessEndTable {
  channel_id: string;
  ends_at: Date;
}

/** One weekly posting slot of a channel, read in its organization's time zone. */
export interface ChannelSlotTable {
  channel_id: string;
  /** ISO weekday: 1 is Monday, 7 is Sunday. */
  weekday: number;
  /** The minute of the local day, 0 to 1439. */
  minute: number;
}

export type Channel = Selectable<ChannelTable>;
export type NewChannel = Insertable<ChannelTable>;

declare module '../db/schema.js' {
  // Adds this feature's tables to the database type (see src/db/schema.ts).
  interface Database {
    channels: ChannelTable;
    channel_connections: ChannelConnectionTable;
    connection_return_origins: ConnectionReturnOriginTable;
    account_revocations: AccountRevocationTable;
    channel_events: ChannelEventTable;
    channel_access_ends: ChannelAccessEndTable;
    channel_slots: ChannelSlotTable;
  }
}
