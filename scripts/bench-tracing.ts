/**
 * `npx tsx scripts/bench-tracing.ts [postgresql://…]`: what OpenTelemetry traces cost. The build's API
 * process on PostgreSQL (ROLE=api), once with tracing off and once sending every trace (always_on) to a
 * stand-in collector on loopback that reads and drops what it gets, in turn, three rounds of 5 s each at
 * 10 connections for a GET and a create; prints requests/s, p99 and the CPU the API process used per
 * request (medians), the spans received, and the time from the process's start to its first ready
 * answer. Asserts nothing.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { openDatabase } from '../src/db/database.js';
import { buildIfStale } from './build-if-stale.mjs';
import { load, median, operations, type Operation } from './bench/load.js';
import { seed, type Seeded } from './bench/seed.js';
import { SERVER_NODE_OPTIONS } from './node-options.mjs';

const SECONDS = 5;
const ROUNDS = 3;
const CONNECTIONS = 10;
const server = process.argv[2] || 'postgresql://postgres@127.0.0.1:5432/postgres';

async function admin(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: server });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/** A collector that takes every export and counts its bytes, nothing more. */
async function startSink(): Promise<{ url: string; exports: number; bytes: number; close(): void }> {
  const sink = {
    url: '',
    exports: 0,
    bytes: 0,
    close: () => httpServer.close(),
  };
  const httpServer = http.createServer((req, res) => {
    req.on('data', (chunk: Buffer) => (sink.bytes += chunk.length));
    req.on('end', () => {
      sink.exports += 1;
      res.writeHead(200, { 'Content-Type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  sink.url = `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}`;
  return sink;
}

interface Running {
  name: string;
  url: string;
  /** CPU time the process used so far (user and system), in ms. */
  cpuMs(): number;
  stop(): Promise<void>;
}

/** The build's server as `npm start` runs it, on a free port; resolves once `/readyz` answers. */
async function startService(name: string, env: NodeJS.ProcessEnv, work: string): Promise<Running> {
  const port = await new Promise<number>((resolve) => {
    const probe = http.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
  const log = fs.openSync(path.join(work, `${name}.log`), 'a');
  const child = spawn(process.execPath, [...SERVER_NODE_OPTIONS, 'scripts/start.mjs'], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'production', ...env, PORT: String(port) },
    stdio: ['ignore', log, log],
  });
  fs.closeSync(log);
  const url = `http://127.0.0.1:${port}`;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}; see ${work}/${name}.log`);
    const ready = await fetch(`${url}/readyz`).then(
      (response) => response.ok,
      () => false,
    );
    if (ready) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const ticks = 100; // USER_HZ on Linux
  return {
    name,
    url,
    cpuMs: () => {
      const stat = fs.readFileSync(`/proc/${child.pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticks;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

async function main(): Promise<void> {
  buildIfStale();
  const name = `bench_${randomBytes(4).toString('hex')}`;
  await admin(`create database ${name}`);
  const url = new URL(server);
  url.pathname = `/${name}`;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-tracing-'));
  const sink = await startSink();
  const running: Running[] = [];
  try {
    const database = await openDatabase({ databaseUrl: url.toString() });
    const seeded = await seed(database.db).finally(() => database.close());
    const env = {
      DATABASE_URL: url.toString(),
      DATA_DIR: work,
      ROLE: 'api',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_MAX: '1000000',
      DAILY_POST_LIMIT_SANDBOX: '10000',
      RESPONSE_VALIDATION: 'off',
    };
    const started = performance.now();
    const off = await startService('off', env, work);
    const offStart = performance.now() - started;
    running.push(off);
    const startedOn = performance.now();
    const on = await startService(
      'on',
      { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_TRACES_SAMPLER: 'always_on' },
      work,
    );
    const onStart = performance.now() - startedOn;
    running.push(on);
    console.log(
      `Node ${process.version}, ${os.cpus().length} cores, load average ${os.loadavg()[0]!.toFixed(1)}; ` +
        `start until ready: off ${Math.round(offStart)} ms, on ${Math.round(onStart)} ms`,
    );
    const ops = operations(seeded).filter((op) => op.name === 'GET /posts/{id}' || op.name === 'POST /posts');
    for (const target of [off, on])
      for (const operation of ops) await load(target.url, seeded.apiKey, operation, 10, 1);
    console.log('| Operation | Tracing | req/s | p99 ms | CPU ms/request |\n| --- | --- | --- | --- | --- |');
    for (const operation of ops) {
      const runs = { off: [] as Run[], on: [] as Run[] };
      for (let round = 0; round < ROUNDS; round++) {
        const order = round % 2 === 0 ? ([off, on] as const) : ([on, off] as const);
        for (const target of order) runs[target.name as 'off' | 'on'].push(await measured(target, seeded, operation));
      }
      for (const side of ['off', 'on'] as const) {
        const r = runs[side];
        console.log(
          `| ${operation.name} | ${side} | ${Math.round(median(r.map((x) => x.rps)))} | ` +
            `${median(r.map((x) => x.p99))} | ${median(r.map((x) => x.cpuMs)).toFixed(2)} |`,
        );
      }
    }
  } finally {
    for (const target of running) await target.stop();
    console.log(`The collector received ${sink.exports} exports, ${Math.round(sink.bytes / 1024)} KiB.`);
    sink.close();
    await admin(`drop database if exists ${name} with (force)`);
    fs.rmSync(work, { recursive: true, force: true });
  }
}

interface Run {
  rps: number;
  p99: number;
  cpuMs: number;
}

async function measured(target: Running, seeded: Seeded, operation: Operation): Promise<Run> {
  const before = target.cpuMs();
  const sample = await load(target.url, seeded.apiKey, operation, CONNECTIONS, SECONDS);
  const requests = Math.max(1, sample.rps * SECONDS);
  if (sample.failed > 0) console.log(`  (${sample.failed} failed in a run of ${operation.name} on ${target.name})`);
  return { rps: sample.rps, p99: sample.p99, cpuMs: (target.cpuMs() - before) / requests };
}

await main();
