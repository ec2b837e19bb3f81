import type { Selectable } from 'kysely';
import type { CreatedAt } from '../../db/columns.js';

/** An app this installation registered on a Mastodon instance (`POST /api/v1/apps`). */
export interface MastodonAppTable {
  id: string;
  /** The instance's origin (`https://mastodon.social`). */
  instance: string;
  /** The callback URL registered with it: a new PUBLIC_URL registers another app. */
  redirect_uri: string;
  /** The scopes registered, separated by spaces: an authorization may ask for these only. */
  scopes: string;
  client_id: string;
  /** Encrypted (see `appSecretContext`). */
  client_secret: string;
  created_at: CreatedAt;
}

export type MastodonApp = Selectable<MastodonAppTable>;

declare module '../../db/schema.js' {
  // Adds this feature's tables to the database type (see src/db/schema.ts).
  interface Database {
    mastodon_apps: MastodonAppTable;
  }
}
