/**
 * Failures that say the database could not be reached, or that the connection a statement ran on was
 * lost (a restart, a failover, `pg_terminate_backend`), rather than anything about the statement:
 * the same work may succeed a moment later, on a new connection.
 */

/** The database's own answers (SQLSTATE, PostgreSQL's Appendix A). */
const UNREACHABLE_STATES = new Set([
  '57P01', // admin_shutdown: the server is shutting down, or an operator terminated the backend
  '57P02', // crash_shutdown: another backend crashed and the server restarts
  '57P03', // cannot_connect_now: the server is starting up, shutting down or in recovery
]);
// Class 08, connection exceptions: 08000, 08003, 08006, 08001, 08004, 08007, 08P01.
const CONNECTION_EXCEPTION_CLASS = '08';

/** The operating system's answers about the connection's socket. */
const SOCKET_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

/** What pg and pg-pool say when a connection ends or cannot be had; they carry no code. */
const LOST_CONNECTION = [
  /^Connection terminated/, // "… unexpectedly", "… due to connection timeout"
  /is not queryable$/, // a client whose connection failed before, asked again (a ROLLBACK after the loss)
  /^timeout exceeded when trying to connect$/, // pg-pool: no connection within its connection timeout
];

/**
 * Whether `error` is the database being out of reach. What caused it counts too: pg-boss reports a
 * job it could not plan with the database's error as the cause. Except a socket error under a
 * `TypeError`: that is how fetch (undici) reports an outbound call that failed, not the database.
 */
export function isDatabaseUnreachable(error: unknown): boolean {
  const outbound = error instanceof TypeError;
  let cause = error;
  for (let depth = 0; cause instanceof Error && depth < 5; depth++) {
    const { code, message } = cause as Error & { code?: unknown };
    if (typeof code === 'string') {
      if (UNREACHABLE_STATES.has(code)) return true;
      if (code.length === 5 && code.startsWith(CONNECTION_EXCEPTION_CLASS)) return true;
      if (SOCKET_ERRORS.has(code) && !outbound) return true;
    }
    if (LOST_CONNECTION.some((pattern) => pattern.test(message))) return true;
    cause = cause.cause;
  }
  return false;
}
