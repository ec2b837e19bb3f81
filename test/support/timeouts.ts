/**
 * Every wait of the suite, in one place. On CI (CI=true) the machine may be busy with other work,
 * so each wait is three times longer there; a test that passes only because the machine is idle
 * fails here first, on a developer's machine.
 */
export const TIME_FACTOR = process.env.CI === 'true' ? 3 : 1;

/** `ms` as a wait of the suite: longer on CI. */
export function scaled(ms: number): number {
  return ms * TIME_FACTOR;
}

export const TIMEOUTS = {
  /** One test. */
  test: scaled(30_000),
  /** One beforeAll/afterAll: servers, browsers, databases. */
  hook: scaled(60_000),
  /** Something the service does by itself soon (a job, a webhook, a page's script). */
  eventually: scaled(10_000),
  /**
   * A browser's navigation or an element to appear. A new Chromium's first page on a busy 2-core
   * machine (a second copy of the suite running) took more than 15 s.
   */
  browser: scaled(30_000),
  /** One browser test: a user's walk through several pages, each of which may take a browser's wait. */
  browserTest: scaled(120_000),
  /**
   * A child process starting, or stopping, with its database. The built server's first start on an
   * embedded database took more than 30 s with a second copy of the tests running.
   */
  process: scaled(90_000),
} as const;
