// Before `npm start` and `npm run admin` run the build: rebuilds the part of it whose sources changed
// since it was made (a `git pull`, an edit), so a start never runs stale code, and builds nothing
// otherwise. Plain JavaScript: it runs before anything is compiled.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const at = (...segments) => path.join(root, ...segments);
const modified = (file) => (fs.existsSync(file) ? fs.statSync(file).mtimeMs : 0);

/** The newest modification time of the files under `dir` that `keep` accepts; 0 when there are none. */
function newest(dir, keep) {
  let latest = 0;
  const walk = (current) => {
    for (const entry of fs.readdirSync(current, { withFileTypes: true })) {
      const full = path.join(current, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (keep(full)) latest = Math.max(latest, modified(full));
    }
  };
  if (fs.existsSync(dir)) walk(dir);
  return latest;
}

/** The parts of the build older than one of their sources: `server`, `docs`, `database`. */
function staleParts() {
  const sdk = at('src', 'sdk') + path.sep;
  const serverSources = Math.max(
    newest(at('src'), (file) => file.endsWith('.ts') && !file.startsWith(sdk)),
    newest(at('generated'), (file) => file.endsWith('.ts')),
    modified(at('scripts', 'build-server.mjs')),
    modified(at('package-lock.json')),
  );
  const docsSources = Math.max(
    newest(at('openapi'), (file) => file.endsWith('.yaml')),
    modified(at('redocly.yaml')),
    modified(at('scripts', 'build-docs.sh')),
    modified(at('package-lock.json')),
  );
  const docsBuilt = Math.min(
    modified(at('dist', 'docs', 'public-v1.html')),
    modified(at('dist', 'docs', 'oauth.html')),
  );
  // The embedded database's template: made by the server's bundle from the migrations, on PGlite.
  const databaseSources = Math.max(
    newest(at('src', 'db'), (file) => file.endsWith('.ts')),
    modified(at('package-lock.json')),
  );
  const stale = [];
  if (serverSources > modified(at('dist', 'server', '.built-at'))) stale.push('server');
  if (docsSources > docsBuilt) stale.push('docs');
  // After the server, whose bundle makes it.
  if (databaseSources > modified(at('dist', 'embedded-database.tar'))) stale.push('database');
  return stale;
}

const PART_NAMES = { server: 'server', docs: 'API reference', database: "embedded database's template" };

/** Rebuilds what is stale; exits the process when a build fails. */
export function buildIfStale() {
  for (const part of staleParts()) {
    console.error(`Building the ${PART_NAMES[part]} (its sources changed since the last build)…`);
    const { status } = spawnSync(at('scripts', 'build.sh'), [part], { cwd: root, stdio: 'inherit' });
    if (status !== 0) {
      console.error(`The build of the ${PART_NAMES[part]} failed; \`npm run build\` shows why.`);
      process.exit(status ?? 1);
    }
  }
}
