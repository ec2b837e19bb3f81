/**
 * The command line of a drill on PostgreSQL (`scripts/crash-publisher.ts`,
 * `scripts/drill-database-restart.ts`): `[postgresql://…] [name=N …] [word …]`, in any order.
 *
 * The database named (else TEST_DATABASE_URL, else the development machine's) becomes
 * TEST_DATABASE_URL, which `test/support/database.ts` reads once, when it is first imported: a drill
 * calls this first, and imports the test support afterwards, with `await import(…)`.
 */
const DEFAULT_DATABASE_URL = 'postgresql://postgres@127.0.0.1:5432/test';

export interface DrillArguments<N extends string, W extends string> {
  databaseUrl: string;
  /** Each `name=N` the drill takes, as given or its default. */
  numbers: Record<N, number>;
  /** Each bare word the drill takes, and whether it was given. */
  words: Record<W, boolean>;
}

/**
 * Reads the drill's arguments: the whole numbers it takes with their defaults, and its bare words.
 * Anything else (a misspelt name, a number that is not whole) stops the drill before it starts, rather
 * than running it with a default nobody asked for.
 */
export function drillArguments<N extends string, W extends string = never>(
  takes: { numbers: Record<N, number>; words?: readonly W[] },
  args: string[] = process.argv.slice(2),
): DrillArguments<N, W> {
  const numbers = { ...takes.numbers };
  const words = Object.fromEntries((takes.words ?? []).map((word) => [word, false])) as Record<W, boolean>;
  const usage = [...Object.keys(numbers).map((name) => `${name}=N`), ...(takes.words ?? [])].join(', ');
  let databaseUrl = process.env.TEST_DATABASE_URL || DEFAULT_DATABASE_URL;
  for (const arg of args) {
    const [name, value] = arg.split(/=(.*)/s) as [string, string | undefined];
    if (arg.startsWith('postgres')) databaseUrl = arg;
    else if (value === undefined && Object.hasOwn(words, name)) words[name as W] = true;
    else if (value !== undefined && Object.hasOwn(numbers, name)) {
      if (!/^\d+$/.test(value)) throw new Error(`${arg}: ${name} takes a whole number`);
      numbers[name as N] = Number(value);
    } else throw new Error(`${arg}: not an argument of this drill (it takes a postgresql:// URL, ${usage})`);
  }
  process.env.TEST_DATABASE_URL = databaseUrl;
  return { databaseUrl, numbers, words };
}
