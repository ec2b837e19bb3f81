import fs from 'node:fs';
import { projectPath } from '../core/project-files.js';
import { openDatabase } from './database.js';
import { migrateToLatest } from './migrate.js';

/**
 * The embedded database as a first start would make it (PGlite's initdb, then every migration), made
 * once by the build (`npm install`, `npm start` after a change) and copied into a new data directory
 * instead: initdb in WebAssembly is most of a first start's time and memory. It holds the schema only,
 * nothing of an installation (its keys and secrets are made at its first start). An older template
 * is harmless: the migrations it lacks run at start, as on any database.
 */
export const EMBEDDED_TEMPLATE_PATH = projectPath('dist', 'embedded-database.tar');

/** Makes the template: a database in memory, migrated, written out as a tar of its data directory. */
export async function writeEmbeddedTemplate(file = EMBEDDED_TEMPLATE_PATH): Promise<void> {
  const handle = await openDatabase({ dataDir: undefined });
  try {
    await migrateToLatest(handle.db);
    const dump = await handle.pglite!.dumpDataDir('none');
    const partial = `${file}.${process.pid}`;
    fs.writeFileSync(partial, Buffer.from(await dump.arrayBuffer()));
    fs.renameSync(partial, file);
  } finally {
    await handle.close();
  }
}
