import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatabaseHandle } from '../src/db/database.js';
import { createTestDatabase, TEST_DATABASE_URL } from './support/database.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { inputValue } from './support/browser-session.js';
import { cookiesOf, formPost, send, type Answer, type SendOptions } from './support/loopback-client.js';
import { approve, createOAuthApp, type TestApp } from './support/oauth.js';
import { freePort, startBuilt, type BuiltServer } from './support/processes.js';
import { clearOfWindowEdge } from './support/rate-windows.js';
import { installationEnv, scratchDirs } from './support/scratch.js';
import { TEST_ENCRYPTION_KEY } from './support/server.js';
import { TIMEOUTS } from './support/timeouts.js';

// Two API processes of the build on one PostgreSQL database, as behind a load balancer: each limit
// is one budget for the installation, so twice the limit, spread over both processes at once, gets
// exactly the limit through and the rest refused. Only what a client sees is counted (statuses), so
// the test holds for any correct way of keeping the counts. PostgreSQL only: the embedded database
// belongs to one process.
const onPostgres = describe.skipIf(!TEST_DATABASE_URL);

const LIMIT = 8;
// Fixed per email address in the code: failed log-ins of one email per 15 minutes.
const LOGIN_FAILURES_PER_EMAIL = 10;
const DAY_S = 86_400;

onPostgres('limits shared by two API processes on one PostgreSQL', () => {
  let database: DatabaseHandle & { url: string | undefined };
  let org: TestOrganization;
  let app: TestApp;
  let code: string;
  const processes: BuiltServer[] = [];
  const scratchDir = scratchDirs();

  beforeAll(async () => {
    database = await createTestDatabase();
    org = await createOrganization(database.db, 'Two processes');
    app = await createOAuthApp(database.db, org.id);
    code = await approve(database.db, app, org);
    const ports = [await freePort(), await freePort()];
    // One after the other: the first one installs the queue's schema.
    for (const port of ports) processes.push(await startApi(port, `http://127.0.0.1:${ports[0]}`));
  }, 2 * TIMEOUTS.hook);

  afterAll(async () => {
    await Promise.all(processes.map((api) => api.stop()));
    await database?.close();
  });

  function startApi(port: number, publicUrl: string): Promise<BuiltServer> {
    const env = installationEnv(
      { dataDir: scratchDir('limits-api'), databaseUrl: database.url },
      {
        ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
        PUBLIC_URL: publicUrl,
        RATE_LIMIT_MAX: String(LIMIT),
        RATE_LIMIT_WINDOW_SECONDS: String(DAY_S),
        OAUTH_AUTH_FAILURES_PER_CLIENT: String(LIMIT),
        OAUTH_AUTH_FAILURES_PER_ADDRESS: '1000000',
        OAUTH_AUTH_FAILURES_WINDOW_SECONDS: String(DAY_S),
        LOGIN_FAILURES_PER_ADDRESS: String(LIMIT),
        ACCOUNT_LIMITS_WINDOW_SECONDS: String(DAY_S),
      },
    );
    return startBuilt(env, { args: ['--role', 'api'], port });
  }

  /** Sends every request at once, the i-th to process i mod 2; how many answers had each status. */
  async function burst(
    count: number,
    request: (origin: string, i: number) => Promise<Answer>,
  ): Promise<Record<number, number>> {
    const answers = await Promise.all(Array.from({ length: count }, (_, i) => request(processes[i % 2]!.baseUrl, i)));
    const statuses: Record<number, number> = {};
    for (const answer of answers) statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
    return statuses;
  }

  it('the Public API rate limit of an organization', async () => {
    await clearOfWindowEdge(DAY_S);
    const statuses = await burst(2 * LIMIT, (origin) => send(`${origin}/public/v1/channels`, { headers: org.auth }));
    expect(statuses).toEqual({ 200: LIMIT, 429: LIMIT });
  });

  it('the sign-in throttle, per client address and per email, with one form token for both processes', async () => {
    // The form of one process, sent to either: the CSRF key is the installation's.
    const page = await send(`${processes[0]!.baseUrl}/login`);
    const form = { csrf_token: inputValue(page.body, 'csrf_token')!, password: 'not the password' };
    const cookie = { Cookie: cookiesOf(page) };
    const logIn = (origin: string, email: string, localAddress: string): Promise<Answer> =>
      send(`${origin}/login`, { ...formPost({ ...form, email }, cookie), localAddress } satisfies SendOptions);

    await clearOfWindowEdge(DAY_S);
    // One address trying many emails: the address's budget.
    const perAddress = await burst(2 * LIMIT, (origin, i) => logIn(origin, `nobody-${i}@example.com`, '127.0.0.5'));
    expect(perAddress).toEqual({ 401: LIMIT, 429: LIMIT });

    // One email tried from many addresses: the email's budget.
    await clearOfWindowEdge(15 * 60);
    const perEmail = await burst(2 * LOGIN_FAILURES_PER_EMAIL, (origin, i) =>
      logIn(origin, org.email, `127.0.1.${i + 1}`),
    );
    expect(perEmail).toEqual({ 401: LOGIN_FAILURES_PER_EMAIL, 429: LOGIN_FAILURES_PER_EMAIL });
  });

  it('the token endpoint’s throttle of failed client authentication', async () => {
    await clearOfWindowEdge(DAY_S);
    const body = JSON.stringify({
      grant_type: 'authorization_code',
      code,
      client_id: app.clientId,
      client_secret: 'pcs_not_the_secret',
    });
    const statuses = await burst(2 * LIMIT, (origin) =>
      send(`${origin}/api/oauth/token`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body,
        localAddress: '127.0.0.6',
      }),
    );
    expect(statuses).toEqual({ 401: LIMIT, 429: LIMIT });
  });
});
