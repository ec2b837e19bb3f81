import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PGlite, types } from '@electric-sql/pglite';
import * as tar from 'tar';
import { Kysely, PostgresDialect } from 'kysely';
import { PGliteDialect } from 'kysely-pglite-dialect';
import pg from 'pg';
import lockfile from 'proper-lockfile';
import type { Database } from './schema.js';
import { NamingPool } from './statement-names.js';

export type Db = Kysely<Database>;

export interface DatabaseHandle {
  db: Db;
  kind: 'pglite' | 'postgres';
  /** The embedded database itself, for what must reach it besides Kysely (the job queue). */
  pglite?: PGlite;
  /** PostgreSQL's connection string, for what connects besides Kysely (the job queue). */
  connectionString?: string;
  /** PostgreSQL's connection pool, for its use in the metrics. */
  pool?: pg.Pool;
  /** Where the data lives, for the start-up message (never includes a password). */
  location: string;
  close(): Promise<void>;
}

/** Another process holds the embedded database. */
export class DatabaseBusyError extends Error {
  override name = 'DatabaseBusyError';
}

/** The embedded database's directory was made by another major version of PostgreSQL. */
export class DatabaseVersionError extends Error {
  override name = 'DatabaseVersionError';
}

/**
 * The major version of the PostgreSQL that PGlite embeds. PostgreSQL opens a data directory only with
 * the major version that made it; a test keeps this in step with the PGlite package.
 */
export const EMBEDDED_POSTGRES_MAJOR = 18;

/**
 * PostgreSQL's page cache inside the embedded database. initdb writes PostgreSQL's default of 128 MB,
 * which the embedded database fills in at start: with 32 MB the process starts at about 130 MB less
 * resident memory, and an installation small enough for the embedded database keeps its hot pages
 * cached all the same (pages outside it are read through the operating system's file cache).
 */
const EMBEDDED_SHARED_BUFFERS = '32MB';

export interface OpenDatabaseOptions {
  /** PostgreSQL connection string; without it the embedded database is used. */
  databaseUrl?: string | undefined;
  /** Directory of the embedded database; `undefined` keeps it in memory (tests). */
  dataDir?: string | undefined;
  /**
   * A new embedded database (kept in memory, or in a directory that holds none yet) starts as a copy of
   * this one (PGlite's `dumpDataDir`) instead of an empty one: the tests start each of their databases
   * from one migrated copy, and `admin restore` restores a backup.
   */
  initialData?: Blob | undefined;
  /**
   * A new embedded database in a directory starts as the data directory packed in this tar file (the
   * build's migrated template, src/db/embedded-template.ts), unpacked there, instead of PGlite's initdb.
   */
  template?: string | undefined;
  /** Called when the embedded database's lock could not be kept (e.g. the lock file was removed). */
  onLockCompromised?: (error: Error) => void;
  poolSize?: number | undefined;
  /** Told of every connection to PostgreSQL that is lost; the statements it was running fail on their own. */
  onConnectionLost?: ((error: Error) => void) | undefined;
  /**
   * Send the statements a process repeats as named (prepared) statements on PostgreSQL (the default);
   * `false` sends every statement unnamed, for a pooler that gives each transaction another connection
   * (PgBouncer in transaction mode), where a statement prepared on one is unknown on the next.
   */
  preparedStatements?: boolean;
}

export async function openDatabase(options: OpenDatabaseOptions): Promise<DatabaseHandle> {
  if (options.databaseUrl) {
    const pool = { poolSize: options.poolSize, onConnectionLost: options.onConnectionLost };
    return openPostgres(options.databaseUrl, pool, options.preparedStatements);
  }
  return openPglite(options.dataDir, options.onLockCompromised, options.initialData, options.template);
}

/**
 * How long a statement waits for a connection (a free one of the pool, or a new one) before it fails
 * as the database being out of reach: a server that vanished without closing its connections (a
 * failover, a network partition) would otherwise hold requests until the system gives up on the
 * connection, minutes later.
 */
const CONNECT_TIMEOUT_MS = 10_000;

/** What the service's connections to PostgreSQL are made with. */
export interface PostgresPoolOptions {
  poolSize?: number;
  /** Told of every connection lost (a restart, a failover, `pg_terminate_backend`), whether idle or in use. */
  onConnectionLost?: (error: Error) => void;
}

