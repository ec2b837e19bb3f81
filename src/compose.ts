import type { Server } from 'node:http';
import express from 'express';
import type { Express } from 'express';
import { createApp } from './app.js';
import { systemClock, type Clock } from './core/clock.js';
import type { Config } from './core/config.js';
import type { Logger } from './core/logger.js';
import { Metrics } from './core/metrics.js';
import type { DatabaseHandle } from './db/database.js';
import { loadKeys } from './crypto/key-source.js';
import { InstanceSecrets } from './db/instance-secrets.js';
import { migrateToLatest } from './db/migrate.js';
import { keepHouse } from './housekeeping.js';
import { DIGEST_CRON, sendDigests } from './mail/digest.js';
import type { AppContext } from './http/context.js';
import { CursorCodec } from './http/cursors.js';
import { answerMalformedRequests } from './http/malformed-requests.js';
import { metricsRoute } from './http/metrics-routes.js';
import { JobQueue } from './jobs/queue.js';
import { MAIL_QUEUES } from './mail/outbox.js';
import { MailWorker } from './mail/worker.js';
import { createMediaStorage } from './media/create-storage.js';
import type { MediaStorage } from './media/storage.js';
import { OutboundClient } from './net/outbound-client.js';
import type { Resolver } from './net/remote-fetch.js';
import { createProviders, type ProviderOverrides, type Providers } from './providers/registry.js';
import { Publisher, PUBLISHER_QUEUES } from './publisher/worker.js';
import { planDueSeries } from './recurring/planning.js';
import type { WebhookContext } from './webhooks/deliveries.js';
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
  /** Sends the mail that features plan (roles `worker` and `all`). */
  mailWorker: MailWorker | undefined;
  /** Manages webhook endpoints; their deliveries' jobs run in the worker. */
  webhooks: WebhookManagement;
  /** Serves the application on `host:port` (0 for any free port), and the metrics on METRICS_PORT if set. */
  listen(port: number, host: string): Promise<Server>;
  /** Serves the metrics on METRICS_PORT if set: a worker-only process opens that port alone. */
  serveMetrics(host: string): Promise<void>;
  /**
   * Stops the worker (running publications get `graceMs` to finish) and the queue, and lets the
   * outbound connections kept alive go; the database stays open.
   */
  stop(graceMs: number): Promise<void>;
  /**
   * Sends the spans not sent yet and ends tracing (when it is on): the last step of a shutdown, once
   * requests and workers have stopped, so that their last spans go too.
   */
  flushTraces(): Promise<void>;
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

const QUEUES = [
  ...PUBLISHER_QUEUES,
  ...WEBHOOK_QUEUES,
  ...MAIL_QUEUES,
  { name: 'housekeeping' as const, options: { retryLimit: 0 } },
  { name: 'plan-series' as const, options: { retryLimit: 0 } },
];

/**
 * The one place the service is put together from its configuration: `src/main.ts` and the tests both
 * build it here, so a test server is the real server.
 */
export async function compose(options: ComposeOptions): Promise<Service> {
  const tracing = await startTracing(options.config, options.logger);
  try {
    return await assemble(options, async () => {
      await tracing?.shutdown();
    });
  } catch (error) {
    await tracing?.shutdown();
    throw error;
  }
}

/**
 * OpenTelemetry's SDK, loaded and started only when the configuration turns tracing on: without it the
 * spans of src/core/tracing.ts are not made and nothing of the SDK is loaded.
 */
async function startTracing(config: Config, logger: Logger) {
  if (!config.tracing) return undefined;
  const sdk = await import('./core/tracing-sdk.js');
  return sdk.startTracing(config.tracing, logger);
}

async function assemble(options: ComposeOptions, flushTraces: () => Promise<void>): Promise<Service> {
  const { config, database, logger } = options;
  const applied = await migrateToLatest(database.db);
  if (applied.length > 0) logger.info({ migrations: applied }, 'database migrated');

  const base = await baseContext(options);
  const { clock, outbound, keyring, secrets } = base;
  const storage = options.storage ?? (await createMediaStorage(config, secrets, clock));
  const sandboxKey = await secrets.get('sandbox-network');
  const providers = createProviders(
    { config, outbound, sandboxKey, clock, db: database.db, keyring, metrics: base.metrics },
    options.providers,
  );
  const runsWorker = options.worker ?? config.role !== 'api';
  const queue = new JobQueue(database, logger, clock, {
    runsSchedules: runsWorker,
    keepFinishedJobsDays: config.retention.jobsDays,
  });
  await queue.start(QUEUES);
  base.metrics.watch({ queues: () => queue.load(), ...(database.pool ? { pool: database.pool } : {}) });
  const webhookCtx: WebhookContext = { ...base, queue };
  const { deliverer, webhooks, webhookOutbound } = webhookParts(webhookCtx, options.resolve);
  const ctx = { ...base, storage, providers, queue, webhooks };
  const app = createApp(ctx, { sandboxKey });
  const workers = runsWorker
    ? await startWorkers(ctx, webhookCtx, deliverer)
    : { publisher: undefined, webhookWorker: undefined, mailWorker: undefined };

  let metricsServer: Server | undefined;
  const serveMetrics = async (host: string) => {
    if (config.metrics.port !== undefined && !metricsServer)
      metricsServer = await listenForMetrics(ctx, config.metrics.port, host);
  };
  return {
    ...ctx,
    ...workers,
    database,
    app,
    listen: async (port, host) => {
      const server = await listenOn(app, port, host, logger);
      await serveMetrics(host);
      return server;
    },
    serveMetrics,
    stop: async (graceMs) => {
      metricsServer?.close();
      await workers.publisher?.stop(graceMs);
      await workers.webhookWorker?.stop(graceMs);
      await queue.stop(graceMs);
      workers.mailWorker?.stop();
      // After the workers: their last calls finish on their connections, which then close.
      outbound.close();
      webhookOutbound.close();
    },
    flushTraces,
  };
}

