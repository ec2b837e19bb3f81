/**
 * Calls through the outbound client (src/net/outbound-client.ts) to an HTTPS server on loopback, as
 * the networks' adapters and the webhooks make them: with connections kept alive (what the service
 * does) and with a new connection, so a new TCP and TLS handshake, for every call (what a closed
 * client does, and what the service did before). The server runs in a child process of its own, so
 * each side's CPU is its own. Prints calls/s, latency and CPU per call; asserts nothing.
 *
 *   npx tsx scripts/bench-outbound.ts            # 1,000 calls per run
 *   BENCH_CALLS=5000 npx tsx scripts/bench-outbound.ts
 *
 * Each run is one of: calls one after another, or 10 at a time; each is run three times, the two
 * ways interleaved, after a warm-up of each way.
 */
import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { OutboundClient } from '../src/net/outbound-client.js';
import { makeCertificate } from '../test/support/certificate.js';

const HOST = 'api.bench.test';
const CALLS = Number(process.env.BENCH_CALLS || 1000);
const ROUNDS = 3;
const PARALLEL = 10;
const WARM_UP = 100;

type Message = { type: 'ready'; port: number } | { type: 'cpu'; micros: number };

if (process.argv[2] === '--serve') serve(process.argv[3]!, process.argv[4]!);
else await measure();

/** The server: answers every POST with a small JSON body, as a network's API does. */
function serve(certPath: string, keyPath: string): void {
  const server = https.createServer({ cert: fs.readFileSync(certPath), key: fs.readFileSync(keyPath) }, (req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"data":{"publish_id":"v_pub_1"}}');
    });
  });
  // Longer than the client keeps an idle connection, as the networks' servers do.
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => {
    tell({ type: 'ready', port: (server.address() as { port: number }).port });
  });
  process.on('message', (message: string) => {
    if (message === 'cpu') {
      const { user, system } = process.cpuUsage();
      tell({ type: 'cpu', micros: user + system });
    }
    if (message === 'stop') server.close(() => process.exit(0));
  });
}

function tell(message: Message): void {
  process.send?.(message);
}

interface Run {
  way: string;
  shape: string;
  callsPerSecond: number;
  latencies: number[];
  clientCpuMicros: number;
  serverCpuMicros: number;
}

async function measure(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-outbound-'));
  const certificate = makeCertificate(dir, HOST);
  tls.setDefaultCACertificates([...tls.getCACertificates('default'), certificate.cert]);
  const child = fork(fileURLToPath(import.meta.url), ['--serve', certificate.certPath, certificate.keyPath], {
    execArgv: ['--import', 'tsx'],
    stdio: 'inherit',
  });
  try {
    const { port } = (await next(child, 'ready')) as { port: number };
    const url = `https://${HOST}:${port}/v2/post/publish/video/init/`;
    const ways = {
      'kept alive': () => client(),
      'new connection each call': () => {
        const closed = client();
        closed.close();
        return closed;
      },
    };
    const runs: Run[] = [];
    for (const make of Object.values(ways)) await calls(make(), url, WARM_UP, 1);
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const [way, make] of Object.entries(ways)) {
        for (const parallel of [1, PARALLEL]) {
          const outbound = make();
          runs.push({
            way,
            shape: parallel === 1 ? 'one after another' : `${parallel} at a time`,
            ...(await timed(child, outbound, url, parallel)),
          });
          outbound.close();
        }
      }
    }
    report(runs);
  } finally {
    child.send('stop');
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function client(): OutboundClient {
  return new OutboundClient(
    { allowPrivateAddresses: true, allowedRanges: [], idleTimeoutSeconds: 10, maxDurationSeconds: 30 },
    (hostname) => Promise.resolve(hostname === HOST ? ['127.0.0.1'] : []),
  );
}

async function timed(child: ChildProcess, outbound: OutboundClient, url: string, parallel: number) {
  const serverBefore = await serverCpu(child);
  const clientBefore = process.cpuUsage();
  const started = performance.now();
  const latencies = await calls(outbound, url, CALLS, parallel);
  const seconds = (performance.now() - started) / 1000;
  const clientUsed = process.cpuUsage(clientBefore);
  const serverUsed = (await serverCpu(child)) - serverBefore;
  return {
    callsPerSecond: CALLS / seconds,
    latencies,
    clientCpuMicros: (clientUsed.user + clientUsed.system) / CALLS,
    serverCpuMicros: serverUsed / CALLS,
  };
}

/** `count` calls, `parallel` at a time; the latency of each in ms. */
async function calls(outbound: OutboundClient, url: string, count: number, parallel: number): Promise<number[]> {
  const latencies: number[] = [];
  let left = count;
  const worker = async () => {
    while (left > 0) {
      left -= 1;
      const started = performance.now();
      const answer = await outbound.call(url, {
        method: 'POST',
        trusted: true,
        headers: { 'Content-Type': 'application/json' },
        body: '{"post_info":{"title":"bench"}}',
        timeoutSeconds: 30,
        maxResponseBytes: 64 * 1024,
      });
      if (answer.status !== 200) throw new Error(`the server answered ${answer.status}`);
      latencies.push(performance.now() - started);
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return latencies;
}

async function serverCpu(child: ChildProcess): Promise<number> {
  child.send('cpu');
  return ((await next(child, 'cpu')) as { micros: number }).micros;
}

function next(child: ChildProcess, type: Message['type']): Promise<Message> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`the server exited with ${code}`));
    const onMessage = (message: Message) => {
      if (message.type !== type) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      resolve(message);
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

function report(runs: Run[]): void {
  const percentile = (sorted: number[], p: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
  console.log(`\n${CALLS} calls per run, ${ROUNDS} runs each, HTTPS on loopback (Node ${process.version})\n`);
  const columns = ['calls/s', 'p50 ms', 'p95 ms', 'p99 ms', 'client CPU µs/call', 'server CPU µs/call'];
  console.log(['way'.padEnd(25), 'shape'.padEnd(17), ...columns].join(' | '));
  for (const run of runs) {
    const sorted = [...run.latencies].sort((a, b) => a - b);
    console.log(
      [
        run.way.padEnd(25),
        run.shape.padEnd(17),
        String(Math.round(run.callsPerSecond)).padStart(7),
        percentile(sorted, 0.5).toFixed(2).padStart(6),
        percentile(sorted, 0.95).toFixed(2).padStart(6),
        percentile(sorted, 0.99).toFixed(2).padStart(6),
        String(Math.round(run.clientCpuMicros)).padStart(18),
        String(Math.round(run.serverCpuMicros)).padStart(18),
      ].join(' | '),
    );
  }
}
