import { Migrator, type MigrationResultSet } from 'kysely';
import type { Db } from './database.js';
import { migrations } from './migrations/index.js';

export class MigrationError extends Error {
  override name = 'MigrationError';
}

/** Brings the schema to the latest migration. Safe to run from several processes at once (Kysely locks). */
export async function migrateToLatest(db: Db): Promise<string[]> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
  });
  const { error, results }: MigrationResultSet = await migrator.migrateToLatest();
  const failed = results?.find((result) => result.status === 'Error');
  if (error || failed) {
    const cause = error instanceof Error ? error.message : String(error ?? '');
    throw new MigrationError(`Migration ${failed?.migrationName ?? ''} failed: ${cause}`.trim());
  }
  return (results ?? []).map((result) => result.migrationName);
}