/** What every feature reads: the configuration, the database, the clock, the keys and the cursors' codec. */
async function baseContext({
  config,
  database,
  logger,
  clock = systemClock,
  resolve,
}: ComposeOptions): Promise<AppContext> {
  const outbound = new OutboundClient(config.media.fetch, resolve);
  const { keyring } = loadKeys({ encryptionKey: config.encryptionKey, dataDir: config.dataDir }, clock);
  const secrets = new InstanceSecrets(database.db, keyring);
  return {
    config,
    db: database.db,
    logger,
    clock,
    outbound,
    cursors: new CursorCodec(await secrets.get('cursor-signing')),
    keyring,
    secrets,
    metrics: new Metrics(),
  };
}

/** The webhooks' deliverer and management, sending through their own outbound client. */
function webhookParts(ctx: WebhookContext, resolve: Resolver | undefined) {
  // Webhook receivers are URLs callers give: the address policy applies, with the operator's ranges.
  const webhookOutbound = new OutboundClient(
    {
      allowPrivateAddresses: false,
      allowedRanges: ctx.config.webhooks.allowedRanges,
      idleTimeoutSeconds: 10,
      maxDurationSeconds: 10,
    },
    resolve,
  );
  const deliverer = new WebhookDeliverer(ctx, webhookOutbound);
  return { deliverer, webhookOutbound, webhooks: new WebhookManagement(ctx, deliverer, webhookOutbound) };
}

/** The worker's parts (roles `worker` and `all`): the publisher, the webhooks' worker, mail and housekeeping. */
async function startWorkers(
  ctx: AppContext & Pick<Service, 'storage' | 'providers' | 'queue' | 'webhooks'>,
  webhookCtx: WebhookContext,
  deliverer: WebhookDeliverer,
): Promise<Pick<Service, 'publisher' | 'webhookWorker' | 'mailWorker'>> {
  const { config, queue } = ctx;
  const publisher = new Publisher(ctx, config.publisher);
  await publisher.start();
  const webhookWorker = new WebhookWorker(webhookCtx, deliverer, config.webhooks);
  webhookWorker.start();
  const mailWorker = new MailWorker(ctx);
  await mailWorker.start();
  await queue.work('housekeeping', { pollingIntervalSeconds: 5 }, () => keepHouse(ctx));
  await queue.schedule('housekeeping', '*/10 * * * *');
  await queue.work('mail-digest', { pollingIntervalSeconds: 30 }, async () => {
    await sendDigests(ctx, ctx.clock.now());
  });
  await queue.schedule('mail-digest', DIGEST_CRON);
  await queue.work('plan-series', { pollingIntervalSeconds: 5 }, () => planDueSeries(ctx));
  await queue.schedule('plan-series', '*/15 * * * *');
  return { publisher, webhookWorker, mailWorker };
}

/** `/metrics` alone on a port of its own (METRICS_PORT), for a scraper the main port's clients never see. */
async function listenForMetrics(ctx: AppContext, port: number, host: string): Promise<Server> {
  const app = express();
  app.disable('x-powered-by');
  app.get('/metrics', metricsRoute(ctx.metrics, ctx.config.metrics.token));
  const server = await listenOn(app, port, host, ctx.logger);
  ctx.logger.info({ port }, 'metrics served on their own port');
  return server;
}

function listenOn(app: Express, port: number, host: string, logger: Logger): Promise<Server> {
  return new Promise((resolve, reject) => {
    // Express 5 calls back with the error when listening fails (a port in use), not only on success.
    const server = app.listen(port, host, (error?: Error) => {
      if (error) return reject(error);
      answerMalformedRequests(server, logger);
      resolve(server);
    });
  });
}
