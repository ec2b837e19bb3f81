import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createApp } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import type { AppContext } from '../../src/context.js';
import { answerMalformedRequests } from '../../src/http/malformed-requests.js';
import { createLogger, type Logger } from '../../src/logger.js';
import { createMediaStorage } from '../../src/media/create-storage.js';
import type { MediaStorage } from '../../src/media/storage.js';
import { defaultProviders, type Providers } from '../../src/providers/providers.js';
import { createTestDatabase } from './database.js';

export interface TestServer {
  baseUrl: string;
  ctx: AppContext;
  /** Moves the server's clock; `undefined` goes back to real time. */
  setNow(instant: Date | string | undefined): void;
  /** Sends a request to the server; `path` starts with `/`. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}

export interface TestServerOptions {
  env?: Record<string, string>;
  /** Where log lines go; silent unless TEST_LOG_LEVEL=debug. */
  logger?: Logger;
  /** Replaces some of the social networks' adapters, e.g. with fakes. */
  providers?: Partial<Providers>;
  /** Media storage to use instead of the one the configuration names. */
  storage?: MediaStorage;
}

/**
 * The real application on a loopback port, on a fresh database, with a clock the test controls.
 * Local files (media) go to a temporary DATA_DIR, removed on close, unless `env` names one.
 */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const database = await createTestDatabase();
  let now: number | undefined;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'post-scheduler-test-'));
  const config: Config = loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', DATA_DIR: dataDir, ...options.env });
  const clock = () => new Date(now ?? Date.now());
  const ctx: AppContext = {
    config,
    db: database.db,
    logger: options.logger ?? createLogger({ logLevel: process.env.TEST_LOG_LEVEL === 'debug' ? 'debug' : 'silent' }),
    clock,
    storage: options.storage ?? (await createMediaStorage(config, database.db, clock)),
    providers: { ...defaultProviders(), ...options.providers },
  };
  const app = createApp(ctx);
  const server: Server = await new Promise((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  answerMalformedRequests(server, ctx.logger);
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  ctx.config.publicUrl = baseUrl;
  return {
    baseUrl,
    ctx,
    setNow: (instant) => {
      now = instant === undefined ? undefined : new Date(instant).getTime();
    },
    fetch: (path, init) => fetch(`${baseUrl}${path}`, init),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await database.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
