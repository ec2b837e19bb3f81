import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, TEST_DATABASE_URL } from './support/database.js';
import { freePort, spawnBuilt, stop, untilExit, untilReady, type Finished } from './support/processes.js';
import { scaled } from './support/timeouts.js';

let dataDir: string;
let databaseUrl: string | undefined;
let closeDatabase: (() => Promise<void>) | undefined;

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'server-start-'));
  if (TEST_DATABASE_URL) {
    const database = await createTestDatabase({ migrate: false });
    databaseUrl = database.url;
    closeDatabase = () => database.close();
  }
});
afterAll(async () => {
  await closeDatabase?.();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

function serverEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    ...extra,
  };
  if (databaseUrl) env.DATABASE_URL = databaseUrl;
  return env;
}

/** Runs the server as `npm start` does and waits for it to exit (each case here makes it stop on its own). */
function startServer(extra: NodeJS.ProcessEnv): Promise<Finished> {
  return untilExit(spawnBuilt('start', [], serverEnv(extra)));
}

describe('server start-up', () => {
  it(
    'runs the build on the Node it was started with, says so, and stops cleanly on SIGTERM',
    async () => {
      const port = await freePort();
      const child = spawnBuilt('start', [], serverEnv({ PORT: String(port), HOST: '127.0.0.1' }));
      const output = untilExit(child);
      try {
        // A first start on an empty data directory creates the embedded database: seconds, not minutes.
        await untilReady(`http://127.0.0.1:${port}/readyz`, child);
      } catch (error) {
        // Never leave it holding the data directory for the cases below.
        child.kill('SIGKILL');
        throw error;
      }
      expect(await stop(child)).toBe(0);
      const { stdout } = await output;
      expect(stdout).toContain(`is running at http://localhost:${port}`);
      expect(stdout.split('\n').map((line) => line.trim())).toContain(`Node.js:        ${process.version}`);
    },
    scaled(120_000),
  );

  it(
    'stops with a clear message when its port is taken, instead of announcing that it runs',
    async () => {
      const occupant = net.createServer();
      await new Promise<void>((resolve) => occupant.listen(0, '127.0.0.1', resolve));
      const { port } = occupant.address() as net.AddressInfo;
      try {
        const result = await startServer({ PORT: String(port), HOST: '127.0.0.1' });
        expect(result.code).toBe(69);
        expect(result.stderr).toContain(`Port ${port} on 127.0.0.1 is in use by another process`);
        expect(result.stdout).not.toContain('is running at');
      } finally {
        occupant.close();
      }
    },
    scaled(90_000),
  );

  it(
    'refuses invalid settings before opening anything, naming each one',
    async () => {
      const untouched = path.join(dataDir, 'never-created');
      const result = await startServer({ PORT: 'eighty', MEDIA_STORAGE: 'floppy', DATA_DIR: untouched });
      expect(result.code).toBe(78);
      expect(result.stderr).toContain('PORT must be an integer');
      expect(result.stderr).toContain('MEDIA_STORAGE must be one of local, s3');
      expect(fs.existsSync(untouched)).toBe(false);
    },
    scaled(60_000),
  );
});
