import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { scaled, TIMEOUTS } from '../../support/timeouts.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const PRISM = fileURLToPath(new URL('../../../node_modules/@stoplight/prism-cli/dist/index.js', import.meta.url));
// Prism declares Node 24.18 or later: it runs on the project's own Node 24 whichever Node runs the tests.
const PROJECT_NODE = fileURLToPath(new URL('../../../node_modules/node/bin/node', import.meta.url));
export const PUBLIC_SPEC = 'openapi/public-v1.yaml';
export const OAUTH_SPEC = 'openapi/oauth.yaml';
const HOST = '127.0.0.1';
const START_TIMEOUT_MS = TIMEOUTS.process;
const STOP_GRACE_MS = scaled(5_000);

export interface PrismServer {
  /** The origin Prism listens on, e.g. `http://127.0.0.1:41234`. */
  url: string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, HOST, () => {
      const address = probe.address();
      probe.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/**
 * Starts Prism on a free loopback port: `mock` answers the contract's examples, `proxy` forwards
 * to `upstream` and, with `--errors`, turns any request or response that breaks the contract into
 * an error. Prism is spawned directly (npx would leave it running when stopped),
 * as the leader of its own process group, so stopping it stops everything it started.
 */
export async function startPrism(mode: { mock: true } | { proxy: string }, spec = PUBLIC_SPEC): Promise<PrismServer> {
  const port = await freePort();
  const args =
    'proxy' in mode
      ? ['proxy', '--errors', spec, mode.proxy, '--host', HOST, '--port', String(port)]
      : ['mock', spec, '--host', HOST, '--port', String(port)];
  const child = spawn(PROJECT_NODE, [PRISM, ...args], { cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`Prism did not start within ${START_TIMEOUT_MS} ms:\n${output}`)),
      START_TIMEOUT_MS,
    );
    const onData = (chunk: Buffer) => {
      // Keep only the start of the log: Prism logs every request, and only start-up failures matter here.
      if (output.length < 20_000) output += chunk.toString('utf8');
      if (output.includes('Prism is listening')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`Prism exited (${signal ?? `code ${code}`}) before listening:\n${output}`));
    });
  });

  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, signal);
    } catch {
      // The group is already gone.
    }
  };
  return {
    url: `http://${HOST}:${port}`,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      signalGroup('SIGTERM');
      const timer = setTimeout(() => signalGroup('SIGKILL'), STOP_GRACE_MS);
      await exited;
      clearTimeout(timer);
    },
  };
}
