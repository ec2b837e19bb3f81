import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../src/db/database.js';
import { SERVER_NODE_OPTIONS } from '../scripts/node-options.mjs';
import { ROOT, startBuilt } from './support/processes.js';
import { installationEnv, scratchDirs } from './support/scratch.js';
import { scaled, TIMEOUTS } from './support/timeouts.js';

const scratchDir = scratchDirs();

/** The most resident memory a process has had so far, in MB (Linux's high-water mark). */
function peakRssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmHWM:\s+(\d+)/m.exec(status)![1]) / 1024;
}

describe('the embedded database in a data directory', () => {
  it(
    'keeps a 32 MB page cache instead of the 128 MB that initdb writes, which it would fill in at start',
    async () => {
      const dataDir = scratchDir('embedded-memory');
      for (const start of ['first', 'again']) {
        const database = await openDatabase({ dataDir });
        try {
          const { rows } = await sql<{ shared_buffers: string }>`show shared_buffers`.execute(database.db);
          expect(rows[0]?.shared_buffers, start).toBe('32MB');
        } finally {
          await database.close();
        }
      }
    },
    2 * TIMEOUTS.process,
  );

  it('is WebAssembly that node keeps at V8’s baseline tier: npm start, npm run admin and npm run dev say so', () => {
    const { scripts } = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(SERVER_NODE_OPTIONS).toEqual(['--no-wasm-dynamic-tiering', '--no-wasm-tier-up']);
    const options = SERVER_NODE_OPTIONS.join(' ');
    expect(scripts.start).toBe(`node ${options} scripts/start.mjs`);
    expect(scripts.admin).toBe(`node ${options} scripts/admin.mjs`);
    expect(scripts.dev).toBe(`tsx watch ${options} src/main.ts`);
  });

  it(
    'never holds more than 350 MB when a server starts on it, also in the seconds after it is ready',
    async () => {
      // V8 compiled the embedded PostgreSQL's hot functions again with its optimising compiler in the
      // second after start, which took the process to about 700 MB for a moment: enough to get the
      // server of a small machine killed for memory. It now stays at its baseline tier (the server is
      // started as `npm start` starts it, with its node options).
      const env = installationEnv({ dataDir: scratchDir('embedded-peak') }, { HOST: '127.0.0.1' });
      // The first start makes the database; the peak that matters is the one of every start after it.
      await (await startBuilt(env)).stop();
      const server = await startBuilt(env);
      try {
        // Its first 3 seconds of work, each request reading the database, watched every 100 ms.
        const started = performance.now();
        while (performance.now() - started < 3000) {
          expect((await fetch(`${server.baseUrl}/readyz`)).status).toBe(200);
          expect(peakRssMb(server.process.pid!)).toBeLessThan(350);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      } finally {
        await server.stop();
      }
    },
    scaled(90_000),
  );
});
