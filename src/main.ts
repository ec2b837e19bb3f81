import type { Server } from 'node:http';
import type { Service } from './compose.js';
import { ConfigError, loadConfig, type Config } from './core/config.js';
import { UnknownKeyError } from './crypto/keyring.js';
import { createLogger, type Logger } from './core/logger.js';
import { DatabaseBusyError, DatabaseVersionError, openDatabase, type DatabaseHandle } from './db/database.js';
import { EMBEDDED_TEMPLATE_PATH } from './db/embedded-template.js';

/** `--role api|worker|all` on the command line (`npm start -- --role worker`), else ROLE. */
function roleArgument(argv: string[]): string | undefined {
  const index = argv.findIndex((arg) => arg === '--role' || arg.startsWith('--role='));
  if (index < 0) return undefined;
  const arg = argv[index]!;
  return arg.includes('=') ? arg.slice('--role='.length) : (argv[index + 1] ?? '');
}

async function main(): Promise<void> {
  const config = readConfig();
  const logger = createLogger(config);
  // The application's modules load while the database opens (the embedded one takes about a second
  // of its own), so a restart is back quickly.
  const opening = openDatabaseOrExit(config, logger);
  const composing = import('./compose.js');
  const database = await opening;
  const { compose } = await composing;
  const service = await composeOrExit(() => compose({ config, database, logger }), database);
  const server = config.role === 'worker' ? undefined : await listenOrExit(service, database, config);
  if (config.role === 'worker') await service.serveMetrics(config.host);
  logger.info({ database: database.kind, location: database.location, role: config.role }, 'database ready');
  printBanner(config, database, server !== undefined);
  stopOnSignals(config, logger, { server, service, database });
}

function readConfig(): Config {
  try {
    const role = roleArgument(process.argv.slice(2));
    return loadConfig(role === undefined ? process.env : { ...process.env, ROLE: role });
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
}

async function openDatabaseOrExit(config: Config, logger: Logger): Promise<DatabaseHandle> {
  try {
    return await openDatabase({
      databaseUrl: config.databaseUrl,
      preparedStatements: config.databasePreparedStatements,
      dataDir: config.dataDir,
      // A new data directory starts from the build's migrated template instead of running initdb.
      template: EMBEDDED_TEMPLATE_PATH,
      onLockCompromised: (error) => logger.error({ err: error }, 'lost the lock on the embedded database'),
      // Work goes on without it: statements get new connections, and those that were running fail.
      onConnectionLost: (error) => logger.warn({ err: error }, 'lost a connection to the database'),
    });
  } catch (error) {
    if (error instanceof DatabaseBusyError) {
      console.error(error.message);
      process.exit(75); // EX_TEMPFAIL
    }
    if (error instanceof DatabaseVersionError) {
      console.error(error.message);
      process.exit(65); // EX_DATAERR
    }
    throw error;
  }
}

async function composeOrExit(compose: () => Promise<Service>, database: DatabaseHandle): Promise<Service> {
  try {
    return await compose();
  } catch (error) {
    const keys = error instanceof ConfigError || error instanceof UnknownKeyError;
    if (!keys) throw error;
    const advice =
      error instanceof UnknownKeyError
        ? ': every process of one installation needs the same ENCRYPTION_KEY (or the same DATA_DIR/encryption-keys)'
        : '';
    console.error(`${error.message}${advice}`);
    await database.close();
    process.exit(78); // EX_CONFIG
  }
}

async function listenOrExit(service: Service, database: DatabaseHandle, config: Config): Promise<Server> {
  try {
    return await service.listen(config.port, config.host);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    console.error(
      code === 'EADDRINUSE'
        ? `Port ${config.port} on ${config.host} is in use by another process. Stop it, or set PORT to a free port.`
        : `Cannot listen on ${config.host}:${config.port}: ${(error as Error).message}`,
    );
    await service.stop(0);
    await service.flushTraces();
    await database.close();
    process.exit(69); // EX_UNAVAILABLE
  }
}

function printBanner(config: Config, database: DatabaseHandle, serving: boolean): void {
  const lines = serving
    ? [
        `  Post scheduler is running at ${config.publicUrl}`,
        `  Web app:        ${config.publicUrl}/  (sign up, then the calendar and New post)`,
        `  API reference:  ${config.publicUrl}/docs  (OAuth: ${config.publicUrl}/docs/oauth)`,
        `  Public API:     ${config.publicUrl}/public/v1`,
      ]
    : ['  Post scheduler worker is running'];
  console.log(
    [
      '',
      ...lines,
      `  Role:           ${config.role} (${describeRole(config.role)})`,
      `  Database:       ${database.kind} (${database.location})`,
      `  Media storage:  ${describeStorage(config)}`,
      `  Node.js:        ${process.version}`,
      '',
    ].join('\n'),
  );
}

/** On SIGINT or SIGTERM: no new requests or jobs; requests in flight and running publications get the grace period. */
function stopOnSignals(
  config: Config,
  logger: Logger,
  running: { server: Server | undefined; service: Service; database: DatabaseHandle },
): void {
  const { server, service, database } = running;
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const graceMs = config.shutdownGraceSeconds * 1000;
    const closing = server
      ? new Promise<void>((resolve) => {
          const forced = setTimeout(() => server.closeAllConnections(), graceMs);
          forced.unref();
          server.close(() => resolve());
          server.closeIdleConnections();
        })
      : Promise.resolve();
    await Promise.all([closing, service.stop(graceMs)]);
    await service.flushTraces();
    await database.close();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

function describeRole(role: Config['role']): string {
  if (role === 'api') return 'the API and the pages; workers publish';
  if (role === 'worker') return 'publishes due posts; API processes serve requests';
  return 'the API, the pages and the publishing worker';
}

function describeStorage(config: Config): string {
  const storage = config.media.storage;
  if (storage.kind === 'local') return `local disk (${config.dataDir}/media)`;
  return `S3 bucket ${storage.bucket}${storage.endpoint ? ` at ${storage.endpoint}` : ` in ${storage.region}`}`;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
