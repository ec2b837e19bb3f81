import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import express, { type RequestHandler } from 'express';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SPEC_FILES } from '../src/core/contract.js';
import { readSpecForValidator } from '../src/http/spec.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { ROOT } from './support/processes.js';
import { startTestServer, type TestServer } from './support/server.js';

// express-openapi-validator 5.6.2 finds a request's operation by compiling every path of the contract to
// a regular expression, on every request (`lookupRoute`): a twentieth of a request's CPU with the
// Public API's paths. patches/express-openapi-validator+5.6.2.patch, which `npm install` applies
// (patch-package, the postinstall script), compiles each path once. The patch also runs the validator's
// steps at once when its contract is loaded (each waited for a turn of the microtask queue on the
// loading's promise), leaves its security step out when it is off, and skips the legacy URL parser for
// a URL without a query. These tests fail when the patch is not applied: an install with
// --ignore-scripts, or a version of the validator it was not made for.

const validatorRequire = createRequire(createRequire(import.meta.url).resolve('express-openapi-validator'));
/** The copy of path-to-regexp the validator calls, read through its exports on every call. */
const pathToRegexp = validatorRequire('path-to-regexp') as { pathToRegexp: (...args: unknown[]) => unknown };
/** The URL module the validator's parameter parser calls, read through its exports on every call. */
const legacyUrl = validatorRequire('url') as { parse: (...args: unknown[]) => unknown };
const validator = validatorRequire('express-openapi-validator') as {
  middleware: (options: Record<string, unknown>) => RequestHandler[];
};

/**
 * The validator's middleware for the Public API's contract, as the service configures it but for security,
 * and without checking responses (the tests answer with bodies of their own).
 */
function validatorMiddleware(validateSecurity: false | { handlers: Record<string, () => boolean> }) {
  return validator.middleware({
    apiSpec: readSpecForValidator(SPEC_FILES.publicV1),
    validateApiSpec: false,
    validateRequests: { allowUnknownQueryParameters: false, coerceTypes: false },
    validateResponses: false,
    validateSecurity,
    fileUploader: false,
  });
}

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

  it('leaves its security step out when security is not validated', () => {
    const checked = validatorMiddleware({ handlers: { bearerAuth: () => true } });
    const unchecked = validatorMiddleware(false);
    expect(unchecked.length).toBe(checked.length - 1);
  });

  it('runs its steps without waiting once the contract is loaded', async () => {
    // A microtask queued before the validator has run by the time the request leaves it only if the
    // validator waited on a promise.
    const app = express();
    app.set('case sensitive routing', true);
    app.use((_req, res, next) => {
      const marker = { turned: false };
      res.locals.marker = marker;
      queueMicrotask(() => (marker.turned = true));
      next();
    });
    app.use(validatorMiddleware(false));
    app.use((_req, res) => {
      res.json({ waited: (res.locals.marker as { turned: boolean }).turned });
    });
    const plain = http.createServer(app);
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
    try {
      const base = `http://127.0.0.1:${(plain.address() as AddressInfo).port}`;
      const waited = async () =>
        ((await (await fetch(`${base}/public/v1/is-connected`)).json()) as { waited: boolean }).waited;
      // The contract loads while the server starts; a request that came sooner would wait for it.
      expect(await waited()).toBe(false);
      expect(await waited()).toBe(false);
    } finally {
      await new Promise<void>((resolve) => plain.close(() => resolve()));
    }
  });

  it('parses no query of a URL without one', async () => {
    await requestEach();
    const parse = vi.spyOn(legacyUrl, 'parse');
    try {
      await requestEach();
      expect(parse).not.toHaveBeenCalled();
      const response = await server.fetch('/public/v1/posts?limit=5', { headers: org.auth });
      expect(response.status).toBe(200);
      expect(parse).toHaveBeenCalled();
    } finally {
      parse.mockRestore();
    }
  });
});
