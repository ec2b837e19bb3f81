import type { Transaction } from 'kysely';
import type { Db } from './database.js';
import type { Database } from './schema.js';

/**
 * Runs `work` in a transaction (Kysely's `db.transaction().execute`), which commits when `work`
 * resolves and rolls back when it throws. Every transaction of the service goes through here or
 * through `pipelinedTransaction`, so that what every transaction does besides (being a span in a
 * trace) is written once.
 */
export function transaction<T>(db: Db, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  return db.transaction().execute(work);
}
