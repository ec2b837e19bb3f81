import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { EMBEDDED_POSTGRES_MAJOR, openDatabase } from '../src/db/database.js';
import { freePort, spawnBuilt, stop, untilExit, untilReady } from './support/processes.js';

const made: string[] = [];
afterAll(() => made.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

describe('the embedded database', () => {
  it('embeds the PostgreSQL major version the server checks data directories against', async () => {
    const database = await openDatabase({});
    try {
      const { rows } = await sql<{ version: string }>`select current_setting('server_version_num') as version`.execute(database.db);
      expect(Math.floor(Number(rows[0]!.version) / 10_000)).toBe(EMBEDDED_POSTGRES_MAJOR);
    } finally {
      await database.close();
    }
  }, 60_000);

  it('refuses, in one line and with exit code 65, a data directory another PostgreSQL major made', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'other-major-'));
    made.push(dataDir);
    fs.mkdirSync(path.join(dataDir, 'pglite'));
    fs.writeFileSync(path.join(dataDir, 'pglite', 'PG_VERSION'), '15\n');
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: dataDir, LOG_LEVEL: 'warn' };

    for (const program of ['start', 'admin'] as const) {
      const args = program === 'admin' ? ['create-key', '--org', 'org_any'] : [];
      const result = await untilExit(spawnBuilt(program, args, env));
      expect(result.code, result.stderr).toBe(65);
      expect(result.stderr.split('\n')).toEqual([
        expect.stringContaining(`was made by PostgreSQL 15, and this version embeds PostgreSQL ${EMBEDDED_POSTGRES_MAJOR}`),
      ]);
      expect(result.stdout).not.toContain('is running at');
    }
    // Nothing was written into the directory it refused.
    expect(fs.readdirSync(path.join(dataDir, 'pglite'))).toEqual(['PG_VERSION']);
  }, 60_000);

  it('is taken over at once by the next start after its server was killed with SIGKILL, and names a live holder', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'killed-holder-'));
    made.push(dataDir);
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: dataDir, LOG_LEVEL: 'warn', HOST: '127.0.0.1' };
    const port = await freePort();
    const first = spawnBuilt('start', [], { ...env, PORT: String(port) });
    await untilReady(`http://127.0.0.1:${port}/readyz`, first);

    // While it runs, another start is refused and told which process holds the database.
    const refused = await untilExit(spawnBuilt('start', [], { ...env, PORT: String(await freePort()) }));
    expect(refused.code).toBe(75);
    expect(refused.stderr).toContain(`in use by another process (process ${first.pid}:`);

    const killed = new Promise((resolve) => first.once('exit', resolve));
    first.kill('SIGKILL');
    await killed;
    // The lock it left is fresh (refreshed every 5 s, stale only after 15 s): waiting it out would
    // keep the service down that long. The next start sees its holder is dead and takes it now.
    const second = spawnBuilt('start', [], { ...env, PORT: String(port) });
    try {
      await untilReady(`http://127.0.0.1:${port}/readyz`, second, 12_000);
    } finally {
      expect(await stop(second)).toBe(0);
    }
    // A clean stop leaves neither the lock nor its holder's record behind.
    expect(fs.readdirSync(dataDir).filter((name) => name.includes('lock'))).toEqual([]);
  }, 120_000);
});
