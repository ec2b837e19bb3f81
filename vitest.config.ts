import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two cores on the CI machine: more workers only contend for them.
    maxWorkers: 2,
    env: { NODE_ENV: 'test' },
  },
});
