import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort, ROOT, untilReady } from '../../test/support/processes.js';

export interface Running {
  name: string;
  url: string;
  child: ChildProcess;
  /** Resident memory of the process now, in MB. */
  rssMb(): number;
  stop(): Promise<void>;
}

function rssMbOf(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? NaN);
  return Math.round(kb / 1024);
}

/**
 * Starts a program with plain node (no tsx, no esbuild at run time) and waits until `readyPath`
 * answers 200. Its output goes to `logFile`: the service's request log is part of its cost.
 */
async function startProgram(name: string, program: string, args: string[], env: NodeJS.ProcessEnv, readyPath: string, logFile: string): Promise<Running> {
  const port = await freePort();
  const log = fs.openSync(logFile, 'a');
  const child = spawn(process.execPath, [...args, program], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', log, log],
  });
  fs.closeSync(log);
  const url = `http://127.0.0.1:${port}`;
  await untilReady(`${url}${readyPath}`, child, 120_000);
  return {
    name,
    url,
    child,
    rssMb: () => rssMbOf(child.pid!),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** The service as `npm start` runs it: scripts/start.mjs imports the build in dist/server. */
export function startService(name: string, env: NodeJS.ProcessEnv, work: string, nodeArgs: string[] = []): Promise<Running> {
  return startProgram(name, path.join(ROOT, 'scripts/start.mjs'), nodeArgs, { NODE_ENV: 'production', ...env }, '/readyz', path.join(work, `${name}.log`));
}

export function startBaseline(databaseUrl: string, work: string): Promise<Running> {
  return startProgram('baseline', path.join(ROOT, 'scripts/bench/baseline.mjs'), [], { BASELINE_DATABASE_URL: databaseUrl }, '/ready', path.join(work, 'baseline.log'));
}
