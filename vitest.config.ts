import fs from 'node:fs';
import { configDefaults, defineConfig } from 'vitest/config';
import { SERVER_NODE_OPTIONS } from './scripts/node-options.mjs';
import { TIMEOUTS } from './test/support/timeouts.js';

/** PostgreSQL for the second project; without it the suite runs on the embedded PGlite only. */
const postgresUrl = process.env.TEST_DATABASE_URL || undefined;

/** The paths a list of test files names (one per line, `#` comments). */
const listed = (file: string) =>
  fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));

/** The files whose outcome cannot depend on the database the service runs on (the list says why). */
const onOneDatabase = listed('test/one-database.txt');
/** The files whose subject is the embedded database. */
const embeddedOnly = listed('test/embedded-only.txt');

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // Longer on CI (CI=true), where the machine may be busy: test/support/timeouts.ts.
    testTimeout: TIMEOUTS.test,
    hookTimeout: TIMEOUTS.hook,
    pool: 'forks',
    // A worker runs file after file in one process, its modules loaded once (the service's take seconds to
    // load): each file starts its own servers and databases and closes them, and restores what it changes.
    isolate: false,
    // The embedded databases of the tests run in the workers, with the server's node options.
    execArgv: [...SERVER_NODE_OPTIONS],
    // Two cores on the CI machine. The PostgreSQL files spend much of their time waiting (on the
    // database, on child processes, on the job queue's clock, on a browser), so two more workers fill that
    // time with other files' work when both databases run together.
    maxWorkers: postgresUrl ? 4 : 2,
    env: { NODE_ENV: 'test' },
    // The same files on both databases, in one run (their files interleave), when TEST_DATABASE_URL
    // is set: `--project pglite` or `--project postgres` runs one of them.
    // The files of one database run on PostgreSQL when there is one: the service, its database and the
    // test in one process cost the machine more on the embedded database.
    projects: [
      {
        extends: true,
        test: {
          name: 'pglite',
          env: { TEST_DATABASE_URL: '' },
          exclude: [...configDefaults.exclude, ...(postgresUrl ? onOneDatabase : [])],
        },
      },
      ...(postgresUrl
        ? [
            {
              extends: true,
              test: {
                name: 'postgres',
                env: { TEST_DATABASE_URL: postgresUrl },
                exclude: [...configDefaults.exclude, ...embeddedOnly],
              },
            },
          ]
        : []),
    ],
  },
});
