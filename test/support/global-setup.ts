import { buildIfStale } from '../../scripts/build-if-stale.mjs';

/**
 * The server bundles and the API reference pages are build output: a test run on a fresh checkout, or
 * after a source changed, builds them first (as `npm start` would), so the tests that run the built
 * programs run the code under test.
 */
export default function setup(): void {
  buildIfStale();
}
