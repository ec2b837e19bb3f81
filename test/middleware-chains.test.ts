import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { builtOnFirstUse } from '../src/http/built-on-first-use.js';
import { inTurn } from '../src/http/in-turn.js';

// The contract routers run their middleware through these two: each prefix's middleware in one layer
// (inTurn), and the validator, built by the first request that reaches it (builtOnFirstUse). An error
// anywhere in a chain must reach the error handlers as Express would send it there.

let server: http.Server | undefined;

afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** An application with `middleware` under /api, a route after it, and an error handler that names the error. */
async function serve(middleware: RequestHandler): Promise<string> {
  const app = express();
  app.use('/api', middleware);
  app.get('/api/thing', (_req, res) => {
    res.json({ reached: true, steps: res.locals.steps as string[] });
  });
  app.use(((error: Error, _req, res, _next) => {
    res.status(500).json({ error: error.message, steps: res.locals.steps as string[] });
  }) satisfies ErrorRequestHandler);
  server = http.createServer(app);
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const step =
  (name: string): RequestHandler =>
  (_req, res, next) => {
    const steps = (res.locals.steps ?? []) as string[];
    res.locals.steps = [...steps, name];
    next();
  };

async function get(base: string, path = '/api/thing'): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${base}${path}`);
  return { status: response.status, body: await response.json() };
}

describe('inTurn', () => {
  it('runs each handler in order, then what follows', async () => {
    const base = await serve(inTurn([step('a'), step('b'), step('c')]));
    expect(await get(base)).toEqual({ status: 200, body: { reached: true, steps: ['a', 'b', 'c'] } });
  });

  it('sees the path as a layer mounted on the prefix sees it', async () => {
    const paths: string[] = [];
    const base = await serve(
      inTurn([
        (req, _res, next) => {
          paths.push(`${req.baseUrl}|${req.path}`);
          next();
        },
      ]),
    );
    await get(base);
    expect(paths).toEqual(['/api|/thing']);
  });

  it('sends an error passed to next, thrown, or rejected to the error handlers, and skips the rest', async () => {
    const failures: [string, RequestHandler][] = [
      ['passed', (_req, _res, next) => next(new Error('passed'))],
      [
        'thrown',
        () => {
          throw new Error('thrown');
        },
      ],
      ['rejected', () => Promise.reject(new Error('rejected'))],
    ];
    for (const [name, failing] of failures) {
      const base = await serve(inTurn([step('a'), failing, step('never')]));
      expect(await get(base), name).toEqual({ status: 500, body: { error: name, steps: ['a'] } });
      await new Promise<void>((resolve) => server!.close(() => resolve()));
      server = undefined;
    }
  });

  it("goes on to the next handler on next('route'), as Express does for middleware", async () => {
    const base = await serve(inTurn([step('a'), (_req, _res, next) => next('route'), step('b')]));
    expect(await get(base)).toEqual({ status: 200, body: { reached: true, steps: ['a', 'b'] } });
  });

  it('sends a promise rejected without a reason to the error handlers as Express does', async () => {
    // A library's promise may be rejected with nothing at all.
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the case under test
    const base = await serve(inTurn([step('a'), () => Promise.reject(undefined), step('never')]));
    expect(await get(base)).toEqual({ status: 500, body: { error: 'Rejected promise', steps: ['a'] } });
  });

  it('ends the turn where a handler answers', async () => {
    const base = await serve(
      inTurn([
        step('a'),
        (_req, res) => {
          res.status(204).end();
        },
        step('never'),
      ]),
    );
    const response = await fetch(`${base}/api/thing`);
    expect(response.status).toBe(204);
  });
});

describe('builtOnFirstUse', () => {
  it('builds once, for the requests that arrive while it builds too, then runs what it built', async () => {
    let builds = 0;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const base = await serve(
      builtOnFirstUse(async () => {
        builds++;
        await released;
        return [step('built'), step('again')];
      }),
    );
    const waiting = Promise.all([get(base), get(base), get(base)]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    release();
    const answers = await waiting;
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200]);
    expect(await get(base)).toEqual({ status: 200, body: { reached: true, steps: ['built', 'again'] } });
    expect(builds).toBe(1);
  });

  it('sends a failed build to the error handlers', async () => {
    const base = await serve(builtOnFirstUse(() => Promise.reject(new Error('no contract'))));
    expect(await get(base)).toEqual({ status: 500, body: { error: 'no contract' } });
    expect(await get(base)).toEqual({ status: 500, body: { error: 'no contract' } });
  });

  it('sends an error of what it built to the error handlers', async () => {
    const base = await serve(
      builtOnFirstUse(() =>
        Promise.resolve((_req: express.Request, _res: express.Response, next: express.NextFunction) =>
          next(new Error('invalid request')),
        ),
      ),
    );
    expect(await get(base)).toEqual({ status: 500, body: { error: 'invalid request' } });
  });
});
