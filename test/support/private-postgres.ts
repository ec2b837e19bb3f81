import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './processes.js';
import { TIMEOUTS } from './timeouts.js';

/**
 * The server programs of Debian's PostgreSQL packages (`apt-get install postgresql`), newest version
 * first: /usr/lib/postgresql/<version>/bin, with initdb, pg_ctl and postgres.
 */
function findPostgresBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root) ? fs.readdirSync(root) : [];
  return versions
    .sort((a, b) => Number(b) - Number(a))
    .map((version) => path.join(root, version, 'bin'))
    .find((bin) => ['initdb', 'pg_ctl', 'postgres'].every((program) => fs.existsSync(path.join(bin, program))));
}

export const POSTGRES_BIN = findPostgresBin();

/**
 * The tests that run a PostgreSQL cluster of their own run whenever the server programs are installed.
 * Without them they are skipped, loudly, on a developer's machine; in CI (CI=true) they run and fail,
 * so a missing PostgreSQL cannot pass unnoticed.
 */
export const skipPrivatePostgresTests = !POSTGRES_BIN && process.env.CI !== 'true';

/** Says why the tests that run their own PostgreSQL are skipped; once, by the file that would run them. */
export function warnIfPrivatePostgresSkipped(): void {
  if (skipPrivatePostgresTests)
    console.warn(
      '\n  Tests on a PostgreSQL of their own SKIPPED: no initdb, pg_ctl and postgres in /usr/lib/postgresql/*/bin. ' +
        'Install them with `apt-get install postgresql` to run them.\n',
    );
}

/** A PostgreSQL cluster of a test's own, which it may stop and restart without touching anyone else's. */
export interface PrivatePostgres {
  /** `postgresql://postgres@127.0.0.1:<port>/postgres`: trust authentication, on loopback only. */
  url: string;
  /** `pg_ctl restart -m fast`: every connection is closed, and it returns once the server accepts new ones. */
  restart(): Promise<void>;
  /** What the server logged, for a failure's message. */
  log(): string;
  /** Stops it (immediately: nothing in it is kept) and removes its directory. */
  close(): Promise<void>;
}

const run = promisify(execFile);

/**
 * Creates and starts a PostgreSQL cluster in a new temporary directory, on a free loopback port, with
 * durability off (fsync, synchronous commit, full-page writes: nothing in it outlives the test).
 *
 * PostgreSQL refuses to run as root, and the tests may run as root (in a container, in CI): then its
 * programs run as the `postgres` user of the packages, which owns the directory.
 */
export async function startPrivatePostgres(prefix: string): Promise<PrivatePostgres> {
  if (!POSTGRES_BIN) throw new Error('no PostgreSQL server programs in /usr/lib/postgresql/*/bin');
  const bin = POSTGRES_BIN;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-`));
  const dataDir = path.join(dir, 'data');
  const logFile = path.join(dir, 'postgresql.log');
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const [uid, gid] = ['-u', '-g'].map((flag) => Number(execFileSync('id', [flag, 'postgres']).toString()));
    fs.chownSync(dir, uid!, gid!);
  }
  const pgProgram = (program: string, args: string[]) => {
    const [command, commandArgs] = asRoot
      ? ['runuser', ['-u', 'postgres', '--', path.join(bin, program), ...args]]
      : [path.join(bin, program), args];
    return run(command, commandArgs, { cwd: dir }).catch((error: Error & { stderr?: string }) => {
      throw new Error(`${program} ${args.join(' ')} failed: ${error.stderr || error.message}\n${readLog()}`, {
        cause: error,
      });
    });
  };
  const readLog = () => (fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').slice(-4000) : '');
  const waitSeconds = String(Math.ceil(TIMEOUTS.process / 1000));
  const pgCtl = (...args: string[]) =>
    pgProgram('pg_ctl', ['-D', dataDir, '-l', logFile, '-w', '-t', waitSeconds, ...args]);

  try {
    await pgProgram('initdb', [
      ...['-D', dataDir, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C'],
      ...['--no-sync', '--no-instructions'],
    ]);
    // The port is free when chosen but another process may take it before the server binds it: a
    // start that failed then is tried again on another.
    let port = 0;
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      fs.appendFileSync(
        path.join(dataDir, 'postgresql.conf'),
        [
          `listen_addresses = '127.0.0.1'`,
          `port = ${port}`,
          `unix_socket_directories = '${dir}'`,
          'fsync = off',
          'synchronous_commit = off',
          'full_page_writes = off',
          '',
        ].join('\n'),
      );
      try {
        await pgCtl('start');
        break;
      } catch (error) {
        if (attempt === 3 || !/could not bind|address already in use/i.test(readLog())) throw error;
      }
    }
    return {
      url: `postgresql://postgres@127.0.0.1:${port}/postgres`,
      restart: async () => {
        await pgCtl('-m', 'fast', 'restart');
      },
      log: readLog,
      close: async () => {
        await pgCtl('-m', 'immediate', 'stop').catch(() => {});
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await pgCtl('-m', 'immediate', 'stop').catch(() => {});
    fs.rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
