import { sql } from 'kysely';
import type { Db } from './database.js';

/** A transaction under way: its statements run on `trx`; `commit` ends it. */
export interface PipelinedTransaction {
  trx: Db;
  /**
   * Commits after the statements `last` stands for, which the caller has started without waiting for
   * them: they and the COMMIT travel together. If one of them fails, the transaction is rolled back
   * (PostgreSQL answers the COMMIT of a failed transaction with a rollback) and its error is thrown.
   */
  commit(...last: Promise<unknown>[]): Promise<void>;
}

/**
 * A transaction that waits for the database only where the caller needs an answer. On PostgreSQL the
 * connections are pipelined (see `openDatabase`): a statement is sent as soon as it is started, and the
 * server runs them in order, so BEGIN goes out with the first statements and COMMIT with the last ones
 * instead of costing a round trip each. On the embedded database the statements run one after another
 * as before. The work starts statements on `trx` (without awaiting those whose answer it does not need
 * yet) and ends with `commit`; anything it throws rolls the transaction back.
 */
export async function pipelinedTransaction<T>(db: Db, work: (transaction: PipelinedTransaction) => Promise<T>): Promise<T> {
  return db.connection().execute(async (trx) => {
    const begun = sql`begin`.execute(trx);
    // Awaited with the commit, or before the rollback; until then a failure must not go unhandled.
    begun.catch(() => {});
    let ended = false;
    const transaction: PipelinedTransaction = {
      trx,
      commit: async (...last) => {
        ended = true;
        const committed = sql`commit`.execute(trx);
        for (const statement of last) statement.catch(() => {});
        await Promise.all([begun, ...last, committed]);
      },
    };
    try {
      const result = await work(transaction);
      if (!ended) throw new Error('a pipelined transaction ended without commit');
      return result;
    } catch (error) {
      if (!ended) {
        ended = true;
        await begun.catch(() => {});
        await sql`rollback`.execute(trx);
      }
      throw error;
    }
  });
}
