import type { Generated, Insertable, Selectable } from 'kysely';
import type { Provider } from '../core/contract.js';
import type { CreatedAt } from '../db/columns.js';

export interface ChannelTable {
  id: string;
  organization_id: string;
  provider: Provider;
  name: string;
  username: string | null;
  picture: string | null;
  disabled: Generated<boolean>;
  created_at: CreatedAt;
}

export interface ChannelTables {
  channels: ChannelTable;
}

export type Channel = Selectable<ChannelTable>;
export type NewChannel = Insertable<ChannelTable>;

declare module '../db/schema.js' {
  // Adds this feature's tables to the database type (see src/db/schema.ts).
  interface Database extends ChannelTables {}
}
