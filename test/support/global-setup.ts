import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** The API reference pages are build output; a test run on a fresh checkout builds them once. */
export default function setup(): void {
  const root = path.resolve(import.meta.dirname, '../..');
  const pages = ['public-v1.html', 'oauth.html'].map((page) => path.join(root, 'dist/docs', page));
  if (pages.every((page) => fs.existsSync(page))) return;
  execFileSync(path.join(root, 'scripts/build-docs.sh'), { cwd: root, stdio: 'ignore' });
}
