import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../src/db/database.js';

describe('the embedded database in a data directory', () => {
  it('keeps a 32 MB page cache instead of the 128 MB that initdb writes, which it would fill in at start', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'embedded-memory-'));
    try {
      for (const start of ['first', 'again']) {
        const database = await openDatabase({ dataDir });
        try {
          const { rows } = await sql<{ shared_buffers: string }>`show shared_buffers`.execute(database.db);
          expect(rows[0]?.shared_buffers, start).toBe('32MB');
        } finally {
          await database.close();
        }
      }
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
