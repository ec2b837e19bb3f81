/**
 * How the OAuth token endpoint and OAuth tokens on the Public API perform, and how often parallel
 * redemptions of one code succeed. Starts the real application on loopback. Prints numbers; asserts
 * nothing.
 *
 *   npx tsx scripts/bench-oauth.ts                       # embedded PGlite, in memory
 *   npx tsx scripts/bench-oauth.ts postgresql://postgres@127.0.0.1:5432/test
 *
 * With a PostgreSQL URL it creates a scratch database next to the one named, and drops it at the end.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { createApiKey } from '../src/accounts/api-keys.js';
import { compose } from '../src/compose.js';
import { loadConfig } from '../src/core/config.js';
import { newId } from '../src/core/ids.js';
import { createLogger } from '../src/core/logger.js';
import { openDatabase, type DatabaseHandle } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { OutboundClient } from '../src/net/outbound-client.js';
import { AppPictureDownloader } from '../src/oauth/app-pictures.js';
import { registerApp } from '../src/oauth/apps.js';
import { approveApp } from '../src/oauth/grants.js';

const EXCHANGES = 200;
const API_CALLS = 500;
const RACES = 10;
const RACERS = 20;

async function scratchDatabase(url: string | undefined): Promise<DatabaseHandle> {
  if (!url) return openDatabase({});
  const name = `bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const scratch = new URL(url);
  scratch.pathname = `/${name}`;
  const handle = await openDatabase({ databaseUrl: scratch.toString(), poolSize: RACERS });
  return {
    ...handle,
    close: async () => {
      await handle.close();
      const again = new pg.Client({ connectionString: url });
      await again.connect();
      await again.query(`drop database if exists ${name} with (force)`);
      await again.end();
    },
  };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function report(label: string, samples: number[]): void {
  const sorted = [...samples].sort((a, b) => a - b);
  console.log(
    `${label.padEnd(44)} p50 ${percentile(sorted, 50).toFixed(2)} ms   ` +
      `p95 ${percentile(sorted, 95).toFixed(2)} ms   (${samples.length} runs)`,
  );
}

async function main() {
  const database = await scratchDatabase(process.argv[2]);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-oauth-'));
  const { db } = database;
  let server: Server | undefined;
  try {
    await migrateToLatest(db);
    const config = loadConfig({
      DATA_DIR: dataDir,
      NODE_ENV: 'test',
      LOG_LEVEL: 'silent',
      RATE_LIMIT_MAX: '1000000',
      OAUTH_AUTH_FAILURES_PER_CLIENT: '1000000',
      OAUTH_AUTH_FAILURES_PER_ADDRESS: '1000000',
    });
    const service = await compose({ config, database, logger: createLogger({ logLevel: 'silent' }) });
    const listening = await service.listen(0, '127.0.0.1');
    server = listening;
    const base = `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
    config.publicUrl = base;

    const organizationId = newId('org');
    await db.insertInto('organizations').values({ id: organizationId, name: 'Bench' }).execute();
    const userId = newId('usr');
    await db
      .insertInto('users')
      .values({ id: userId, email: 'bench@example.com', name: 'Bench', password_hash: 'x' })
      .execute();
    const details = { name: 'Bench', description: '', pictureUrl: '', redirectUri: 'https://bench.example.org/cb' };
    const { app, secret } = await registerApp(
      db,
      organizationId,
      details,
      new AppPictureDownloader(new OutboundClient(config.media.fetch)),
      new Date(),
    );
    const issue = () =>
      approveApp(
        db,
        { appId: app.id, organizationId, userId, redirectUri: null, codeChallenge: null, resource: null, scope: null },
        new Date(),
      );
    const redeem = (code: string) =>
      fetch(`${base}/api/oauth/token`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({
          grant_type: 'authorization_code',
          code,
          client_id: app.client_id,
          client_secret: secret,
        }),
      });

    console.log(`database: ${database.kind}`);
    const exchanges: number[] = [];
    let token = '';
    for (let i = 0; i < EXCHANGES; i++) {
      const code = await issue();
      const start = performance.now();
      const response = await redeem(code);
      const body = (await response.json()) as { access_token: string };
      exchanges.push(performance.now() - start);
      token = body.access_token;
    }
    report('POST /api/oauth/token (code exchange)', exchanges);

    const { secret: apiKey } = await createApiKey(db, organizationId, 'bench');
    for (const [label, credential] of [
      ['GET /public/v1/channels with a pos_ token', token],
      ['GET /public/v1/channels with an API key', apiKey],
    ] as const) {
      const samples: number[] = [];
      for (let i = 0; i < API_CALLS; i++) {
        const start = performance.now();
        const response = await fetch(`${base}/public/v1/channels`, {
          headers: { Authorization: `Bearer ${credential}` },
        });
        await response.arrayBuffer();
        samples.push(performance.now() - start);
      }
      report(label, samples);
    }

    const raceTimes: number[] = [];
    const winners: number[] = [];
    for (let i = 0; i < RACES; i++) {
      const code = await issue();
      const start = performance.now();
      const responses = await Promise.all(Array.from({ length: RACERS }, () => redeem(code)));
      raceTimes.push(performance.now() - start);
      winners.push(responses.filter((r) => r.status === 200).length);
      await Promise.all(responses.map((r) => r.arrayBuffer()));
    }
    report(`${RACERS} parallel redemptions of one code`, raceTimes);
    console.log(`successful redemptions per race: ${winners.join(', ')}`);
  } finally {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await database.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
