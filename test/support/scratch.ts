import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { createTestDatabase, TEST_DATABASE_URL } from './database.js';
import { spawnBuilt, startBuilt, untilExit, type BuiltServer, type Finished } from './processes.js';

/**
 * Temporary directories for the tests of a file or a describe block (where this is called): the
 * function it gives makes a new, empty one under the system's temporary directory, and every one it
 * made is removed after those tests.
 */
export function scratchDirs(): (prefix: string) => string {
  const made: string[] = [];
  afterAll(() => {
    for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });
  return (prefix) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-`));
    made.push(dir);
    return dir;
  };
}

/** Where an installation keeps its data: its data directory, and its PostgreSQL database if it has one. */
export interface InstallationPlace {
  dataDir: string;
  databaseUrl?: string | undefined;
}

/**
 * The environment the build's programs get in these tests, as an operator's would be: PATH, HOME, the
 * installation's DATA_DIR and DATABASE_URL (none: the embedded database), warnings and errors only on
 * standard error, and `extra`.
 */
export function installationEnv(place: InstallationPlace, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME ?? os.tmpdir(),
    DATA_DIR: place.dataDir,
    LOG_LEVEL: 'warn',
    ...(place.databaseUrl ? { DATABASE_URL: place.databaseUrl } : {}),
    ...extra,
  };
}

export interface ScratchInstallation extends InstallationPlace {
  /** The environment of its programs (`installationEnv`), with `extra`. */
  env: (extra?: Record<string, string>) => NodeJS.ProcessEnv;
  /** Runs `npm run admin -- <args>` on it, to its exit. */
  admin: (...args: string[]) => Promise<Finished>;
  /** Starts `npm start` on it (on a free port unless told) and waits until it is ready. */
  start: (extra?: Record<string, string>, options?: { args?: string[]; port?: number }) => Promise<BuiltServer>;
}

/**
 * An installation of the build for the tests of a file or a describe block (where this is called),
 * which run its programs as child processes: a data directory of its own, and, when the suite runs on
 * PostgreSQL, a database of its own, created empty (the programs migrate it). It is made before those
 * tests, and removed, its database dropped, after them.
 */
export function scratchInstallation(prefix: string): ScratchInstallation {
  let dataDir: string | undefined;
  let database: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-`));
    if (TEST_DATABASE_URL) database = await createTestDatabase({ migrate: false });
  });
  afterAll(async () => {
    await database?.close();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });
  const place = (): InstallationPlace => {
    if (!dataDir) throw new Error('the scratch installation is made before the tests, not while they are collected');
    return { dataDir, databaseUrl: database?.url };
  };
  const env = (extra: Record<string, string> = {}) => installationEnv(place(), extra);
  return {
    get dataDir() {
      return place().dataDir;
    },
    get databaseUrl() {
      return place().databaseUrl;
    },
    env,
    admin: (...args) => untilExit(spawnBuilt('admin', args, env())),
    start: (extra = {}, options = {}) => startBuilt(env(extra), options),
  };
}
