import type { PostgresCursor, PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import type pg from 'pg';

// Enough for every statement the service sends often; texts past it run unnamed, as before.
const MAX_NAMED = 500;
// Texts seen once are remembered up to this many, so one-off statements (migrations) cannot grow it.
const MAX_SEEN = 10_000;
const TRANSACTION_CONTROL = /^\s*(begin|commit|rollback|start transaction)\b/i;
// PostgreSQL refuses a prepared statement whose result columns changed (a migration added a column to
// a table it selects `*` from) until it is prepared again.
const REPLANNED = /cached plan must not change result type/;
// What PostgreSQL answers every statement of a transaction after one of them failed.
const IN_FAILED_TRANSACTION = '25P02';

const codeOf = (error: unknown) => (error as { code?: unknown }).code;

/**
 * Names for the statement texts a process sends again and again. PostgreSQL parses and plans a named
 * (prepared) statement once per connection and then only binds and runs it, where an unnamed one is
 * parsed and planned on every execution. A text is named the second time it is seen, so statements
 * sent once (migrations) stay unnamed, and at most 500 texts are named per process.
 */
export class StatementNames {
  private readonly seen = new Set<string>();
  private readonly named = new Map<string, string>();

  nameOf(text: string): string | undefined {
    const name = this.named.get(text);
    if (name !== undefined) return name;
    if (this.named.size >= MAX_NAMED || TRANSACTION_CONTROL.test(text)) return undefined;
    if (!this.seen.has(text)) {
      if (this.seen.size >= MAX_SEEN) this.seen.clear();
      this.seen.add(text);
      return undefined;
    }
    this.seen.delete(text);
    const assigned = `stmt_${this.named.size + 1}`;
    this.named.set(text, assigned);
    return assigned;
  }
}

/**
 * A connection of the pool as Kysely uses it, sending its recurring statements named. pg remembers
 * which names it has prepared on a connection and from then on only binds them, and it has no way to
 * forget one: so when a migration has made a named statement stale, the connection is retired. The
 * statement is sent again unnamed (planned afresh), so are the connection's later statements, and
 * when it is released the pool closes it; the connection that replaces it prepares the statement anew.
 */
class NamingConnection implements PostgresPoolClient {
  private retired = false;

  constructor(
    private readonly client: pg.PoolClient,
    private readonly names: StatementNames,
  ) {}

  query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>;
  query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
  query<R>(
    statement: string | PostgresCursor<R>,
    parameters: ReadonlyArray<unknown> = [],
  ): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
    if (typeof statement !== 'string') return this.client.query(statement as PostgresCursor<R> & pg.Submittable);
    const name = this.retired ? undefined : this.names.nameOf(statement);
    if (name === undefined) return this.unnamed(statement, parameters);
    return this.named<R>(name, statement, parameters);
  }

  release(destroy?: boolean): void {
    // A truthy argument makes the pool close the connection instead of keeping it (pg-pool's `release`).
    this.client.release(destroy || this.retired);
  }

  private unnamed<R>(text: string, values: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>> {
    return this.client.query(text, [...values]) as Promise<pg.QueryResult> as Promise<PostgresQueryResult<R>>;
  }

  private async named<R>(name: string, text: string, values: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>> {
    try {
      return (await this.client.query({ name, text, values: [...values] })) as pg.QueryResult as PostgresQueryResult<R>;
    } catch (error) {
      if (codeOf(error) !== '0A000' || !REPLANNED.test((error as Error).message)) throw error;
      this.retired = true;
      try {
        return await this.unnamed<R>(text, values);
      } catch (again) {
        // Inside a transaction the failure aborted it, and the database refuses the statement sent again:
        // the stale plan is the failure to report.
        throw codeOf(again) === IN_FAILED_TRANSACTION ? error : again;
      }
    }
  }
}

/**
 * The pool as Kysely uses it, whose connections send their recurring statements named (see
 * `StatementNames`); one set of names serves all the pool's connections.
 */
export class NamingPool implements PostgresPool {
  private readonly names = new StatementNames();
  // Kysely keeps its own state per connection object, so each connection keeps one wrapper.
  private readonly connections = new WeakMap<pg.PoolClient, NamingConnection>();

  constructor(private readonly pool: pg.Pool) {}

  get options(): object {
    return this.pool.options;
  }

  async connect(): Promise<PostgresPoolClient> {
    const client = await this.pool.connect();
    let connection = this.connections.get(client);
    if (connection === undefined) {
      connection = new NamingConnection(client, this.names);
      this.connections.set(client, connection);
    }
    return connection;
  }

  end(): Promise<void> {
    return this.pool.end();
  }
}
