import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { SERVER_NODE_OPTIONS } from '../scripts/node-options.mjs';
import { EMBEDDED_POSTGRES_MAJOR, openDatabase } from '../src/db/database.js';
import { EMBEDDED_TEMPLATE_PATH } from '../src/db/embedded-template.js';
import { migrations } from '../src/db/migrations/index.js';
import { eventually } from './support/eventually.js';
import { freePort, ROOT, spawnBuilt, startBuilt, untilExit, untilReady } from './support/processes.js';
import { installationEnv, scratchDirs } from './support/scratch.js';
import { scaled, TIMEOUTS } from './support/timeouts.js';

const scratchDir = scratchDirs();

describe('the embedded database', () => {
  it(
    'embeds the PostgreSQL major version the server checks data directories against',
    async () => {
      const database = await openDatabase({});
      try {
        const { rows } = await sql<{
          version: string;
        }>`select current_setting('server_version_num') as version`.execute(database.db);
        expect(Math.floor(Number(rows[0]!.version) / 10_000)).toBe(EMBEDDED_POSTGRES_MAJOR);
      } finally {
        await database.close();
      }
    },
    TIMEOUTS.process,
  );

  it(
    "starts a new data directory from the build's migrated template, also after a first start cut short",
    async () => {
      expect(fs.existsSync(EMBEDDED_TEMPLATE_PATH), 'the build makes the template').toBe(true);
      const dataDir = scratchDir('from-template');
      // A first start that was killed while it unpacked: files, but no PG_VERSION yet.
      fs.mkdirSync(path.join(dataDir, 'pglite', 'base'), { recursive: true });
      fs.writeFileSync(path.join(dataDir, 'pglite', 'base', 'half-written'), 'x');
      const server = await startBuilt(installationEnv({ dataDir }, { LOG_LEVEL: 'info' }));
      let log = '';
      server.process.stdout?.on('data', (chunk) => (log += chunk));
      expect(await server.stop()).toBe(0);
      // Every migration was in the template: the start ran none (and no initdb).
      expect(log + server.stderr()).not.toContain('database migrated');
      const database = await openDatabase({ dataDir });
      try {
        const applied = await sql<{ count: string }>`select count(*) from kysely_migration`.execute(database.db);
        expect(Number(applied.rows[0]!.count)).toBe(Object.keys(migrations).length);
        // Nothing of an installation came with it: its keys were made by its own start.
        const secrets = await sql<{ count: string }>`select count(*) from instance_secrets`.execute(database.db);
        expect(Number(secrets.rows[0]!.count)).toBeGreaterThan(0);
      } finally {
        await database.close();
      }
    },
    scaled(120_000),
  );

  it(
    'refuses, in one line and with exit code 65, a data directory another PostgreSQL major made',
    async () => {
      const dataDir = scratchDir('other-major');
      fs.mkdirSync(path.join(dataDir, 'pglite'));
      fs.writeFileSync(path.join(dataDir, 'pglite', 'PG_VERSION'), '15\n');
      const env = installationEnv({ dataDir });

      for (const program of ['start', 'admin'] as const) {
        const args = program === 'admin' ? ['create-key', '--org', 'org_any'] : [];
        const result = await untilExit(spawnBuilt(program, args, env));
        expect(result.code, result.stderr).toBe(65);
        expect(result.stderr.split('\n')).toEqual([
          expect.stringContaining(
            `was made by PostgreSQL 15, and this version embeds PostgreSQL ${EMBEDDED_POSTGRES_MAJOR}`,
          ),
        ]);
        expect(result.stdout).not.toContain('is running at');
      }
      // Nothing was written into the directory it refused.
      expect(fs.readdirSync(path.join(dataDir, 'pglite'))).toEqual(['PG_VERSION']);
    },
    scaled(60_000),
  );

  it(
    'is taken over at once by the next start after its server was killed with SIGKILL, and names a live holder',
    async () => {
      const dataDir = scratchDir('killed-holder');
      const env = installationEnv({ dataDir }, { HOST: '127.0.0.1' });
      const first = await startBuilt(env);
      const killed = new Promise((resolve) => first.process.once('exit', resolve));
      try {
        // While it runs, another start is refused and told which process holds the database.
        const refused = await untilExit(spawnBuilt('start', [], { ...env, PORT: String(await freePort()) }));
        expect(refused.code).toBe(75);
        expect(refused.stderr).toContain(`in use by another process (process ${first.process.pid}:`);
      } finally {
        // Killed here whatever happened above, so a failure leaves no server behind.
        first.process.kill('SIGKILL');
        await killed;
      }
      // The lock it left is fresh (refreshed every 5 s, stale only after 15 s): waiting it out would
      // keep the service down that long. The next start sees its holder is dead and takes it now (a
      // start that does not take a held lock stops at once, refused, as above).
      const second = await startBuilt(env, { port: first.port });
      expect(await second.stop()).toBe(0);
      // A clean stop leaves neither the lock nor its holder's record behind.
      expect(fs.readdirSync(dataDir).filter((name) => name.includes('lock'))).toEqual([]);
    },
    scaled(120_000),
  );

  it.skipIf(process.platform !== 'linux')(
    'is taken over at once when its killed server is not yet reaped by its parent',
    async () => {
      const dataDir = scratchDir('zombie-holder');
      const env = installationEnv({ dataDir }, { HOST: '127.0.0.1' });
      const port = await freePort();
      // The server's parent becomes a process that never collects its children's exit (as an init
      // that reaps late does): killed, the server stays a zombie, still answering `kill(pid, 0)`.
      const pidFile = path.join(dataDir, 'server.pid');
      const parent = spawn(
        'sh',
        [
          '-c',
          `"${process.execPath}" ${SERVER_NODE_OPTIONS.join(' ')} scripts/start.mjs & echo $! > "${pidFile}"; exec sleep 600`,
        ],
        {
          cwd: ROOT,
          env: { ...env, PORT: String(port) },
          stdio: 'ignore',
        },
      );
      try {
        await untilReady(`http://127.0.0.1:${port}/readyz`, parent);
        const serverPid = Number(fs.readFileSync(pidFile, 'utf8'));
        process.kill(serverPid, 'SIGKILL');
        await eventually(() => expect(processState(serverPid)).toBe('Z'), { interval: 20 });

        const second = await startBuilt(env, { port });
        await second.stop();
      } finally {
        parent.kill('SIGKILL');
      }
    },
    scaled(120_000),
  );
});

/** The state letter Linux shows for a process (`R`, `S`, `Z` for a zombie …). */
function processState(pid: number): string | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).charAt(0);
  } catch {
    return undefined;
  }
}
