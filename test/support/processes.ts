import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { SERVER_NODE_OPTIONS } from '../../scripts/node-options.mjs';

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
export function untilExit(child: ChildProcess, timeoutMs = 60_000): Promise<Finished> {
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

/** Waits until `url` answers 200; throws after `timeoutMs` or when `child` exits first. */
export async function untilReady(url: string, child: ChildProcess, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the process exited with ${child.exitCode} before ${url} answered`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms`);
}

/** Sends SIGTERM and resolves with the exit code. */
export function stop(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    child.on('exit', (code) => resolve(code));
    child.kill('SIGTERM');
  });
}
