import { inspect } from 'node:util';
import { sql } from 'kysely';
import { Migrator, type MigrationResultSet } from 'kysely/migration';
import type { Db } from './database.js';
import { migrations } from './migrations/index.js';

export class MigrationError extends Error {
  override name = 'MigrationError';
}

/**
 * Whether the database has exactly the migrations this version knows, read with one query. Kysely's
 * migrator first introspects the whole schema and takes its lock, which is most of what a start on an
 * up-to-date database would spend migrating.
 */
async function isUpToDate(db: Db): Promise<boolean> {
  try {
    const { rows } = await sql<{ name: string }>`select name from kysely_migration`.execute(db);
    const applied = new Set(rows.map((row) => row.name));
    const known = Object.keys(migrations);
    return applied.size === known.length && known.every((name) => applied.has(name));
  } catch {
    return false; // no migration table yet: a new database
  }
}

/** Brings the schema to the latest migration. Safe to run from several processes at once (Kysely locks). */
export async function migrateToLatest(db: Db): Promise<string[]> {
  if (await isUpToDate(db)) return [];
  const migrator = new Migrator({
    db,
    provider: { getMigrations: () => Promise.resolve(migrations) },
  });
  const { error, results }: MigrationResultSet = await migrator.migrateToLatest();
  const failed = results?.find((result) => result.status === 'Error');
  if (error || failed) {
    throw new MigrationError(`Migration ${failed?.migrationName ?? ''} failed: ${describeFailure(error)}`.trim());
  }
  return (results ?? []).map((result) => result.migrationName);
}

/** What a migration threw, for the message: an Error's message, a string as it is, anything else as it prints. */
function describeFailure(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (error === undefined || error === null) return '';
  return typeof error === 'string' ? error : inspect(error);
}
