/**
 * `npm run mock`: Prism mock servers for both contracts, answering the spec's examples.
 *
 * Prism is spawned from node_modules/.bin directly (not through npx, which leaves the real process
 * running when it is stopped), each in its own process group, so stopping this launcher stops
 * every process Prism started. Ports: MOCK_PORT (Public API, default 4010) and MOCK_OAUTH_PORT
 * (OAuth, default 4011).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PRISM = fileURLToPath(new URL('../node_modules/.bin/prism', import.meta.url));
const HOST = '127.0.0.1';
const STOP_GRACE_MS = 5_000;

interface Mock {
  name: string;
  spec: string;
  port: number;
  hint: string;
}

function portFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) {
    console.error(`${name} must be a port number (1-65535), not "${raw}".`);
    process.exit(2);
  }
  return port;
}

const publicPort = portFromEnv('MOCK_PORT', 4010);
const oauthPort = portFromEnv('MOCK_OAUTH_PORT', 4011);
const mocks: Mock[] = [
  {
    name: 'public-v1',
    spec: 'openapi/public-v1.yaml',
    port: publicPort,
    hint: `curl -H 'Authorization: Bearer svc_live_x' http://${HOST}:${publicPort}/public/v1/channels`,
  },
  {
    name: 'oauth',
    spec: 'openapi/oauth.yaml',
    port: oauthPort,
    hint: `curl http://${HOST}:${oauthPort}/.well-known/oauth-authorization-server`,
  },
];

const children = new Map<string, ChildProcess>();
let stopping = false;

/** Prefixes each line of Prism's output with the mock's name. */
function relay(
  name: string,
  stream: NodeJS.ReadableStream,
  out: NodeJS.WriteStream,
  onLine: (line: string) => void,
): void {
  let buffered = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    buffered += chunk;
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) {
      out.write(`[${name}] ${line}\n`);
      onLine(line);
    }
  });
}

function start(mock: Mock): ChildProcess {
  const child = spawn(PRISM, ['mock', mock.spec, '--host', HOST, '--port', String(mock.port)], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const announce = (line: string) => {
    if (line.includes('Prism is listening on')) {
      console.log(`\n${mock.name} mock (${mock.spec}): http://${HOST}:${mock.port}\n  try: ${mock.hint}\n`);
    }
  };
  if (child.stdout) relay(mock.name, child.stdout, process.stdout, announce);
  if (child.stderr) relay(mock.name, child.stderr, process.stderr, announce);
  child.on('error', (error) => {
    console.error(`[${mock.name}] could not start ${PRISM}: ${error.message}`);
    void stop(1);
  });
  child.on('exit', (code, signal) => {
    children.delete(mock.name);
    if (!stopping) {
      console.error(`[${mock.name}] Prism exited (${signal ?? `code ${code}`}); stopping the other mock.`);
      void stop(1);
    }
  });
  return child;
}

/** Signals a child's whole process group; it is its group leader because it was spawned detached. */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // The group is already gone.
  }
}

async function stop(exitCode: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  const running = [...children.values()];
  const exited = running.map((child) => new Promise<void>((resolve) => child.once('exit', () => resolve())));
  for (const child of running) signalGroup(child, 'SIGTERM');
  const timeout = setTimeout(() => {
    for (const child of children.values()) signalGroup(child, 'SIGKILL');
  }, STOP_GRACE_MS);
  await Promise.all(exited);
  clearTimeout(timeout);
  process.exit(exitCode);
}

process.on('SIGINT', () => void stop(0));
process.on('SIGTERM', () => void stop(0));
// Last resort if this process ends any other way: don't leave Prism running.
process.on('exit', () => {
  for (const child of children.values()) signalGroup(child, 'SIGKILL');
});

for (const mock of mocks) children.set(mock.name, start(mock));
console.log(
  `Starting Prism mocks on http://${HOST}:${publicPort} (public-v1) and http://${HOST}:${oauthPort} (oauth); Ctrl+C stops both.`,
);
