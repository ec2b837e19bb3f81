import { defineConfig } from 'vitest/config';
import { SERVER_NODE_OPTIONS } from './scripts/node-options.mjs';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // The embedded databases of the tests run in the workers, with the server's node options.
    execArgv: [...SERVER_NODE_OPTIONS],
    // Two cores on the CI machine: more workers only contend for them.
    maxWorkers: 2,
    env: { NODE_ENV: 'test' },
  },
});
