import type { TestProject } from 'vitest/node';
import { buildIfStale } from '../../scripts/build-if-stale.mjs';
import { createPostgresTemplate, dropDatabase } from './database.js';

/**
 * The server bundles and the API reference pages are build output: a test run on a fresh checkout, or
 * after a source changed, builds them first (as `npm start` would), so the tests that run the built
 * programs run the code under test. For the PostgreSQL project (vitest.config.ts), the run's migrated
 * template database is made here and dropped at the end.
 */
export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  buildIfStale();
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
