import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { SERVER_NODE_OPTIONS } from '../../scripts/node-options.mjs';
import { eventually } from './eventually.js';
import { TIMEOUTS } from './timeouts.js';

export const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * Runs a program of the build as `npm start` (`start`) and `npm run admin` (`admin`) run it: plain
 * node with the options of their command lines, on the bundles in dist/server (the global setup builds
 * them), on the Node running the tests.
 */
export function spawnBuilt(program: 'start' | 'admin', args: string[], env: NodeJS.ProcessEnv): ChildProcess {
  return spawn(process.execPath, [...SERVER_NODE_OPTIONS, path.join(ROOT, 'scripts', `${program}.mjs`), ...args], {
    cwd: ROOT,
    env,
  });
}

export interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Collects what a process prints until it exits; a process still running after `timeoutMs` is killed. */
export function untilExit(child: ChildProcess, timeoutMs = 2 * TIMEOUTS.process): Promise<Finished> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk) => (stdout += chunk));
  child.stderr?.on('data', (chunk) => (stderr += chunk));
  const killer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) => {
    child.on('close', (code) => {
      clearTimeout(killer);
      resolve({ code, stdout: stdout.trim(), stderr: stderr.trim() });
    });
  });
}

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/** Waits until `url` answers 200; throws after `timeoutMs`, or as soon as `child` exits. */
export async function untilReady(url: string, child: ChildProcess, timeoutMs = TIMEOUTS.process): Promise<void> {
  const outcome = await eventually(
    async () => {
      if (child.exitCode !== null) return 'exited';
      const response = await fetch(url);
      if (!response.ok) throw new Error(`${url} answered ${response.status}`);
      return 'ready';
    },
    { timeout: timeoutMs },
  ).catch((error: Error) => {
    throw new Error(`${url} did not answer within ${timeoutMs} ms: ${error.message}`, { cause: error });
  });
  if (outcome === 'exited') throw new Error(`the process exited with ${child.exitCode} before ${url} answered`);
}

/**
 * Waits until a worker process of the build (`--role worker`) says it runs; throws if it exits first,
 * or after `timeoutMs`, with what it printed on standard error (`stderr`).
 */
export function untilWorkerRunning(
  child: ChildProcess,
  stderr: () => string,
  timeoutMs = TIMEOUTS.process,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let stdout = '';
    const done = () => {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.off('exit', onExit);
    };
    const onData = (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.includes('worker is running')) {
        done();
        resolve();
      }
    };
    const onExit = (code: number | null) => {
      done();
      reject(new Error(`a worker exited with ${code} before it ran: ${stderr()}`));
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`a worker did not run within ${timeoutMs} ms: ${stderr()}`));
    }, timeoutMs);
    child.stdout?.on('data', onData);
    child.once('exit', onExit);
  });
}

/** Sends SIGTERM and resolves with the exit code. */
export function stop(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    child.on('exit', (code) => resolve(code));
    child.kill('SIGTERM');
  });
}

/** A server of the build (`npm start`) running as a child process. */
export interface BuiltServer {
  /** `http://127.0.0.1:<port>`. */
  baseUrl: string;
  port: number;
  process: ChildProcess;
  /** What it printed on standard error so far. */
  stderr(): string;
  /** SIGTERM; resolves with its exit code. */
  stop(): Promise<number | null>;
}

/**
 * Starts the build's server (`npm start`, with `args`) with `env` on `port` (a free one by default),
 * and waits until it is ready (`/readyz`). When it does not get there, it is killed and the error
 * carries what it printed on standard error.
 */
export async function startBuilt(
  env: NodeJS.ProcessEnv,
  options: { args?: string[]; port?: number } = {},
): Promise<BuiltServer> {
  const port = options.port ?? (await freePort());
  const child = spawnBuilt('start', options.args ?? [], { ...env, PORT: String(port) });
  let stderr = '';
  child.stderr?.on('data', (chunk) => (stderr += chunk));
  const baseUrl = `http://127.0.0.1:${port}`;
  try {
    await untilReady(`${baseUrl}/readyz`, child);
  } catch (error) {
    child.kill('SIGKILL');
    throw new Error(`${(error as Error).message}\n${stderr}`, { cause: error });
  }
  return { baseUrl, port, process: child, stderr: () => stderr, stop: () => stop(child) };
}
