import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { ROOT } from './support/processes.js';
import { startTestServer, type TestServer } from './support/server.js';

// express-openapi-validator 5.6.2 finds a request's operation by compiling every path of the contract to
// a regular expression, on every request (`lookupRoute`): a twentieth of a request's CPU with the
// Public API's paths. patches/express-openapi-validator+5.6.2.patch, which `npm install` applies
// (patch-package, the postinstall script), compiles each path once. These tests fail when the patch is
// not applied: an install with --ignore-scripts, or a version of the validator it was not made for.

const validatorRequire = createRequire(createRequire(import.meta.url).resolve('express-openapi-validator'));
/** The copy of path-to-regexp the validator calls, read through its exports on every call. */
const pathToRegexp = validatorRequire('path-to-regexp') as { pathToRegexp: (...args: unknown[]) => unknown };

let server: TestServer;
let org: TestOrganization;
beforeAll(async () => {
  server = await startTestServer();
  org = await createOrganization(server.ctx.db);
});
afterAll(() => server?.close());

const paths = ['/public/v1/is-connected', '/public/v1/channels', '/public/v1/posts/post_unknown', '/public/v1/media'];
async function requestEach(): Promise<void> {
  for (const apiPath of paths) {
    const response = await server.fetch(apiPath, { headers: org.auth });
    expect(response.status, apiPath).toBeLessThan(500);
    await response.arrayBuffer();
  }
}

describe('the contract validator’s route lookup (patches/express-openapi-validator+5.6.2.patch)', () => {
  it('is patched for the version installed', () => {
    const { version } = validatorRequire('express-openapi-validator/package.json') as { version: string };
    expect(fs.readdirSync(path.join(ROOT, 'patches'))).toContain(`express-openapi-validator+${version}.patch`);
  });

  it('compiles each path of the contract once, not again for every request', async () => {
    const compile = vi.spyOn(pathToRegexp, 'pathToRegexp');
    try {
      // The first requests compile the paths the lookup walks through: the spy sees the validator's calls.
      await requestEach();
      expect(compile).toHaveBeenCalled();
      compile.mockClear();
      await requestEach();
      await requestEach();
      expect(compile).not.toHaveBeenCalled();
    } finally {
      compile.mockRestore();
    }
  });
});
