import type { TestProject } from 'vitest/node';
import { buildIfStale } from '../../scripts/build-if-stale.mjs';
import { ensureTestPds } from '../../scripts/test-pds.mjs';
import { createPostgresTemplate, dropDatabase } from './database.js';

/**
 * The server bundles and the API reference pages are build output: a test run on a fresh checkout, or
 * after a source changed, builds them first (as `npm start` would), so the tests that run the built
 * programs run the code under test. For the PostgreSQL project (vitest.config.ts), the run's migrated
 * template database is made here and dropped at the end.
 *
 * The reference Bluesky PDS of the Bluesky tests (test/support/pds.ts) is installed here too when it is
 * missing, its lockfile changed or it was built for another Node ABI (scripts/test-pds.mjs), so that a
 * developer's `npx vitest run <file>` finds it ready. A run that has none of those tests on a Node other
 * than the one it was built for (.ci/run's pass on Node 22) says TEST_PDS_INSTALL=skip, and leaves it as it is.
 */
export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  buildIfStale();
  if (process.env.TEST_PDS_INSTALL !== 'skip') ensureTestPds();
  if (!project.config.env?.TEST_DATABASE_URL) {
    project.provide('postgresTemplate', undefined);
    return undefined;
  }
  const template = await createPostgresTemplate();
  project.provide('postgresTemplate', template);
  return async () => {
    await dropDatabase(template);
  };
}
