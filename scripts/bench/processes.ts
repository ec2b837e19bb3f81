import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort, ROOT, untilReady } from '../../test/support/processes.js';
import { SERVER_NODE_OPTIONS } from '../node-options.mjs';

export interface Running {
  name: string;
  url: string;
  child: ChildProcess;
  /** Resident memory of the process now, in MB. */
  rssMb(): number;
  /** The most resident memory the process has had so far, in MB (its high-water mark). */
  peakRssMb(): number;
  /** CPU time the process has used so far (user and system), in ms. */
  cpuMs(): number;
  stop(): Promise<void>;
}

function statusMbOf(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? NaN);
  return Math.round(kb / 1024);
}

const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

function cpuMsOf(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  // After `pid (command) `: state is field 3, utime and stime are fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}

/**
 * CPU time used so far by the PostgreSQL server on this machine (every `postgres` process: backends,
 * WAL writer, checkpointer), in ms; `undefined` when it does not run here. Processes that ended in
 * between are missed, so it is read around runs on pooled connections, which stay.
 */
export function postgresCpuMs(): number | undefined {
  let pids: string[];
  try {
    pids = execFileSync('pgrep', ['-x', 'postgres']).toString().trim().split('\n').filter(Boolean);
  } catch {
    return undefined;
  }
  return pids.reduce((total, pid) => {
    try {
      return total + cpuMsOf(Number(pid));
    } catch {
      return total;
    }
  }, 0);
}

/**
 * Starts a program with plain node (no tsx, no esbuild at run time) and waits until `readyPath`
 * answers 200. Its output goes to `logFile`: the service's request log is part of its cost.
 */
async function startProgram(
  name: string,
  program: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  readyPath: string,
  logFile: string,
): Promise<Running> {
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
    rssMb: () => statusMbOf(child.pid!, 'VmRSS'),
    peakRssMb: () => statusMbOf(child.pid!, 'VmHWM'),
    cpuMs: () => cpuMsOf(child.pid!),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** The service as `npm start` runs it: scripts/start.mjs imports the build in dist/server. */
export function startService(
  name: string,
  env: NodeJS.ProcessEnv,
  work: string,
  nodeArgs: string[] = [],
): Promise<Running> {
  return startProgram(
    name,
    path.join(ROOT, 'scripts/start.mjs'),
    [...SERVER_NODE_OPTIONS, ...nodeArgs],
    { NODE_ENV: 'production', ...env },
    '/readyz',
    path.join(work, `${name}.log`),
  );
}

export function startBaseline(databaseUrl: string, work: string): Promise<Running> {
  return startProgram(
    'baseline',
    path.join(ROOT, 'scripts/bench/baseline.mjs'),
    [],
    { BASELINE_DATABASE_URL: databaseUrl },
    '/ready',
    path.join(work, 'baseline.log'),
  );
}
