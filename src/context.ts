import type { Config } from './config.js';
import type { Db } from './db/database.js';
import type { Logger } from './logger.js';
import type { MediaStorage } from './media/storage.js';
import type { Providers } from './providers/providers.js';

/** What the application is built from. Tests build their own, with an in-memory database and a controlled clock. */
export interface AppContext {
  config: Config;
  db: Db;
  logger: Logger;
  /** The current time; every rule that depends on time reads it here. */
  clock: () => Date;
  /** The social networks' adapters. */
  providers: Providers;
  /** Where media files are kept (local disk or S3-compatible storage). */
  storage: MediaStorage;
}
