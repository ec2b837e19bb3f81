// Runs a program of the build (`npm start`, `npm run admin`) in this process, after building it if a
// source is newer. Node's compile cache keeps the compiled code of the modules between starts.
import module from 'node:module';
import { fileURLToPath } from 'node:url';
import { buildIfStale } from './build-if-stale.mjs';

export async function runBuilt(entry) {
  buildIfStale();
  module.enableCompileCache?.(fileURLToPath(new URL('../dist/.compile-cache', import.meta.url)));
  await import(new URL(`../dist/server/${entry}`, import.meta.url).href);
}
