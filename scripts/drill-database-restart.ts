/**
 * The database restart drill: an installation as an operator runs it on PostgreSQL (one `ROLE=api`
 * and two `ROLE=worker` processes of the build, on a scratch database), posts falling due over a
 * window and published to a fake sandbox network, and the machine's PostgreSQL restarted in the middle
 * of it. Then: whether any process exited, what every request to the API answered meanwhile, how soon
 * the API answered again once the database was back, and whether every post reached the network
 * exactly once. Prints the numbers; exits 1 if a process exited, a request answered anything but its
 * success or 503 with Retry-After, the API was not back within 5 s of the database, or a post was lost
 * or published twice. The steps are test/support/database-outage.ts, which
 * test/database-restart.test.ts runs too.
 *
 *   npx tsx scripts/drill-database-restart.ts [postgresql://postgres@127.0.0.1:5432/test] [posts=300] [seconds=20] [terminate] [own]
 *
 * With `terminate`, the database is not restarted: every connection to the scratch database is cut
 * with pg_terminate_backend instead, which touches nothing else of the machine's PostgreSQL. With
 * `own`, the drill runs on a PostgreSQL cluster of its own (made in a temporary directory with the
 * machine's PostgreSQL programs, as the test does, and removed at the end), which it restarts with
 * `pg_ctl restart -m fast`; the URL is not used.
 *
 * Otherwise it RESTARTS THE POSTGRESQL CLUSTER OF THIS MACHINE (`pg_ctlcluster … main restart`, as
 * root or the cluster's owner): every other client of it loses its connections for the second or two
 * it takes. It creates a scratch database next to the one named and drops it at the end. The server
 * bundle must be built (`npm run build`, which `npm install` runs).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { promisify } from 'node:util';
import { drillArguments } from './drill-arguments.js';

// First: it sets TEST_DATABASE_URL, which the test support reads when imported below.
const { numbers, words } = drillArguments({ numbers: { posts: 300, seconds: 20 }, words: ['terminate', 'own'] });
/** The API must answer normally again this soon after the database accepts connections. */
const BACK_WITHIN_MS = 5_000;

const { createTestDatabase } = await import('../test/support/database.js');
const { cutConnections, describeReport, reportFailures, restartWatched, runOutageDrill } =
  await import('../test/support/database-outage.js');
const { startPrivatePostgres } = await import('../test/support/private-postgres.js');

/** The cluster of this machine that serves the database (Debian's layout: /etc/postgresql/<version>/main). */
function restartCommand(): [string, string[]] {
  const version = fs.readdirSync('/etc/postgresql')[0];
  if (!version) throw new Error('no PostgreSQL cluster in /etc/postgresql');
  return ['pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'restart']];
}

// The database: a cluster of the drill's own, or a scratch database of the machine's (migrated by the drill).
const own = words.own ? await startPrivatePostgres('drill-database-restart') : undefined;
const scratch = own ? undefined : await createTestDatabase({ migrate: false });
const databaseUrl = own?.url ?? scratch!.url!;
let failures: string[] | undefined;
try {
  const report = await runOutageDrill({
    databaseUrl,
    posts: numbers.posts,
    seconds: numbers.seconds,
    workers: 2,
    outage: () => {
      if (words.terminate) return cutConnections(databaseUrl);
      if (own) return restartWatched(databaseUrl, 'pg_ctl restart -m fast', () => own.restart());
      const [command, args] = restartCommand();
      return restartWatched(databaseUrl, `${command} ${args.join(' ')}`, () => promisify(execFile)(command, args));
    },
    settleMs: 300_000,
  });
  for (const line of describeReport(report)) console.log(line);
  failures = reportFailures(report, BACK_WITHIN_MS);
  for (const failure of failures) console.log(`FAILED: ${failure}`);
} finally {
  await scratch?.close();
  await own?.close();
}
process.exit(failures?.length === 0 ? 0 : 1);
