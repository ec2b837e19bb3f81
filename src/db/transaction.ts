import type { Transaction } from 'kysely';
import { SpanKind, traced } from '../core/tracing.js';
import type { Db } from './database.js';
import type { Database } from './schema.js';

/** A transaction's span: PGlite is PostgreSQL too. */
export const TRANSACTION_SPAN = { kind: SpanKind.INTERNAL, attributes: { 'db.system.name': 'postgresql' } };

/**
 * Runs `work` in a transaction (Kysely's `db.transaction().execute`), which commits when `work`
 * resolves and rolls back when it throws. Every transaction of the service goes through here or
 * through `pipelinedTransaction`, so that what every transaction does besides is written once: inside
 * a trace it is a span, whose children are what `work` does (the jobs it plans).
 */
export function transaction<T>(db: Db, work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  return traced('transaction', TRANSACTION_SPAN, () => db.transaction().execute(work));
}

/** Runs `work` in the transaction `db` is, or in a new one: for a change that may be part of a larger one. */
export function inTransaction<T>(db: Db, work: (trx: Db) => Promise<T>): Promise<T> {
  return db.isTransaction ? work(db) : transaction(db, work);
}
