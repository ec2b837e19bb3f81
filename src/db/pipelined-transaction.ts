import {
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  sql,
  type AbortableOperationOptions,
  type CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
} from 'kysely';
import { traced } from '../core/tracing.js';
import type { Db } from './database.js';
import type { Database } from './schema.js';
import { TRANSACTION_SPAN } from './transaction.js';

/**
 * The transaction's connection, counting the statements sent on it: a statement is on its way (in
 * the connection's order) once `executeQuery` is called, long before its answer.
 */
class CountedConnection implements DatabaseConnection {
  sent = 0;
  private waiting: { after: number; resolve: () => void }[] = [];

  constructor(private readonly inner: DatabaseConnection) {}

  executeQuery<R>(query: CompiledQuery, options?: AbortableOperationOptions): Promise<QueryResult<R>> {
    this.count();
    return this.inner.executeQuery<R>(query, options);
  }

  streamQuery<R>(
    query: CompiledQuery,
    chunkSize: number,
    options?: AbortableOperationOptions,
  ): AsyncIterableIterator<QueryResult<R>> {
    this.count();
    return this.inner.streamQuery<R>(query, chunkSize, options);
  }

  private count(): void {
    this.sent += 1;
    const ready = this.waiting.filter((waiter) => this.sent > waiter.after);
    this.waiting = this.waiting.filter((waiter) => this.sent <= waiter.after);
    for (const waiter of ready) waiter.resolve();
  }

  /** Resolves once more than `count` statements have been sent. */
  sentMoreThan(count: number): Promise<void> {
    if (this.sent > count) return Promise.resolve();
    return new Promise((resolve) => this.waiting.push({ after: count, resolve }));
  }
}

/**
 * Hands one connection to every statement at once, where Kysely's own single-connection handle waits
 * for each statement to finish before it starts the next.
 */
class OneConnection implements Driver {
  constructor(private readonly connection: CountedConnection) {}
  async init(): Promise<void> {}
  acquireConnection(): Promise<DatabaseConnection> {
    return Promise.resolve(this.connection);
  }
  beginTransaction(): Promise<void> {
    return Promise.reject(new Error('a pipelined transaction begins and ends itself'));
  }
  commitTransaction(): Promise<void> {
    return Promise.reject(new Error('a pipelined transaction begins and ends itself'));
  }
  rollbackTransaction(): Promise<void> {
    return Promise.reject(new Error('a pipelined transaction begins and ends itself'));
  }
  async releaseConnection(): Promise<void> {}
  async destroy(): Promise<void> {}
}

/** A transaction under way: its statements run on `trx`; `commit` ends it. */
export interface PipelinedTransaction {
  trx: Db;
  /**
   * Runs the last pieces of work, each sending one statement on `trx` (such as writing the events, or
   * planning jobs), and commits: the statements and the COMMIT travel together, in this order, without
   * waiting for one another's answers. A piece that fails before it sends its statement (the job queue
   * reads its own cache first) commits nothing; one whose statement fails rolls the transaction back
   * (PostgreSQL answers the COMMIT of a failed transaction with a rollback). Either error is thrown.
   */
  commit: (...last: (() => Promise<unknown>)[]) => Promise<void>;
}

/**
 * A transaction that waits for the database only where the caller needs an answer. The statements
 * started on `trx` are sent at once, in the order they are started, and the database runs them in that
 * order: on PostgreSQL, whose connections are pipelined (see `openDatabase`), BEGIN goes out with the
 * first statements and COMMIT with the last ones instead of costing a round trip each, and statements
 * that need no answer in between share one. On the embedded database they run one after another in the
 * same order. The work ends with `commit`; anything it throws rolls the transaction back. Inside a trace
 * it is a span, as `transaction` is.
 */
export function pipelinedTransaction<T>(db: Db, work: (transaction: PipelinedTransaction) => Promise<T>): Promise<T> {
  return traced('transaction', TRANSACTION_SPAN, () => pipelined(db, work));
}

async function pipelined<T>(db: Db, work: (transaction: PipelinedTransaction) => Promise<T>): Promise<T> {
  return db.getExecutor().provideConnection(async (pooled) => {
    const connection = new CountedConnection(pooled);
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
        const running: Promise<unknown>[] = [];
        for (const work of last) {
          const sentBefore = connection.sent;
          const started = work();
          running.push(started);
          // Some work sends its statement a few promise turns after it starts: what comes next waits for
          // it to be on its way, or for the work to end without one.
          const settled = started.then(
            () => true,
            () => false,
          );
          const sent = await Promise.race([
            connection.sentMoreThan(sentBefore).then(() => true),
            settled.then(() => false),
          ]);
          // A piece that failed before sending anything: no COMMIT goes out, the transaction rolls back.
          if (!sent && !(await settled)) {
            await Promise.allSettled(running);
            await sql`rollback`.execute(trx);
            await started;
          }
        }
        const committed = sql`commit`.execute(trx);
        // Every answer is in before the connection goes back to the pool.
        const outcomes = await Promise.allSettled([begun, ...running, committed]);
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
        await begun.catch(() => {});
        await sql`rollback`.execute(trx);
      }
      throw error;
    }
  });
}
