import { createQueryId, type CompiledQuery } from 'kysely';
import type { Db } from './database.js';

/** Stands for the argument at `index` while a statement is built and compiled once. */
class Slot {
  constructor(readonly index: number) {}
}

/** A query builder, or a `sql` template (compiled with the database it is for). */
type Compiles<Row> = { compile(db: Db): CompiledQuery<Row> };

/**
 * A statement built and compiled to SQL once per database handle, its arguments bound on each call:
 * Kysely otherwise builds the query's tree and compiles it anew for every request, a tenth of a
 * light request's CPU. `build` must use each argument only as a value sent with the statement (never
 * compute with it or branch on it), since it is called once with stand-ins; a derived value (a time a
 * minute earlier) is an argument of its own. The SQL text is the one `build` would compile each time.
 */
export function compiledOnce<Args extends unknown[], Row>(
  arity: Args['length'],
  build: (db: Db, ...args: Args) => Compiles<Row>,
): (db: Db, ...args: Args) => CompiledQuery<Row> {
  const compiled = new WeakMap<Db, CompiledQuery<Row>>();
  return (db, ...args) => {
    let query = compiled.get(db);
    if (!query) {
      const slots = Array.from({ length: arity }, (_, index) => new Slot(index)) as Args;
      query = build(db, ...slots).compile(db);
      const used = new Set(query.parameters.filter((value) => value instanceof Slot).map((slot) => slot.index));
      if (used.size !== arity) throw new Error(`A statement compiled once must send each of its ${arity} arguments`);
      compiled.set(db, query);
    }
    const parameters = query.parameters.map((value) => (value instanceof Slot ? args[value.index] : value));
    return { ...query, parameters, queryId: createQueryId() };
  };
}
