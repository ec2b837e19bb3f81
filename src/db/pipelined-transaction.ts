import {
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  sql,
  type DatabaseConnection,
  type Driver,
} from 'kysely';
import type { Db } from './database.js';
import type { Database } from './schema.js';

/**
 * Hands one connection to every statement at once, where Kysely's own single-connection handle waits
 * for each statement to finish before it starts the next.
 */
class OneConnection implements Driver {
  constructor(private readonly connection: DatabaseConnection) {}
  async init(): Promise<void> {}
  async acquireConnection(): Promise<DatabaseConnection> {
    return this.connection;
  }
  async beginTransaction(): Promise<void> {
    throw new Error('a pipelined transaction begins and ends itself');
  }
  async commitTransaction(): Promise<void> {
    throw new Error('a pipelined transaction begins and ends itself');
  }
  async rollbackTransaction(): Promise<void> {
    throw new Error('a pipelined transaction begins and ends itself');
  }
  async releaseConnection(): Promise<void> {}
  async destroy(): Promise<void> {}
}

/** A transaction under way: its statements run on `trx`; `commit` ends it. */
export interface PipelinedTransaction {
  trx: Db;
  /**
   * Commits after the statements `last` stands for, which the caller has started (sent) without waiting
   * for them: they and the COMMIT travel together. If one of them fails, the transaction is rolled back
   * (PostgreSQL answers the COMMIT of a failed transaction with a rollback) and its error is thrown.
   */
  commit(...last: Promise<unknown>[]): Promise<void>;
}

/**
 * A transaction that waits for the database only where the caller needs an answer. The statements
 * started on `trx` are sent at once, in the order they are started, and the database runs them in that
 * order: on PostgreSQL, whose connections are pipelined (see `openDatabase`), BEGIN goes out with the
 * first statements and COMMIT with the last ones instead of costing a round trip each, and statements
 * that need no answer in between share one. On the embedded database they run one after another in the
 * same order. The work ends with `commit`; anything it throws rolls the transaction back.
 */
export async function pipelinedTransaction<T>(
  db: Db,
  work: (transaction: PipelinedTransaction) => Promise<T>,
): Promise<T> {
  return db.getExecutor().provideConnection(async (connection) => {
    const trx = new Kysely<Database>({
      dialect: {
        createAdapter: () => new PostgresAdapter(),
        createDriver: () => new OneConnection(connection),
        createQueryCompiler: () => new PostgresQueryCompiler(),
        createIntrospector: (kysely) => new PostgresIntrospector(kysely),
      },
    });
    const begun = sql`begin`.execute(trx);
    // Awaited with the commit, or before the rollback; until then its failure must not go unhandled.
    begun.catch(() => {});
    let ended = false;
    const transaction: PipelinedTransaction = {
      trx,
      commit: async (...last) => {
        ended = true;
        const committed = sql`commit`.execute(trx);
        // Every answer is in before the connection goes back to the pool.
        const outcomes = await Promise.allSettled([begun, ...last, committed]);
        const failed = outcomes.find((outcome) => outcome.status === 'rejected');
        if (failed) throw failed.reason;
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
