import type { CreatedAt } from './columns.js';

/**
 * The database as Kysely sees it. Each feature declares its tables beside its code (its
 * `tables.ts`) and adds them to this interface by module augmentation, so the database type is
 * assembled here without src/db importing any feature.
 */
export interface Database {
  instance_secrets: InstanceSecretTable;
}

/** A key of this installation (see instance-secrets.ts). */
export interface InstanceSecretTable {
  name: string;
  value: string;
  created_at: CreatedAt;
}
