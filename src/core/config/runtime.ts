import type { DatabaseSettings } from './database.js';
import type { EnvReader } from './env-reader.js';

/** What this process is: its environment, what it runs, how it logs, checks answers and stops. */
export interface RuntimeSettings {
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** `production` logs contract violations of responses instead of failing them. */
  environment: 'development' | 'production' | 'test';
  /**
   * Which responses the contract validator checks: every one (`strict`, the default, and always in
   * tests), about one in a hundred (`sample`), or none (`off`), for operators who need the
   * throughput (docs/performance.md). Requests are always checked.
   */
  responseValidation: 'strict' | 'sample' | 'off';
  /**
   * What this process runs: the HTTP API and pages (`api`), the publishing worker (`worker`), or both
   * (`all`). The embedded database belongs to one process, which therefore runs both.
   */
  role: 'api' | 'worker' | 'all';
  /** On SIGTERM, how long requests in flight and running publications get to finish. */
  shutdownGraceSeconds: number;
}

export function readRuntime(read: EnvReader, database: Pick<DatabaseSettings, 'databaseUrl'>): RuntimeSettings {
  const environment = read.oneOf('NODE_ENV', ['development', 'production', 'test'] as const, 'development');
  const responseValidation = read.oneOf('RESPONSE_VALIDATION', ['strict', 'sample', 'off'] as const, 'strict');
  if (environment === 'test' && responseValidation !== 'strict') {
    read.problem(
      'RESPONSE_VALIDATION must be strict when NODE_ENV=test: tests check every response against the contract, ' +
        `got "${responseValidation}"`,
    );
  }
  const role = read.oneOf('ROLE', ['api', 'worker', 'all'] as const, 'all');
  if (role !== 'all' && !database.databaseUrl) {
    read.problem(
      `ROLE=${role} needs DATABASE_URL: the embedded database belongs to one process, ` +
        'which runs the API and the worker together (ROLE=all)',
    );
  }
  return {
    logLevel: read.oneOf('LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'info'),
    environment,
    responseValidation,
    role,
    shutdownGraceSeconds: read.integer('SHUTDOWN_GRACE_SECONDS', 10, 0, 3600),
  };
}
