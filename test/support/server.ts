import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { compose, type Service } from '../../src/compose.js';
import { loadConfig } from '../../src/core/config.js';
import { createLogger, type Logger } from '../../src/core/logger.js';
import type { DatabaseHandle } from '../../src/db/database.js';
import type { MediaStorage } from '../../src/media/storage.js';
import type { Resolver } from '../../src/net/remote-fetch.js';
import type { ProviderOverrides } from '../../src/providers/registry.js';
import { createTestDatabase } from './database.js';
import { TestClock } from './test-clock.js';

/**
 * The key test servers encrypt with, one per test process, so that servers sharing a database (two
 * workers) read each other's values as an installation's processes do. Tests of the key file give
 * ENCRYPTION_KEY '' to use it instead.
 */
export const TEST_ENCRYPTION_KEY = `test:${randomBytes(32).toString('base64')}`;

/** A loopback address where nothing listens: a network's API there is never reached. */
const NOWHERE = 'http://127.0.0.1:9';

/**
 * The apps of X, YouTube and Meta for the tests that choose those networks in the composer without
 * publishing to them: configured, so the composer offers their channels, with every API of theirs at
 * an address where nothing listens, so nothing leaves the machine.
 */
export const UNUSED_APPS: Record<string, string> = {
  X_CLIENT_ID: 'unused-x-app',
  X_CLIENT_SECRET: 'unused-x-secret',
  X_API_URL: NOWHERE,
  X_AUTHORIZE_URL: `${NOWHERE}/authorize`,
  YOUTUBE_CLIENT_ID: 'unused-google-app',
  YOUTUBE_CLIENT_SECRET: 'unused-google-secret',
  YOUTUBE_ACCOUNTS_URL: NOWHERE,
  YOUTUBE_OAUTH_URL: NOWHERE,
  YOUTUBE_API_URL: NOWHERE,
  META_APP_ID: 'unused-meta-app',
  META_APP_SECRET: 'unused-meta-secret',
  META_GRAPH_URL: NOWHERE,
  META_DIALOG_URL: NOWHERE,
};

export interface TestServer {
  baseUrl: string;
  /** The service under test, as `src/compose.ts` built it. */
  ctx: Service;
  /** The server's clock: `advance` moves it and the job queue forward instead of waiting. */
  clock: TestClock;
  /** Holds the server's clock still at `instant`; `undefined` lets it run again (`clock.stopAt`). */
  setNow(instant: Date | string | undefined): void;
  /** Sends a request to the server; `path` starts with `/`. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** Stops the server; `keepDatabase` leaves its database open (for a server that shares it). */
  close(options?: { keepDatabase?: boolean }): Promise<void>;
}

export interface TestServerOptions {
  env?: Record<string, string>;
  /** Where log lines go; silent unless TEST_LOG_LEVEL=debug. */
  logger?: Logger;
  /** Replaces some of the social networks' adapters, e.g. with fakes. */
  providers?: ProviderOverrides;
  /** Media storage to use instead of the one the configuration names. */
  storage?: MediaStorage;
  /**
   * Run the publishing worker in the server, as `npm start` does. Off by default: a test that
   * leaves posts due would otherwise see them published under it.
   */
  worker?: boolean;
  /** An open database to share with another test server (a second worker); a fresh one by default. */
  database?: DatabaseHandle;
  /** Host name resolution for the server's outbound requests; the system's by default. */
  resolve?: Resolver;
  /** The clock to run on: another server's, for servers that share a database; a new one by default. */
  clock?: TestClock;
}

/**
 * The real service (built by the same composition as `npm start`) on a loopback port, on a fresh
 * database, with a clock the test controls. Local files (media) go to a temporary DATA_DIR, removed
 * on close, unless `env` names one.
 */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const database = options.database ?? (await createTestDatabase());
  const clock = options.clock ?? new TestClock();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'post-scheduler-test-'));
  const config = loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    DATA_DIR: dataDir,
    ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    // The networks' fakes fetch media from loopback: the test server's media URLs are reachable, as an
    // operator says of an installation Meta can reach (Instagram and Threads refuse media otherwise).
    MEDIA_URLS_PUBLIC: 'true',
    ...options.env,
  });
  const service = await compose({
    config,
    database,
    logger: options.logger ?? createLogger({ logLevel: process.env.TEST_LOG_LEVEL === 'debug' ? 'debug' : 'silent' }),
    clock,
    ...(options.providers ? { providers: options.providers } : {}),
    ...(options.storage ? { storage: options.storage } : {}),
    ...(options.resolve ? { resolve: options.resolve } : {}),
    worker: options.worker ?? false,
  });
  const server = await service.listen(0, '127.0.0.1');
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  config.publicUrl = baseUrl;
  return {
    baseUrl,
    ctx: service,
    clock,
    setNow: (instant) => clock.stopAt(instant),
    fetch: (path, init) => fetch(`${baseUrl}${path}`, init),
    close: async ({ keepDatabase = false } = {}) => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await service.stop(0);
      await service.flushTraces();
      if (!keepDatabase) await database.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
