// Every route the application mounts, read from its router (so a new route is walked without being
// listed here), is sent input it cannot use: a NUL (`%00`) and a malformed escape (`%ff`) in its path
// parameters and in its query string and, for a method with a body, malformed JSON and a string holding
// a NUL. Each answer is a refusal in the shape of the route's surface (the Public API's envelope, an
// RFC 6749 error, the sandbox network's JSON, an HTML page of this site): never a 500, and never a
// stack trace, a file path, an error class's name or SQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserSession, inputValue } from './support/browser-session.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';
import { TIMEOUTS } from './support/timeouts.js';

/** A layer of Express's router (router 2.x): a route, or middleware, which may be a router of its own. */
interface Layer {
  rawPath?: unknown;
  route?: { path: unknown; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
}

interface Route {
  method: string;
  path: string;
  /** A route for every method, answering 405 to those its path does not take. */
  anyMethod?: true;
  /** Not a route: a path under a middleware mounted on a path of its own (static files, a router's prelude). */
  underMount?: true;
}

/**
 * The routes of the application as its routers hold them, mounted routers included. A middleware
 * mounted on a path of its own (the static files) is walked as `GET <path>/:file`.
 */
function mountedRoutes(stack: Layer[], prefix = ''): Route[] {
  const routes: Route[] = [];
  for (const layer of stack) {
    for (const path of [layer.route?.path ?? layer.rawPath].flat()) {
      if (typeof path !== 'string') throw new Error(`a route or mount path that is not a string: ${String(path)}`);
      const at = path === '/' ? prefix : `${prefix}${path}`;
      if (layer.route) {
        const methods = Object.keys(layer.route.methods).filter((method) => method !== '_all');
        if (methods.length > 0)
          routes.push(...methods.map((method) => ({ method: method.toUpperCase(), path: at || '/' })));
        else routes.push(...['GET', 'POST'].map((method) => ({ method, path: at || '/', anyMethod: true as const })));
      } else if (layer.handle?.stack) {
        routes.push(...mountedRoutes(layer.handle.stack, at));
      } else if (path !== '/') {
        routes.push({ method: 'GET', path: `${at}/:file`, underMount: true });
      }
    }
  }
  const seen = new Set<string>();
  return routes.filter(({ method, path }) => !seen.has(`${method} ${path}`) && seen.add(`${method} ${path}`));
}

const PARAMETER = /[:*][A-Za-z_][A-Za-z0-9_]*/g;

/** The route's path with every parameter replaced by `value`, sent as written (`%00` stays an escape). */
function filled(path: string, value: string): string {
  if (/[{}()?+]/.test(path)) throw new Error(`a path syntax the walk does not fill yet: ${path}`);
  return path.replace(PARAMETER, value);
}

type Surface = 'public-api' | 'oauth-api' | 'sandbox-api' | 'page';

const DISCOVERY_PATHS = [
  '/.well-known/oauth-authorization-server',
  '/.well-known/oauth-protected-resource',
  '/.well-known/oauth-protected-resource/public/v1',
  '/.well-known/oauth-protected-resource/mcp',
];

/** Which surface answers a path: as `src/app.ts` sends each failure to its surface's error handler. */
function surfaceOf(path: string): Surface {
  if (/^\/(public\/v1|media-files|mcp)(\/|$)/.test(path)) return 'public-api';
  if (path.startsWith('/api/oauth/') || DISCOVERY_PATHS.includes(path)) return 'oauth-api';
  if (path.startsWith('/sandbox/api/')) return 'sandbox-api';
  return 'page';
}

interface Probe {
  label: string;
  path: string;
  body?: { type: string; text: string };
}

let server: TestServer;
let org: TestOrganization;
/** The signed-in visitor's cookies, so that the pages behind sign-in read their input too. */
let cookie: string;
let csrfToken: string;
let routes: Route[];

/** What a route is sent: a body that it takes (so the spoiled part is what it refuses), or each spoiled body. */
function probesOf(route: Route): Probe[] {
  const page = surfaceOf(route.path) === 'page';
  const hasBody = ['POST', 'PUT', 'PATCH'].includes(route.method);
  const formBody = (fields: string) => ({
    type: 'application/x-www-form-urlencoded',
    text: `csrf_token=${encodeURIComponent(csrfToken)}${fields}`,
  });
  const usable = hasBody ? (page ? formBody('') : { type: 'application/json', text: '{}' }) : undefined;
  const probes: Probe[] = [];
  const withBody = (probe: Probe): Probe => (usable ? { ...probe, body: usable } : probe);
  if (filled(route.path, '') !== route.path) {
    for (const value of ['%00', '%ff'])
      probes.push(withBody({ label: `path ${value}`, path: filled(route.path, value) }));
  }
  const path = filled(route.path, 'x');
  for (const value of ['%00', '%ff']) probes.push(withBody({ label: `query ${value}`, path: `${path}?q=${value}` }));
  if (hasBody) {
    probes.push({ label: 'malformed JSON', path, body: { type: 'application/json', text: '{"name": "x",' } });
    probes.push(
      page
        ? { label: 'NUL in a string', path, body: formBody('&name=a%00b') }
        : { label: 'NUL in a string', path, body: { type: 'application/json', text: '{"name": "a\\u0000b"}' } },
    );
  }
  return probes;
}

/** Routes that read nothing of the request: whatever the query holds, they answer as usual. */
const READ_NOTHING = new Set([
  '/healthz',
  '/readyz',
  '/openapi/public-v1.yaml',
  '/openapi/public-v1',
  '/openapi/oauth.yaml',
  '/openapi/oauth',
  '/docs',
  '/docs/public-v1',
  '/docs/oauth',
  '/favicon.ico',
]);

/**
 * The rule: `400`, unless the route refuses the request before it reads the input the walk spoiled.
 * Those earlier refusals, each for its reason, are the only other answers allowed.
 */
function allowedStatuses(route: Route, probe: Probe): number[] {
  // A signed URL of local media: the signature covers the path and the query and is checked first.
  if (route.path.startsWith('/media-files/')) return [403];
  if (READ_NOTHING.has(route.path) && probe.label.startsWith('query')) return [200];
  // An app's picture reads its client id only, and one without a client's shape names no picture.
  if (route.path === '/oauth/apps/:clientId/picture') return [400, 404];
  // A path that no route claims under a mounted middleware names nothing.
  if (route.underMount) return [400, 404];
  // A route kept to refuse the methods its path does not take.
  if (route.anyMethod) return [400, 405];
  // Pages take forms: a JSON body has no CSRF token, and the form is refused before its fields are read.
  if (surfaceOf(route.path) === 'page' && probe.label === 'malformed JSON') return [403];
  return [400];
}

const CODE_BY_STATUS: Record<number, string> = {
  400: 'validation_failed',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
};

/** What must never reach anyone: stack frames, file paths, error classes' names, SQL and the database's words. */
const INTERNALS =
  /\n\s+at |\bat .*\.(ts|js|mjs|cjs):\d+|\/src\/|\/dist\/|node_modules|ValidationError|URIError|SyntaxError|TypeError|\bselect\b.*\bfrom\s+"|insert into|invalid byte sequence|syntax error at|violates .* constraint|relation "/i;

/** How the answer breaks the rules, or nothing. */
async function problemsOf(route: Route, probe: Probe, response: Response): Promise<string[]> {
  const problems: string[] = [];
  const text = await response.text();
  const { status } = response;
  const allowed = allowedStatuses(route, probe);
  if (!allowed.includes(status)) problems.push(`answered ${status}, not ${allowed.join(' or ')}`);
  const surface = surfaceOf(route.path);
  // The JSON APIs' answers, refusals included, are neither cached nor sniffed (the signed media URLs are not theirs).
  const apiAnswer = /^\/(public\/v1|mcp)(\/|$)/.test(route.path) || surface === 'oauth-api';
  const { headers } = response;
  if (apiAnswer && (headers.get('cache-control') !== 'no-store' || headers.get('x-content-type-options') !== 'nosniff'))
    problems.push('without Cache-Control: no-store and X-Content-Type-Options: nosniff');
  if (status < 300) return problems;
  if (INTERNALS.test(text)) problems.push(`internals in the body: ${INTERNALS.exec(text)![0]}`);
  const type = headers.get('content-type') ?? '';
  if (surface === 'page') {
    if (!type.startsWith('text/html')) problems.push(`a page answered ${type}`);
    // The project's error page, with the pages' headers: not Express's own.
    if (!/<title>[^<]+ · Post Scheduler<\/title>/.test(text) || headers.get('x-frame-options') !== 'DENY')
      problems.push('not the error page of this site');
    return problems;
  }
  if (!type.startsWith('application/json')) return [...problems, `the ${surface} answered ${type}`];
  const body = JSON.parse(text) as Record<string, unknown>;
  const keys = Object.keys(body).sort().join(',');
  if (surface === 'oauth-api' && (keys !== 'error,error_description' || typeof body.error !== 'string'))
    problems.push('not an RFC 6749 error');
  if (surface === 'sandbox-api' && (keys !== 'error,message' || typeof body.error !== 'string'))
    problems.push("not the sandbox network's error");
  if (surface === 'public-api') {
    const error = body.error as { code?: unknown; message?: unknown; requestId?: unknown } | undefined;
    if (keys !== 'error' || typeof error?.message !== 'string') problems.push('not the envelope');
    else if (error.code !== CODE_BY_STATUS[status]) problems.push(`code ${String(error.code)} with ${status}`);
    else if (error.requestId !== headers.get('x-request-id')) problems.push('not its request id');
  }
  return problems;
}

async function walk(surface: Surface): Promise<{ requests: number; findings: string[] }> {
  const findings: string[] = [];
  let requests = 0;
  for (const route of routes.filter((candidate) => surfaceOf(candidate.path) === surface)) {
    for (const probe of probesOf(route)) {
      const headers: Record<string, string> = { Cookie: cookie };
      if (/^\/(public\/v1|mcp)(\/|$)/.test(route.path)) Object.assign(headers, org.auth);
      if (probe.body) headers['Content-Type'] = probe.body.type;
      const response = await server.fetch(probe.path, {
        method: route.method,
        headers,
        redirect: 'manual',
        ...(probe.body ? { body: probe.body.text } : {}),
      });
      requests++;
      for (const problem of await problemsOf(route, probe, response))
        findings.push(`${route.method} ${route.path} (${probe.label}: ${probe.path}): ${problem}`);
    }
  }
  return { requests, findings };
}

beforeAll(async () => {
  server = await startTestServer({ env: { RATE_LIMIT_MAX: '1000000' } });
  org = await createOrganization(server.ctx.db, 'Route Walk Org');
  const browser = new BrowserSession(server);
  await browser.logIn(org.email, org.password);
  cookie = browser.cookieHeader();
  csrfToken = inputValue(await (await browser.get('/settings/developers/apps')).text(), 'csrf_token')!;
  routes = mountedRoutes((server.ctx.app as unknown as { router: { stack: Layer[] } }).router.stack);
}, TIMEOUTS.hook);
afterAll(() => server?.close());

describe('the walk', () => {
  it('finds the routes of every router', () => {
    const paths = new Set(routes.map((route) => `${route.method} ${route.path}`));
    for (const known of [
      'GET /healthz',
      'GET /docs/:script',
      'PUT /media-files/*key',
      'GET /public/v1/posts/:id',
      'POST /public/v1/webhooks/:id/deliveries/:deliveryId/retry',
      'POST /sandbox/api/releases',
      'GET /sandbox/api/releases/by-key/:key',
      'GET /sandbox/releases/:id',
      'GET /oauth/authorize',
      'POST /api/oauth/token',
      'GET /.well-known/oauth-authorization-server',
      'GET /.well-known/oauth-protected-resource/mcp',
      'GET /settings/webhooks/:id',
      'GET /assets/:file',
    ])
      expect(paths, known).toContain(known);
    expect(routes.length).toBeGreaterThan(90);
  });
});

describe.each<Surface>(['public-api', 'oauth-api', 'sandbox-api', 'page'])('every route of the %s', (surface) => {
  it(
    'refuses a NUL or a malformed escape in its path and query, and malformed or NUL-holding bodies',
    async () => {
      const { requests, findings } = await walk(surface);
      expect(findings).toEqual([]);
      expect(requests).toBeGreaterThan(0);
      // The pages behind sign-in were walked signed in: the probes read their input, not the log-in page.
      const signedIn = await server.fetch('/settings/developers/apps', {
        headers: { Cookie: cookie },
        redirect: 'manual',
      });
      expect(signedIn.status).toBe(200);
    },
    TIMEOUTS.test * 2,
  );
});
