/**
 * Measures the server's memory while a large video goes through the signed three-step upload on
 * local disk. The server runs in a child process of its own (so the numbers are the server's, not
 * the client's) and samples its RSS and heap every 20 ms; this process creates the upload, PUTs a
 * generated MP4 as a stream, completes it, and prints what the server used.
 *
 *   npx tsx scripts/bench-upload.ts            # 200 MB
 *   npx tsx scripts/bench-upload.ts --mb 500
 */
import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { SERVER_NODE_OPTIONS } from './node-options.mjs';

const MB = 1024 * 1024;
const SAMPLE_EVERY_MS = 20;

interface Sample {
  rss: number;
  heapUsed: number;
  external: number;
}
type Message = { type: 'ready'; port: number; apiKey: string } | { type: 'report'; samples: Sample[] };

if (process.argv.includes('--serve')) await serve();
else await measure();

/** The server side: the real application on the embedded defaults, in a temporary DATA_DIR. */
async function serve(): Promise<void> {
  const { compose } = await import('../src/compose.js');
  const { createApiKey } = await import('../src/accounts/api-keys.js');
  const { createOrganizationWithOwner } = await import('../src/accounts/organizations.js');
  const { loadConfig } = await import('../src/core/config.js');
  const { openDatabase } = await import('../src/db/database.js');
  const { migrateToLatest } = await import('../src/db/migrate.js');
  const { createLogger } = await import('../src/core/logger.js');

  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-upload-'));
  const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', NODE_ENV: 'production' });
  const database = await openDatabase({ dataDir });
  await migrateToLatest(database.db);
  const { organization } = await createOrganizationWithOwner(database.db, {
    organizationName: 'Bench',
    email: 'bench@example.com',
    password: 'a long bench password',
  });
  const { secret } = await createApiKey(database.db, organization.id, 'bench');
  const service = await compose({ config, database, logger: createLogger(config) });
  const server = await service.listen(0, '127.0.0.1');
  const port = (server.address() as { port: number }).port;
  config.publicUrl = `http://127.0.0.1:${port}`;
  send({ type: 'ready', port, apiKey: secret });

  let samples: Sample[] = [];
  const sample = () => {
    const { rss, heapUsed, external } = process.memoryUsage();
    samples.push({ rss, heapUsed, external });
  };
  const timer = setInterval(sample, SAMPLE_EVERY_MS);
  const stop = async () => {
    clearInterval(timer);
    server.close();
    await database.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
    process.exit(0);
  };
  process.on('message', (message: string) => {
    if (message === 'start') samples = [];
    if (message === 'report') {
      sample();
      send({ type: 'report', samples });
    }
    if (message === 'stop') void stop();
  });
}

function send(message: Message): void {
  process.send?.(message);
}

/** The client side: the three steps, timed, and the server's memory summarised. */
async function measure(): Promise<void> {
  const mbIndex = process.argv.indexOf('--mb');
  const size = (mbIndex > 0 ? Number(process.argv[mbIndex + 1]) : 200) * MB;
  const child = fork(fileURLToPath(import.meta.url), ['--serve'], {
    execArgv: [...SERVER_NODE_OPTIONS, '--import', 'tsx'],
    stdio: 'inherit',
  });
  try {
    const ready = await next(child, 'ready');
    const origin = `http://127.0.0.1:${ready.port}`;
    const auth = { Authorization: `Bearer ${ready.apiKey}` };

    // Let start-up garbage settle, then take the baseline from a quiet server.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    child.send('start');
    await new Promise((resolve) => setTimeout(resolve, 500));
    const baseline = (await report(child)).at(-1)!;
    child.send('start');

    const started = performance.now();
    const created = await fetch(`${origin}/public/v1/media/uploads`, {
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ fileName: 'bench.mp4', contentType: 'video/mp4', size }),
    });
    if (created.status !== 201) throw new Error(`create answered ${created.status}: ${await created.text()}`);
    const upload = (await created.json()) as { uploadId: string; uploadUrl: string; headers: Record<string, string> };

    const putStarted = performance.now();
    const putStatus = await putStream(upload.uploadUrl, upload.headers, generatedMp4(size));
    const putMs = performance.now() - putStarted;
    if (putStatus !== 200) throw new Error(`PUT answered ${putStatus}`);

    const completeStarted = performance.now();
    const completed = await fetch(`${origin}/public/v1/media/uploads/${upload.uploadId}/complete`, {
      method: 'POST',
      headers: auth,
    });
    const completeMs = performance.now() - completeStarted;
    if (completed.status !== 200) throw new Error(`complete answered ${completed.status}: ${await completed.text()}`);
    const totalMs = performance.now() - started;

    const samples = await report(child);
    const peak = (key: keyof Sample) => Math.max(...samples.map((s) => s[key]));
    const mb = (bytes: number) => `${(bytes / MB).toFixed(1)} MB`;
    const row = (label: string, key: keyof Sample) => {
      const [before, most, growth] = [mb(baseline[key]), mb(peak(key)), `+${mb(peak(key) - baseline[key])}`];
      return `  ${label.padEnd(16)} ${before.padStart(9)} ${most.padStart(9)} ${growth.padStart(10)}`;
    };

    console.log(
      `\nSigned upload of a ${mb(size)} MP4 to local disk ` +
        `(server in its own process, sampled every ${SAMPLE_EVERY_MS} ms, ${samples.length} samples)`,
    );
    console.log(`  create + PUT + complete  ${(totalMs / 1000).toFixed(2)} s`);
    console.log(
      `  PUT                      ${(putMs / 1000).toFixed(2)} s (${(size / MB / (putMs / 1000)).toFixed(0)} MB/s)`,
    );
    console.log(`  complete                 ${completeMs.toFixed(0)} ms`);
    console.log(
      `\n  ${'server memory'.padEnd(16)} ${'before'.padStart(9)} ${'peak'.padStart(9)} ${'growth'.padStart(10)}`,
    );
    console.log(row('RSS', 'rss'));
    console.log(row('heap used', 'heapUsed'));
    console.log(row('external', 'external'));
    console.log(
      `\n  peak RSS growth is ${((100 * (peak('rss') - baseline.rss)) / size).toFixed(1)}% of the file size\n`,
    );
  } finally {
    child.send('stop');
  }
}

function next<T extends Message['type']>(child: ChildProcess, type: T): Promise<Extract<Message, { type: T }>> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: Message) => {
      if (message.type !== type) return;
      child.off('message', onMessage);
      resolve(message as Extract<Message, { type: T }>);
    };
    child.on('message', onMessage);
    child.once('exit', (code) => reject(new Error(`the server exited with ${code}`)));
  });
}

async function report(child: ChildProcess): Promise<Sample[]> {
  const reply = next(child, 'report');
  child.send('report');
  return (await reply).samples;
}

/** An MP4 `ftyp` box followed by zeros, produced 1 MB at a time. */
function generatedMp4(size: number): Readable {
  const head = Buffer.alloc(24);
  head.writeUInt32BE(24, 0);
  head.write('ftypisom', 4, 'latin1');
  head.write('isommp41', 16, 'latin1');
  const chunk = Buffer.alloc(MB);
  let sent = 0;
  return new Readable({
    read() {
      if (sent >= size) return void this.push(null);
      const part = Buffer.from(chunk.subarray(0, Math.min(MB, size - sent)));
      if (sent === 0) head.copy(part);
      sent += part.length;
      this.push(part);
    },
  });
}

function putStream(url: string, headers: Record<string, string>, body: Readable): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method: 'PUT', headers }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    request.on('error', reject);
    body.pipe(request);
  });
}
