/**
 * How heavy the API reference is for a reader: Debian's Chromium opens /docs (the Public API's page) at
 * createPost as a new visitor, then /docs/oauth, then /docs again, and this prints, for each, the bytes
 * the server sent (with the status of each response) and the time from navigation until the first curl
 * sample is visible. The pages are served as the server serves them (src/http/served-contract.ts, from
 * dist/docs: run `npm run docs` first); each run is a new browser profile; medians of the runs.
 *
 *   npx tsx scripts/bench-docs.ts            # 5 runs
 *   npx tsx scripts/bench-docs.ts --runs 9
 */
import type { AddressInfo } from 'node:net';
import express from 'express';
import { chromium, type Page } from 'playwright-core';
import { servedContract } from '../src/http/served-contract.js';

const CHROMIUM_PATH = '/usr/bin/chromium';
const runsArgument = process.argv.indexOf('--runs');
const RUNS = runsArgument > 0 ? Number(process.argv[runsArgument + 1]) : 5;

const VISITS = [
  {
    name: '/docs, first visit',
    path: '/docs#tag/Posts/operation/createPost',
    sample: 'curl -X POST "$BASE/public/v1/posts"',
  },
  {
    name: '/docs/oauth, then',
    path: '/docs/oauth#tag/Tokens/operation/token',
    sample: 'curl -X POST "$BASE/api/oauth/token"',
  },
  {
    name: '/docs, again',
    path: '/docs#tag/Posts/operation/createPost',
    sample: 'curl -X POST "$BASE/public/v1/posts"',
  },
];

const app = express();
/** What the server sent for the current visit: the bodies' bytes and each response's status. */
let sent = { bytes: 0, statuses: [] as number[] };
app.use((_req, res, next) => {
  res.on('finish', () => {
    sent.bytes += Number(res.getHeader('content-length') ?? 0);
    sent.statuses.push(res.statusCode);
  });
  next();
});
const server = app.listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
app.use(servedContract(base));

/** Opens `path`, waits until `sample` is visible, and answers the milliseconds that took. */
async function timeToSample(page: Page, path: string, sample: string): Promise<number> {
  const started = performance.now();
  await page.goto(`${base}${path}`, { waitUntil: 'commit' });
  await page.locator('code', { hasText: sample }).first().waitFor({ state: 'visible', timeout: 120_000 });
  return performance.now() - started;
}

const results = VISITS.map(() => ({ ms: [] as number[], bytes: [] as number[], statuses: [] as number[] }));
let version = '';
for (let run = 0; run < RUNS; run++) {
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: ['--no-sandbox', '--disable-gpu'] });
  version = browser.version();
  try {
    const context = await browser.newContext();
    const page = await context.newPage();
    for (const [i, visit] of VISITS.entries()) {
      sent = { bytes: 0, statuses: [] };
      results[i]!.ms.push(await timeToSample(page, visit.path, visit.sample));
      results[i]!.bytes.push(sent.bytes);
      results[i]!.statuses = sent.statuses;
    }
  } finally {
    await browser.close();
  }
}
server.close();

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
console.log(`Chromium ${version}, medians of ${RUNS} runs`);
for (const [i, visit] of VISITS.entries()) {
  const { ms, bytes, statuses } = results[i]!;
  console.log(
    `${visit.name.padEnd(20)} ${(median(bytes) / 1024).toFixed(0).padStart(6)} KiB sent (${statuses.join(', ')}), ` +
      `first curl sample after ${median(ms).toFixed(0)} ms (${ms.map((m) => m.toFixed(0)).join(', ')})`,
  );
}
