import path from 'node:path';
import type { EnvReader } from './env-reader.js';

/** Where the service keeps its data, and the key its stored secrets are encrypted with. */
export interface DatabaseSettings {
  /** Directory of the embedded database and locally stored files. */
  dataDir: string;
  /** PostgreSQL connection string; when absent the embedded PGlite database in `dataDir` is used. */
  databaseUrl: string | undefined;
  /**
   * Send the statements a process repeats as named (prepared) statements on PostgreSQL
   * (DATABASE_PREPARED_STATEMENTS, default true); `false` behind a pooler in transaction mode (PgBouncer).
   */
  databasePreparedStatements: boolean;
  /** ENCRYPTION_KEY as given (read by src/crypto/key-source.ts); without it, a key file in `dataDir`. */
  encryptionKey: string | undefined;
}

export function readDatabase(read: EnvReader): DatabaseSettings {
  const databaseUrl = read.text('DATABASE_URL');
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    read.problem('DATABASE_URL must be a postgres:// or postgresql:// connection string');
  }
  return {
    dataDir: path.resolve(read.text('DATA_DIR') || './data'),
    databaseUrl,
    databasePreparedStatements: read.boolean('DATABASE_PREPARED_STATEMENTS', true),
    encryptionKey: read.text('ENCRYPTION_KEY'),
  };
}
