import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { EMBEDDED_POSTGRES_MAJOR, openDatabase } from '../src/db/database.js';
import { spawnBuilt, untilExit } from './support/processes.js';

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
});
