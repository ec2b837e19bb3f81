import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';

/** Set to run the suite on PostgreSQL instead of the embedded PGlite. */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || undefined;
export const DIALECT = TEST_DATABASE_URL ? 'postgres' : 'pglite';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The PostgreSQL database, migrated once per run, that each test's migrated database copies. */
    postgresTemplate: string | undefined;
  }
}

/**
 * A fresh database, migrated to the latest schema unless `migrate` is false (for a test of what
 * migrates an empty one): PGlite in memory, or, with TEST_DATABASE_URL, a new PostgreSQL database of
 * its own (dropped on close) so test files never see each other's rows. Both start as copies of one
 * database made once (an embedded database takes seconds to create, a copy a fraction of one).
 */
export async function createTestDatabase({ migrate = true } = {}): Promise<
  DatabaseHandle & { url: string | undefined }
> {
  if (!TEST_DATABASE_URL) {
    const handle = await openDatabase({ initialData: await pgliteSnapshot(migrate) });
    return { ...handle, url: undefined };
  }
  const name = `test_${randomBytes(6).toString('hex')}`;
  // Vitest's global setup made the template; a script outside vitest (the drills) migrates its own.
  const template = migrate && process.env.VITEST ? inject('postgresTemplate') : undefined;
  await withAdminClient((client) => client.query(`create database ${name}${template ? ` template ${template}` : ''}`));
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  const handle = await openDatabase({ databaseUrl: url.toString(), poolSize: 20 });
  if (migrate && !template) await migrateToLatest(handle.db);
  return {
    ...handle,
    url: url.toString(),
    close: async () => {
      await handle.close();
      await dropDatabase(name);
    },
  };
}

/**
 * Makes the PostgreSQL database the tests' migrated databases copy (CREATE DATABASE … TEMPLATE); its
 * name is new for each run, so two runs beside each other never share one.
 */
export async function createPostgresTemplate(): Promise<string> {
  const name = `test_template_${randomBytes(6).toString('hex')}`;
  await withAdminClient((client) => client.query(`create database ${name}`));
  const url = new URL(TEST_DATABASE_URL!);
  url.pathname = `/${name}`;
  const handle = await openDatabase({ databaseUrl: url.toString(), poolSize: 1 });
  try {
    await migrateToLatest(handle.db);
  } finally {
    await handle.close();
  }
  return name;
}

export function dropDatabase(name: string): Promise<unknown> {
  return withAdminClient((client) => client.query(`drop database if exists ${name} with (force)`));
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

const SNAPSHOTS = path.resolve(import.meta.dirname, '../../node_modules/.cache/post-scheduler-tests');
const snapshots = new Map<boolean, Promise<Blob>>();

/**
 * An embedded database, empty or migrated, as a dump that a new one loads: made once, by the first
 * test process that needs it, and kept in node_modules/.cache under a name that changes with PGlite's
 * version and the migrations.
 */
function pgliteSnapshot(migrated: boolean): Promise<Blob> {
  let snapshot = snapshots.get(migrated);
  if (!snapshot) {
    snapshot = loadOrMakeSnapshot(migrated);
    snapshots.set(migrated, snapshot);
  }
  return snapshot;
}

async function loadOrMakeSnapshot(migrated: boolean): Promise<Blob> {
  const file = path.join(SNAPSHOTS, `pglite-${snapshotKey()}-${migrated ? 'migrated' : 'empty'}.tar`);
  if (!fs.existsSync(file)) {
    const handle = await openDatabase({});
    if (migrated) await migrateToLatest(handle.db);
    const dump = await handle.pglite!.dumpDataDir('none');
    await handle.close();
    // Written whole under another name, then renamed: a process beside this one reads all or nothing.
    fs.mkdirSync(SNAPSHOTS, { recursive: true });
    const partial = `${file}.${process.pid}-${randomBytes(4).toString('hex')}`;
    fs.writeFileSync(partial, Buffer.from(await dump.arrayBuffer()));
    fs.renameSync(partial, file);
  }
  return new Blob([fs.readFileSync(file)]);
}

function snapshotKey(): string {
  const hash = createHash('sha256');
  const root = path.resolve(import.meta.dirname, '../..');
  hash.update(fs.readFileSync(path.join(root, 'node_modules/@electric-sql/pglite/package.json')));
  for (const file of ['src/db/migrate.ts', 'src/db/database.ts']) hash.update(fs.readFileSync(path.join(root, file)));
  const migrations = path.join(root, 'src/db/migrations');
  for (const file of fs.readdirSync(migrations).sort()) hash.update(fs.readFileSync(path.join(migrations, file)));
  return hash.digest('hex').slice(0, 16);
}
