import type pg from 'pg';

// Enough for every statement the service sends often; texts past it run unnamed, as before.
const MAX_NAMED = 500;
// Texts seen once are remembered up to this many, so one-off statements (migrations) cannot grow it.
const MAX_SEEN = 10_000;
const TRANSACTION_CONTROL = /^\s*(begin|commit|rollback|start transaction)\b/i;
// PostgreSQL refuses a prepared statement whose result columns changed (a migration added a column to
// a table it selects `*` from) until it is prepared again.
const REPLANNED = /cached plan must not change result type/;

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

type QueryResult = pg.QueryResult<pg.QueryResultRow>;

/**
 * Sends the client's recurring statements named (see `StatementNames`). A named statement that a
 * migration made stale is prepared again once, on the connection that still holds the old one.
 */
export function nameRecurringStatements(client: pg.PoolClient, names: StatementNames): void {
  const original = client.query.bind(client) as (...args: unknown[]) => unknown;
  const query = original as (config: unknown, values?: unknown) => Promise<QueryResult>;
  const connection = (client as unknown as { connection: { parsedStatements: Record<string, string> } }).connection;
  const named = async (name: string, text: string, values: unknown): Promise<QueryResult> => {
    try {
      return await query({ name, text, values });
    } catch (error) {
      if ((error as { code?: string }).code !== '0A000' || !REPLANNED.test((error as Error).message)) throw error;
      await query(`deallocate "${name}"`);
      delete connection.parsedStatements[name];
      return query({ name, text, values });
    }
  };
  client.query = ((config: unknown, values?: unknown, callback?: unknown) => {
    if (typeof config !== 'string' || callback !== undefined || typeof values === 'function') {
      return original(config, values, callback);
    }
    const name = names.nameOf(config);
    return name === undefined ? query(config, values) : named(name, config, values);
  }) as typeof client.query;
}
