import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';

/** Set to run the suite on PostgreSQL instead of the embedded PGlite. */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || undefined;
export const DIALECT = TEST_DATABASE_URL ? 'postgres' : 'pglite';

/**
 * A fresh database migrated to the latest schema: PGlite in memory, or, with TEST_DATABASE_URL, a new
 * PostgreSQL database of its own (dropped on close) so test files never see each other's rows.
 */
export async function createTestDatabase({ migrate = true } = {}): Promise<
  DatabaseHandle & { url: string | undefined }
> {
  if (!TEST_DATABASE_URL) {
    const handle = await openDatabase({});
    if (migrate) await migrateToLatest(handle.db);
    return { ...handle, url: undefined };
  }
  const name = `test_${randomBytes(6).toString('hex')}`;
  await withAdminClient((client) => client.query(`create database ${name}`));
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  const handle = await openDatabase({ databaseUrl: url.toString(), poolSize: 20 });
  if (migrate) await migrateToLatest(handle.db);
  return {
    ...handle,
    url: url.toString(),
    close: async () => {
      await handle.close();
      await withAdminClient((client) => client.query(`drop database if exists ${name} with (force)`));
    },
  };
}

async function withAdminClient<T>(use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}
