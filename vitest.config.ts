import { defineConfig } from 'vitest/config';
import { SERVER_NODE_OPTIONS } from './scripts/node-options.mjs';
import { TIMEOUTS } from './test/support/timeouts.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // Longer on CI (CI=true), where the machine may be busy: test/support/timeouts.ts.
    testTimeout: TIMEOUTS.test,
    hookTimeout: TIMEOUTS.hook,
    pool: 'forks',
    // The embedded databases of the tests run in the workers, with the server's node options.
    execArgv: [...SERVER_NODE_OPTIONS],
    // Two cores on the CI machine: more workers only contend for them.
    maxWorkers: 2,
    env: { NODE_ENV: 'test' },
  },
});
