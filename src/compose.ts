import type { Server } from 'node:http';
import type { Express } from 'express';
import { createApp } from './app.js';
import { systemClock, type Clock } from './core/clock.js';
import type { Config } from './core/config.js';
import type { Logger } from './core/logger.js';
import type { DatabaseHandle } from './db/database.js';
import { loadKeys } from './crypto/key-source.js';
import { InstanceSecrets } from './db/instance-secrets.js';
import { migrateToLatest } from './db/migrate.js';
import { keepHouse } from './housekeeping.js';
import type { AppContext } from './http/context.js';
import { CursorCodec } from './http/cursors.js';
import { answerMalformedRequests } from './http/malformed-requests.js';
import { JobQueue } from './jobs/queue.js';
import { createMediaStorage } from './media/create-storage.js';
import type { MediaStorage } from './media/storage.js';
import { OutboundClient } from './net/outbound-client.js';
import type { Resolver } from './net/remote-fetch.js';
import { createProviders, type ProviderOverrides, type Providers } from './providers/registry.js';
import { Publisher, PUBLISHER_QUEUES } from './publisher/worker.js';
import { WebhookDeliverer } from './webhooks/deliverer.js';
import { WebhookManagement } from './webhooks/management.js';
import { WEBHOOK_QUEUES, WebhookWorker } from './webhooks/worker.js';

/** The whole service: every feature's context in one object, and the parts its role runs. */
export interface Service extends AppContext {
  database: DatabaseHandle;
  storage: MediaStorage;
  providers: Providers;
  queue: JobQueue;
  /** The HTTP application (roles `api` and `all`). */
  app: Express;
  /** The publishing worker (roles `worker` and `all`, unless turned off). */
  publisher: Publisher | undefined;
  /** The webhooks' worker, which dispatches events and sends deliveries (with the publisher). */
  webhookWorker: WebhookWorker | undefined;
  /** Manages webhook endpoints; their deliveries' jobs run in the worker. */
  webhooks: WebhookManagement;
  /** Serves the application on `host:port` (0 for any free port). */
  listen(port: number, host: string): Promise<Server>;
  /** Stops the worker (running publications get `graceMs` to finish) and the queue; the database stays open. */
  stop(graceMs: number): Promise<void>;
}

export interface ComposeOptions {
  config: Config;
  /** An open database; it is migrated to the latest schema here. */
  database: DatabaseHandle;
  logger: Logger;
  /** The clock every feature, the job queue and SQL read the time from; the system's by default. */
  clock?: Clock;
  /** Replaces some of the social networks' adapters, e.g. with fakes. */
  providers?: ProviderOverrides;
  /** Media storage to use instead of the one the configuration names. */
  storage?: MediaStorage;
  /** Host name resolution for outbound requests (tests give their own). */
  resolve?: Resolver;
  /** Whether this process runs the worker; the configuration's role decides by default. */
  worker?: boolean;
}

const QUEUES = [...PUBLISHER_QUEUES, ...WEBHOOK_QUEUES, { name: 'housekeeping' as const, options: { retryLimit: 0 } }];

/**
 * The one place the service is put together from its configuration: `src/main.ts` and the tests both
 * build it here, so a test server is the real server.
 */
export async function compose(options: ComposeOptions): Promise<Service> {
  const { config, database, logger } = options;
  const applied = await migrateToLatest(database.db);
  if (applied.length > 0) logger.info({ migrations: applied }, 'database migrated');

  const clock = options.clock ?? systemClock;
  const outbound = new OutboundClient(config.media.fetch, options.resolve);
  const { keyring } = loadKeys({ encryptionKey: config.encryptionKey, dataDir: config.dataDir }, clock);
  const secrets = new InstanceSecrets(database.db, keyring);
  const base: AppContext = {
    config,
    db: database.db,
    logger,
    clock,
    outbound,
    cursors: new CursorCodec(await secrets.get('cursor-signing')),
    keyring,
    secrets,
  };
  const storage = options.storage ?? (await createMediaStorage(config, secrets, clock));
  const sandboxKey = await secrets.get('sandbox-network');
  const providers = createProviders(
    { config, outbound, sandboxKey, clock, db: database.db, keyring },
    options.providers,
  );
  const runsWorker = options.worker ?? config.role !== 'api';
  const queue = new JobQueue(database, logger, clock, { runsSchedules: runsWorker });
  await queue.start(QUEUES);
  // Webhook receivers are URLs callers give: the address policy applies, with the operator's ranges.
  const webhookOutbound = new OutboundClient(
    {
      allowPrivateAddresses: false,
      allowedRanges: config.webhooks.allowedRanges,
      idleTimeoutSeconds: 10,
      maxDurationSeconds: 10,
    },
    options.resolve,
  );
  const deliverer = new WebhookDeliverer({ ...base, queue }, webhookOutbound);
  const webhooks = new WebhookManagement({ ...base, queue }, deliverer, webhookOutbound);
  const ctx = { ...base, storage, providers, queue, webhooks };
  const app = createApp(ctx, { sandboxKey });

  let publisher: Publisher | undefined;
  let webhookWorker: WebhookWorker | undefined;
  if (runsWorker) {
    publisher = new Publisher(ctx, config.publisher);
    await publisher.start();
    webhookWorker = new WebhookWorker({ ...base, queue }, deliverer, config.webhooks);
    webhookWorker.start();
    await queue.work('housekeeping', { pollingIntervalSeconds: 5 }, () => keepHouse(ctx));
    await queue.schedule('housekeeping', '*/10 * * * *');
  }

  return {
    ...ctx,
    database,
    app,
    publisher,
    webhookWorker,
    webhooks,
    listen: (port, host) =>
      new Promise((resolve, reject) => {
        // Express 5 calls back with the error when listening fails (a port in use), not only on success.
        const server = app.listen(port, host, (error?: Error) => {
          if (error) return reject(error);
          answerMalformedRequests(server, logger);
          resolve(server);
        });
      }),
    stop: async (graceMs) => {
      await publisher?.stop(graceMs);
      await webhookWorker?.stop(graceMs);
      await queue.stop(graceMs);
    },
  };
}
