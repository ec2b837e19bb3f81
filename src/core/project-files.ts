import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The project's directory. The server runs from `src/` (tests, `npm run dev`) and from its build in
 * `dist/server/` (`npm start`); both read the contracts, the page templates and the built API
 * reference from the project itself, so the build holds compiled JavaScript only.
 */
function findProjectRoot(): string {
  let directory = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(directory, 'openapi', 'public-v1.yaml'))) {
    const parent = path.dirname(directory);
    if (parent === directory)
      throw new Error(`No openapi/public-v1.yaml above ${fileURLToPath(import.meta.url)}: the project is incomplete.`);
    directory = parent;
  }
  return directory;
}

export const PROJECT_ROOT = findProjectRoot();

/** A path inside the project, e.g. `projectPath('openapi', 'oauth.yaml')`. */
export function projectPath(...segments: string[]): string {
  return path.join(PROJECT_ROOT, ...segments);
}
