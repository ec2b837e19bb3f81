import type { Server } from 'node:http';
import { ConfigError, loadConfig, type Config } from './core/config.js';
import { createLogger } from './core/logger.js';
import { DatabaseBusyError, DatabaseVersionError, openDatabase, type DatabaseHandle } from './db/database.js';

// In-flight requests get this long to finish after SIGINT/SIGTERM before connections are cut.
const SHUTDOWN_GRACE_MS = 10_000;

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
  const logger = createLogger(config);

  // The application's modules load while the database opens (the embedded one takes about a second
  // of its own), so a restart is back quickly.
  const opening = openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    onLockCompromised: (error) => logger.error({ err: error }, 'lost the lock on the embedded database'),
  });
  const composing = import('./compose.js');
  let database: DatabaseHandle;
  try {
    database = await opening;
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
  const { compose } = await composing;
  const service = await compose({ config, database, logger });
  let server: Server;
  try {
    server = await service.listen(config.port, config.host);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    console.error(
      code === 'EADDRINUSE'
        ? `Port ${config.port} on ${config.host} is in use by another process. Stop it, or set PORT to a free port.`
        : `Cannot listen on ${config.host}:${config.port}: ${(error as Error).message}`,
    );
    await database.close();
    process.exit(69); // EX_UNAVAILABLE
  }

  logger.info({ database: database.kind, location: database.location }, 'database ready');
  console.log(
    [
      '',
      `  Post scheduler is running at ${config.publicUrl}`,
      `  Web app:        ${config.publicUrl}/  (sign up, API keys, OAuth apps)`,
      `  API reference:  ${config.publicUrl}/docs  (OAuth: ${config.publicUrl}/docs/oauth)`,
      `  Public API:     ${config.publicUrl}/public/v1`,
      `  Database:       ${database.kind} (${database.location})`,
      `  Media storage:  ${describeStorage(config)}`,
      `  Node.js:        ${process.version}`,
      '',
    ].join('\n'),
  );

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const forced = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
    forced.unref();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    });
    await database.close();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
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