/** The service's connections to PostgreSQL; `NamingPool` gives them to Kysely with their statements named. */
export function postgresPool(databaseUrl: string, options: PostgresPoolOptions = {}): pg.Pool {
  const { poolSize = 10, onConnectionLost = () => {} } = options;
  // Pipelined connections send a statement as soon as it is started, without waiting for the answer to
  // the one before: a transaction's statements that need no answer in between share a round trip
  // (`pipelinedTransaction`). Statements awaited one by one behave exactly as on any connection.
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: poolSize,
    pipeline: true,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    // Lets the system notice a server that went away silently while a connection sits idle.
    keepAlive: true,
  } as pg.PoolConfig);
  // A connection that is lost emits 'error' on its client, and an 'error' nobody listens to ends the
  // process. The pool listens on the idle ones only, and a connection in use (by a transaction, or
  // between two statements) is lost just as well: every client gets a listener of its own for its
  // whole life. The statements under way on it fail with the error too, so the caller hears of it
  // there; the pool drops the client when it is released.
  pool.on('connect', (client) => client.on('error', onConnectionLost));
  // The pool repeats an idle client's error as its own, which needs a listener as well.
  pool.on('error', () => {});
  return pool;
}

function openPostgres(databaseUrl: string, pool: PostgresPoolOptions, preparedStatements = true): DatabaseHandle {
  const connections = postgresPool(databaseUrl, pool);
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({ pool: preparedStatements ? new NamingPool(connections) : connections }),
  });
  const url = new URL(databaseUrl);
  return {
    db,
    kind: 'postgres',
    connectionString: databaseUrl,
    pool: connections,
    location: `postgresql://${url.host}${url.pathname}`,
    close: () => db.destroy(),
  };
}

async function openPglite(
  dataDir: string | undefined,
  onLockCompromised: (error: Error) => void = () => {},
  initialData?: Blob,
  template?: string,
): Promise<DatabaseHandle> {
  let release: (() => Promise<void>) | undefined;
  let directory: string | undefined;
  if (dataDir) {
    directory = path.join(dataDir, 'pglite');
    fs.mkdirSync(directory, { recursive: true });
    release = await lockDirectory(directory, onLockCompromised);
  }
  let pglite: PGlite;
  try {
    const fresh = !directory || !fs.existsSync(path.join(directory, 'PG_VERSION'));
    if (directory) checkDataVersion(directory);
    if (directory && fresh && !initialData && template && fs.existsSync(template)) await unpack(template, directory);
    // The embedded PostgreSQL is WebAssembly, which stays at V8's baseline tier when node runs with the
    // options of `npm start` (scripts/node-options.mjs says why).
    // One options object: PGlite ignores the second argument when the first (the directory) is undefined.
    pglite = new PGlite({
      dataDir: directory,
      // pg returns int8 (and count(*)) as strings; the embedded database must read the same.
      parsers: { [types.INT8]: (value: string) => value },
      startParams: [...PGlite.defaultStartParams, '-c', `shared_buffers=${EMBEDDED_SHARED_BUFFERS}`],
      ...(initialData && fresh ? { loadDataDir: initialData } : {}),
    });
    await pglite.waitReady;
  } catch (error) {
    await release?.();
    throw error;
  }
  const db = new Kysely<Database>({ dialect: new PGliteDialect(pglite) });
  return {
    db,
    kind: 'pglite',
    pglite,
    location: directory ?? 'memory',
    close: async () => {
      await db.destroy();
      await release?.();
    },
  };
}

/**
 * Unpacks a data directory's tar into `directory`, `PG_VERSION` last: a start cut short before it ends
 * leaves a directory that is still new to the next start, which unpacks it again over what is there.
 */
async function unpack(file: string, directory: string): Promise<void> {
  // The archive's paths are absolute (`/base/…`): they are made relative to the directory (tar's
  // TAR_ENTRY_INFO); any other warning is a broken archive.
  const onwarn = (code: string, message: string | Error) => {
    if (code !== 'TAR_ENTRY_INFO')
      throw new Error(`The embedded database's template ${file} is broken: ${String(message)}`);
  };
  const isVersion = (entry: string) => entry.replace(/^\/+/, '') === 'PG_VERSION';
  await tar.x({ file, cwd: directory, onwarn, filter: (entry) => !isVersion(entry) });
  await tar.x({ file, cwd: directory, onwarn, filter: isVersion });
}

