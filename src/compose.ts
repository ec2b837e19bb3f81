import type { Server } from 'node:http';
import type { Express } from 'express';
import { createApp } from './app.js';
import type { Config } from './core/config.js';
import type { Logger } from './core/logger.js';
import type { DatabaseHandle } from './db/database.js';
import { instanceSecret } from './db/instance-secrets.js';
import { migrateToLatest } from './db/migrate.js';
import type { AppContext } from './http/context.js';
import { CursorCodec } from './http/cursors.js';
import { answerMalformedRequests } from './http/malformed-requests.js';
import { createMediaStorage } from './media/create-storage.js';
import type { MediaStorage } from './media/storage.js';
import { OutboundClient } from './net/outbound-client.js';
import type { Resolver } from './net/remote-fetch.js';
import { defaultProviders, type Providers } from './providers/providers.js';

/** The whole service: every feature's context in one object, and its HTTP application. */
export interface Service extends AppContext {
  database: DatabaseHandle;
  storage: MediaStorage;
  providers: Providers;
  app: Express;
  /** Serves the application on `host:port` (0 for any free port). */
  listen(port: number, host: string): Promise<Server>;
}

export interface ComposeOptions {
  config: Config;
  /** An open database; it is migrated to the latest schema here. */
  database: DatabaseHandle;
  logger: Logger;
  clock?: () => Date;
  /** Replaces some of the social networks' adapters, e.g. with fakes. */
  providers?: Partial<Providers>;
  /** Media storage to use instead of the one the configuration names. */
  storage?: MediaStorage;
  /** Host name resolution for outbound requests (tests give their own). */
  resolve?: Resolver;
}

/**
 * The one place the service is put together from its configuration: `src/main.ts` and the tests both
 * build it here, so a test server is the real server.
 */
export async function compose(options: ComposeOptions): Promise<Service> {
  const { config, database, logger } = options;
  const applied = await migrateToLatest(database.db);
  if (applied.length > 0) logger.info({ migrations: applied }, 'database migrated');

  const clock = options.clock ?? (() => new Date());
  const base: AppContext = {
    config,
    db: database.db,
    logger,
    clock,
    outbound: new OutboundClient(config.media.fetch, options.resolve),
    cursors: new CursorCodec(await instanceSecret(database.db, 'cursor-signing')),
  };
  const storage = options.storage ?? (await createMediaStorage(config, database.db, clock));
  const providers: Providers = { ...defaultProviders(), ...options.providers };
  const app = createApp({ ...base, storage, providers });

  return {
    ...base,
    database,
    storage,
    providers,
    app,
    listen: (port, host) =>
      new Promise((resolve, reject) => {
        // Express 5 calls back with the error when listening fails (a port in use), not only on success.
        const server = app.listen(port, host, (error?: Error) => {
          if (error) return reject(error);
          answerMalformedRequests(server, logger);
          resolve(server);
        });
      }),
  };
}
