import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DATABASE_URL } from './support/database.js';
import { describeReport, restartWatched, runOutageDrill } from './support/database-outage.js';
import {
  skipPrivatePostgresTests,
  startPrivatePostgres,
  warnIfPrivatePostgresSkipped,
  type PrivatePostgres,
} from './support/private-postgres.js';
import { scaled, TIMEOUTS } from './support/timeouts.js';

// PostgreSQL restarted while the service publishes: the restart drill of
// scripts/drill-database-restart.ts (the same steps, test/support/database-outage.ts) on a cluster of
// the test's own, since restarting the machine's would cut every other test file's connections. One
// ROLE=api and two ROLE=worker processes of the build, posts due over a window on a fake sandbox
// network, `pg_ctl restart -m fast` 40% into it. test/database-connection-loss.test.ts cuts the
// connections instead (pg_terminate_backend), and checks each surface's 503.
//
// It runs in the PostgreSQL pass only (TEST_DATABASE_URL set), though it brings its own cluster: its
// subject is the service on PostgreSQL, and so it runs once per run, where CI expects PostgreSQL.
const runs = TEST_DATABASE_URL !== undefined;
if (runs) warnIfPrivatePostgresSkipped();

/**
 * The service answers normally again this soon after the database accepts connections (issue 30).
 * What brings it back is the service's own: a statement that finds its connection lost fails, and the
 * next one gets a new connection, so it is back at the first request after the database (measured:
 * see docs/operations.md). The test asserts the bound scaled as every wait of the suite is (5 s here,
 * 15 s with CI=true on a busy machine): a request of a process the machine holds back for a moment is
 * late by as much, without the service being at fault.
 */
const BACK_WITHIN_MS = 5_000;

describe.skipIf(!runs || skipPrivatePostgresTests)('PostgreSQL restarted while posts are published', () => {
  let cluster: PrivatePostgres;

  beforeAll(async () => {
    cluster = await startPrivatePostgres('database-restart');
  }, TIMEOUTS.hook);

  afterAll(async () => {
    await cluster?.close();
  }, TIMEOUTS.hook);

  it(
    'no process exits, no 500, the API is back within 5 s of the database, and every post is published exactly once',
    { timeout: 2 * TIMEOUTS.process + scaled(60_000) },
    async ({ signal }) => {
      const report = await runOutageDrill({
        databaseUrl: cluster.url,
        posts: 150,
        seconds: 15,
        workers: 2,
        // A publication whose outcome could not be written is taken over once its lease runs out.
        env: { PUBLISH_LEASE_SECONDS: '5', PUBLISH_RETRY_BASE_MS: '500' },
        outage: () => restartWatched(cluster.url, 'pg_ctl restart -m fast', () => cluster.restart()),
        settleMs: TIMEOUTS.process,
        // A test that timed out leaves no process of the build running.
        signal,
      });
      console.log(`database restart:\n  ${describeReport(report).join('\n  ')}`);

      expect(report.outage.failure, cluster.log()).toBeUndefined();
      // The restart came while posts were being published, and the service lost its connections.
      expect(report.publishedBefore).toBeGreaterThan(0);
      expect(Object.values(report.lostConnections).reduce((sum, n) => sum + n, 0)).toBeGreaterThan(0);

      expect(report.exits).toEqual([]);
      // Every answer was the request's success or a 503 with Retry-After: no 500, none unanswered.
      expect(report.unexpected).toEqual([]);
      expect(report.apiBackMs).toBeDefined();
      expect(report.apiBackMs).toBeLessThan(scaled(BACK_WITHIN_MS));
      expect(report.firstPublicationMs).toBeDefined();

      expect(report.outcomes).toEqual({ published: report.due + report.createdDuring });
      expect(report.lost).toEqual([]);
      expect(report.twice).toEqual([]);
      expect(report.stopCodes).toEqual(Array.from({ length: report.processes }, () => 0));
    },
  );
});
