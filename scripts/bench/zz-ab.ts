import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { openDatabase } from '../../src/db/database.js';
import { buildIfStale } from '../build-if-stale.mjs';
import { load, operations, median } from './load.js';
import { startService, startBaseline } from './processes.js';
import { seed } from './seed.js';
buildIfStale();
const work = '/tmp/wt17/ab'; fs.rmSync(work, { recursive: true, force: true }); fs.mkdirSync(work, { recursive: true });
const admin = new pg.Client('postgresql://postgres@127.0.0.1:5432/postgres'); await admin.connect();
await admin.query('drop database if exists ab17 with (force)'); await admin.query('create database ab17'); await admin.end();
const url = 'postgresql://postgres@127.0.0.1:5432/ab17';
const h = await openDatabase({ databaseUrl: url }); const seeded = await seed(h.db); await h.close();
const variants: Record<string, Record<string, string>> = JSON.parse(process.env.VARIANTS!);
const base = { DATABASE_URL: url, ROLE: 'api', DATA_DIR: path.join(work, 'data'), RATE_LIMIT_MAX: '1000000', DAILY_POST_LIMIT_SANDBOX: '10000' };
const running = Object.fromEntries(await Promise.all(Object.entries(variants).map(async ([name, env]) => [name, await startService(name, { ...base, ...env }, work)] as const)));
const baseline = await startBaseline(url, work);
const cpuOf = (pid: number) => { const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' '); return (Number(f[11]) + Number(f[12])) * 10; };
for (const opName of (process.env.OPS ?? 'GET /channels').split(',')) {
  const op = operations(seeded).find((o) => o.name === opName)!;
  const targets = [...Object.entries(running), ['baseline', baseline] as const];
  for (const [, t] of targets) await load(t.url, seeded.apiKey, op, 10, 1);
  const results: Record<string, { cpu: number[]; rps: number[] }> = {};
  for (let round = 0; round < Number(process.env.ROUNDS ?? 3); round++) {
    for (const [name, t] of round % 2 ? [...targets].reverse() : targets) {
      const before = cpuOf(t.child.pid!); const s = await load(t.url, seeded.apiKey, op, 10, Number(process.env.SECS ?? 4));
      (results[name] ??= { cpu: [], rps: [] }).cpu.push((cpuOf(t.child.pid!) - before) / (s.rps * Number(process.env.SECS ?? 4))); results[name].rps.push(s.rps);
    }
  }
  for (const [name, r] of Object.entries(results)) console.log(opName.padEnd(22), name.padEnd(12), 'cpu ms/request', median(r.cpu).toFixed(3), 'rps', Math.round(median(r.rps)));
}
for (const t of [...Object.values(running), baseline]) await t.stop();