/** Refuses, in words, a data directory PGlite would fail to open with an error that names no cause. */
function checkDataVersion(directory: string): void {
  const file = path.join(directory, 'PG_VERSION');
  if (!fs.existsSync(file)) return; // a new database
  const major = fs.readFileSync(file, 'utf8').trim();
  if (major === String(EMBEDDED_POSTGRES_MAJOR)) return;
  throw new DatabaseVersionError(
    `The embedded database in ${directory} was made by PostgreSQL ${major}, ` +
      `and this version embeds PostgreSQL ${EMBEDDED_POSTGRES_MAJOR}, which cannot open it: ` +
      'run the version that made it (and move the data with pg_dump), or set DATA_DIR to another directory.',
  );
}

/** Who holds the embedded database's lock, written beside it so a later process can tell. */
interface LockOwner {
  pid: number;
  host: string;
  /** The lock directory this record is about: a record left by an older lock names another one. */
  lockIno: number;
}

const ownerFileOf = (lockPath: string) => `${lockPath}.owner.json`;

function readOwner(lockPath: string): LockOwner | undefined {
  try {
    const owner = JSON.parse(fs.readFileSync(ownerFileOf(lockPath), 'utf8')) as Partial<LockOwner>;
    return typeof owner.pid === 'number' && typeof owner.host === 'string' && typeof owner.lockIno === 'number'
      ? (owner as LockOwner)
      : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  return !isZombie(pid);
}

/**
 * A killed process stays in the process table, holding nothing, until its parent collects its exit
 * status; when its parent died with it (`npm start` killed as a group), the system's init does, which
 * in a container can take seconds. Linux shows that state in /proc; elsewhere `kill` decides alone.
 */
function isZombie(pid: number): boolean {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return false;
  }
  // `pid (command) state …`: the command may itself contain spaces and parentheses.
  const state = stat.slice(stat.lastIndexOf(')') + 2).charAt(0);
  return state === 'Z' || state === 'X';
}

/**
 * The holder of a lock, when it is a process of this machine that no longer runs: its lock can be
 * taken over at once instead of after it goes stale. Only a record written for the lock directory
 * that exists now counts (a record of an older lock proves nothing about this one).
 */
function deadOwner(lockPath: string): LockOwner | undefined {
  const owner = readOwner(lockPath);
  if (!owner || owner.host !== os.hostname()) return undefined;
  let lockIno: number;
  try {
    lockIno = fs.statSync(lockPath).ino;
  } catch {
    return undefined;
  }
  // A recorded id that is now this process's was reused after its holder died.
  return owner.lockIno === lockIno && (owner.pid === process.pid || !isAlive(owner.pid)) ? owner : undefined;
}

/**
 * PGlite is a single-process database: two processes opening the same directory would corrupt it.
 * A lock file held (and refreshed) for the life of the process keeps a second server or an admin
 * command out. A lock left by a process of this machine that was killed is taken over at once (its
 * process id is recorded beside the lock); any other abandoned lock goes stale after 15 seconds.
 */
async function lockDirectory(directory: string, onCompromised: (error: Error) => void): Promise<() => Promise<void>> {
  const lockPath = `${directory}.lock`;
  const lock = () =>
    lockfile.lock(directory, { lockfilePath: lockPath, stale: 15_000, update: 5_000, retries: 0, onCompromised });
  let release: () => Promise<void>;
  try {
    release = await lock();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ELOCKED') throw error;
    const dead = deadOwner(lockPath);
    if (!dead) {
      const owner = readOwner(lockPath);
      const holder = owner
        ? `process ${owner.pid}${owner.host === os.hostname() ? '' : ` on ${owner.host}`}`
        : 'another process';
      throw new DatabaseBusyError(
        `The embedded database in ${directory} is in use by another process ` +
          `(${holder}: a running server or admin command). ` +
          'Stop that process first, or set DATABASE_URL to a PostgreSQL database, which many processes can share.',
      );
    }
    fs.rmSync(lockPath, { recursive: true, force: true });
    release = await lock();
  }
  const owner: LockOwner = { pid: process.pid, host: os.hostname(), lockIno: fs.statSync(lockPath).ino };
  const file = ownerFileOf(lockPath);
  fs.writeFileSync(`${file}.${process.pid}`, JSON.stringify(owner));
  fs.renameSync(`${file}.${process.pid}`, file);
  return async () => {
    fs.rmSync(file, { force: true });
    await release();
  };
}
