import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MCP_TOOLS } from '../generated/mcp-tools.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { ROOT } from './support/processes.js';
import { startTestServer, type TestServer } from './support/server.js';
import { scaled } from './support/timeouts.js';

// The MCP Inspector's command line lists the server's tools with an API key, as the README tells
// integrators to check it. The Inspector is installed apart (scripts/install-mcp-inspector.sh, run by
// .ci/run): without it the test is skipped on a developer's machine and fails on CI.
const INSPECTOR = path.join(ROOT, '.cache', 'mcp-inspector', 'node_modules', '.bin', 'mcp-inspector');
const installed = fs.existsSync(INSPECTOR);
if (!installed && process.env.CI !== 'true') {
  console.warn('\n  MCP Inspector test SKIPPED: run scripts/install-mcp-inspector.sh to install it.\n');
}

let server: TestServer;
let org: TestOrganization;

describe.skipIf(!installed && process.env.CI !== 'true')('the MCP Inspector (--cli)', () => {
  beforeAll(async () => {
    server = await startTestServer();
    org = await createOrganization(server.ctx.db, 'Inspected');
  });
  afterAll(() => server?.close());

  const inspect = (key: string) =>
    promisify(execFile)(
      INSPECTOR,
      ['--cli', `${server.baseUrl}/mcp`, '--transport', 'http', '--header', `Authorization: Bearer ${key}`].concat([
        '--method',
        'tools/list',
        '--strict',
      ]),
      // The tools' schemas are several megabytes of JSON: more than execFile's default buffer.
      { timeout: scaled(60_000), maxBuffer: 64 * 1024 * 1024, env: { ...process.env, NO_COLOR: '1' } },
    );

  it('lists every tool with an API key, with schemas it finds portable', async () => {
    const { stdout } = await inspect(org.apiKey);
    const { tools } = JSON.parse(stdout) as { tools: { name: string; inputSchema: unknown }[] };
    expect(tools.map((tool) => tool.name)).toEqual(MCP_TOOLS.map((tool) => tool.name));
    expect(tools.find((tool) => tool.name === 'createPost')?.inputSchema).toEqual(
      MCP_TOOLS.find((tool) => tool.name === 'createPost')?.inputSchema,
    );
  });

  it('fails without a valid key', async () => {
    await expect(inspect('svc_live_not_a_key')).rejects.toMatchObject({ code: expect.any(Number) as number });
  });
});
