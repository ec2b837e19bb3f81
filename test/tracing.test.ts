import { createRequire } from 'node:module';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/core/config.js';
import { createLogger } from '../src/core/logger.js';
import { sandboxToken } from '../src/providers/sandbox/adapter.js';
import { publicApi, type Schemas } from './support/api.js';
import { TEST_DATABASE_URL } from './support/database.js';
import { eventually } from './support/eventually.js';
import { startFakeNetwork, type FakeNetwork } from './support/fake-network.js';
import { createChannel, createOrganization, type TestOrganization } from './support/fixtures.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './support/otlp-receiver.js';
import { freePort, spawnBuilt, stop } from './support/processes.js';
import { scratchInstallation } from './support/scratch.js';
import { startTestServer, TEST_ENCRYPTION_KEY, type TestServer } from './support/server.js';
import { scaled, TIMEOUTS } from './support/timeouts.js';
import { dataOf } from './support/typed-answers.js';

// OpenTelemetry traces, off by default and sent to an OTLP/HTTP receiver (a stand-in collector on
// loopback) when the standard variables name one. One trace follows a post from the request that
// creates it to the network that publishes it, across the job queue. The case with tracing off runs
// first: it checks that nothing of the SDK was loaded in this process, which a later case changes.

const KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 };
const COLLECTOR_SECRET = 'collector-secret-7Hq2xV9pLm';

/** The modules of OpenTelemetry's SDK and exporters this process loaded so far. */
function sdkModulesLoaded(): string[] {
  const cache = createRequire(import.meta.url).cache;
  return Object.keys(cache).filter((file) => /[\\/]@opentelemetry[\\/](sdk-|exporter-)/.test(file));
}

describe('the tracing configuration', () => {
  it('is off by default, and on with an OTLP endpoint or OTEL_TRACES_EXPORTER=otlp', () => {
    expect(loadConfig({}).tracing).toBeUndefined();
    expect(loadConfig({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' }).tracing).toBeUndefined();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector.example:4318' }).tracing).toEqual({
      endpoint: 'https://collector.example:4318/v1/traces',
      protocol: 'http/protobuf',
      headers: {},
      timeoutMs: 10_000,
      compression: 'none',
      resource: { 'service.name': 'post-scheduler' },
      sampler: 'parentbased_always_on',
      samplerRatio: 1,
      scheduleDelayMs: 5000,
      maxQueueSize: 2048,
    });
    expect(loadConfig({ OTEL_TRACES_EXPORTER: 'otlp' }).tracing?.endpoint).toBe('http://localhost:4318/v1/traces');
    const specific = loadConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces.example/custom/path',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-tenant=acme,api-key=general',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'api-key=for%20traces',
      OTEL_EXPORTER_OTLP_COMPRESSION: 'gzip',
      OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-attributes,deployment.environment.name=staging',
      OTEL_SERVICE_NAME: 'scheduler-eu',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
    }).tracing;
    expect(specific).toMatchObject({
      endpoint: 'http://traces.example/custom/path',
      protocol: 'http/json',
      headers: { 'x-tenant': 'acme', 'api-key': 'for traces' },
      compression: 'gzip',
      resource: { 'service.name': 'scheduler-eu', 'deployment.environment.name': 'staging' },
      sampler: 'parentbased_traceidratio',
      samplerRatio: 0.25,
    });
  });

  it('is off with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none, whatever endpoint is set', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    expect(loadConfig({ ...endpoint, OTEL_SDK_DISABLED: 'true' }).tracing).toBeUndefined();
    expect(loadConfig({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' }).tracing).toBeUndefined();
  });

  it('refuses what it cannot do, naming each variable, and never echoes a header', () => {
    let message = '';
    try {
      loadConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
        OTEL_EXPORTER_OTLP_HEADERS: `authorization=Bearer ${COLLECTOR_SECRET},${COLLECTOR_SECRET}`,
        OTEL_TRACES_SAMPLER: 'jaeger_remote',
        OTEL_TRACES_SAMPLER_ARG: '2',
        OTEL_BSP_SCHEDULE_DELAY: 'soon',
      });
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      message = (error as Error).message;
    }
    expect(message).toContain('OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL');
    expect(message).toContain('OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported');
    expect(message).toContain('OTEL_EXPORTER_OTLP_HEADERS must list a header as key=value');
    expect(message).toContain('OTEL_TRACES_SAMPLER must be one of');
    expect(message).toContain('OTEL_TRACES_SAMPLER_ARG must be a number between 0 and 1');
    expect(message).toContain('OTEL_BSP_SCHEDULE_DELAY must be an integer');
    expect(message).not.toContain(COLLECTOR_SECRET);
    expect(() => loadConfig({ OTEL_TRACES_EXPORTER: 'console' })).toThrow(/OTEL_TRACES_EXPORTER must be otlp or none/);
  });
});

/** A test server with the worker, publishing to a fake sandbox network, with `env` (the tracing). */
async function startPublishingServer(network: FakeNetwork, env: Record<string, string>) {
  const server = await startTestServer({ worker: true, env: { SANDBOX_NETWORK_URL: network.url, ...env } });
  const org = await createOrganization(server.ctx.db, 'Traced');
  const channel = await createChannel(server.ctx.db, org.id, 'sandbox', 'Sandbox');
  return { server, org, channelId: channel.id };
}

/** Creates a post to publish now on the channel, through the Public API, and waits until it is published. */
async function publishNow(origin: { baseUrl: string }, org: Pick<TestOrganization, 'auth'>, channelId: string) {
  const api = publicApi(origin, org.auth);
  const body = { type: 'now' as const, content: 'Traced from request to network', channelIds: [channelId] };
  const [post] = dataOf(await api.POST('/public/v1/posts', { body }), 201).data;
  return eventually(
    async () => {
      const current: Schemas['Post'] = dataOf(
        await api.GET('/public/v1/posts/{id}', { params: { path: { id: post!.id } } }),
      );
      expect(current.status).toBe('published');
      return current;
    },
    { timeout: scaled(20_000), interval: 100 },
  );
}

/**
 * The trace of one published post: the request that created it, the transaction that stored it, the
 * job planned in that transaction, the job's run, and the call to the network under the run. Each is
 * the parent of the next, in one trace; throws (for `eventually`) until all are there.
 */
function publicationTrace(spans: ReceivedSpan[], networkPort: number) {
  const request = spans.find((span) => span.name === 'createPost' && span.kind === KIND.server);
  expect(request, 'the request span').toBeDefined();
  const childOf = (parent: ReceivedSpan, match: (span: ReceivedSpan) => boolean, what: string) => {
    const child = spans.find((span) => span.parentSpanId === parent.spanId && match(span));
    expect(child, `${what} under ${parent.name}`).toBeDefined();
    expect(child!.traceId).toBe(request!.traceId);
    return child!;
  };
  const send = spans.find((span) => span.name === 'send publish-post' && span.traceId === request!.traceId);
  expect(send, 'the span of planning the job').toBeDefined();
  const transaction = spans.find((span) => span.spanId === send!.parentSpanId);
  expect(transaction?.name, 'the parent of the job planning').toBe('transaction');
  expect(transaction!.parentSpanId, 'the transaction is a child of the request').toBe(request!.spanId);
  const run = childOf(send!, (span) => span.name === 'process publish-post', 'the job run');
  const call = childOf(
    run,
    (span) => span.kind === KIND.client && span.attributes['server.port'] === networkPort,
    'the network call',
  );
  return { request: request!, transaction: transaction!, send: send!, run, call };
}

/** Every value and name of every attribute, the resource's too, with the span it belongs to. */
function everyAttribute(spans: ReceivedSpan[]): [span: string, name: string, value: string][] {
  return spans.flatMap((span) =>
    Object.entries({ ...span.resource, ...span.attributes }).map(([name, value]): [string, string, string] => [
      span.name,
      name,
      String(value),
    ]),
  );
}

describe('with tracing off', () => {
  let network: FakeNetwork;
  let receiver: OtlpReceiver;
  beforeAll(async () => {
    [network, receiver] = await Promise.all([startFakeNetwork(), startOtlpReceiver()]);
  });
  afterAll(async () => {
    await Promise.all([network?.close(), receiver?.close()]);
  });

  it('loads nothing of the SDK, plans jobs without a trace context, and sends nothing', async () => {
    const { server, org, channelId } = await startPublishingServer(network, {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_SDK_DISABLED: 'true',
    });
    try {
      expect(server.ctx.config.tracing).toBeUndefined();
      const post = await publishNow(server, org, channelId);
      const { rows } = await sql<{ data: unknown }>`
        select data from pgboss.job where name = 'publish-post' and data->>'postId' = ${post.id}`.execute(
        server.ctx.db,
      );
      expect(rows.map((row) => row.data)).toEqual([{ postId: post.id }]);
    } finally {
      // Closing flushes whatever spans there are: none may reach the receiver, then or later.
      await server.close();
    }
    expect(receiver.exports).toEqual([]);
    expect(sdkModulesLoaded()).toEqual([]);
  });
});

describe('with tracing on', () => {
  let network: FakeNetwork;
  let receiver: OtlpReceiver;
  let server: TestServer;
  let org: TestOrganization;
  let channelId: string;
  beforeAll(async () => {
    [network, receiver] = await Promise.all([startFakeNetwork(), startOtlpReceiver()]);
    ({ server, org, channelId } = await startPublishingServer(network, {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_HEADERS: `authorization=Bearer%20${COLLECTOR_SECRET}`,
      OTEL_SERVICE_NAME: 'scheduler-under-test',
      OTEL_BSP_SCHEDULE_DELAY: '50',
    }));
  });
  afterAll(async () => {
    await server?.close();
    await Promise.all([network?.close(), receiver?.close()]);
  });

  it('follows a post from the request that creates it to the call that publishes it, in one trace', async () => {
    const post = await publishNow(server, org, channelId);
    const networkPort = Number(new URL(network.url).port);
    const trace = await eventually(() => publicationTrace(receiver.spans, networkPort), {
      timeout: TIMEOUTS.eventually,
      interval: 100,
    });
    expect(trace.request.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/public/v1/posts',
      'http.response.status_code': 201,
    });
    expect(trace.transaction).toMatchObject({ kind: KIND.internal, attributes: { 'db.system.name': 'postgresql' } });
    expect(trace.send).toMatchObject({
      kind: KIND.producer,
      attributes: { 'messaging.system': 'pg-boss', 'messaging.destination.name': 'publish-post' },
    });
    expect(trace.run).toMatchObject({ kind: KIND.consumer, attributes: { 'messaging.operation.type': 'process' } });
    expect(trace.call.attributes).toEqual({
      'http.request.method': 'POST',
      'server.address': '127.0.0.1',
      'server.port': networkPort,
      'http.response.status_code': 201,
    });
    expect(trace.request.resource['service.name']).toBe('scheduler-under-test');
    expect(trace.request.resource['telemetry.sdk.language']).toBe('nodejs');
    // The job carried the W3C trace context of the span that planned it.
    const { rows } = await sql<{ data: { postId: string; trace?: { traceparent?: string } } }>`
      select data from pgboss.job where name = 'publish-post' and data->>'postId' = ${post.id}`.execute(server.ctx.db);
    expect(rows[0]?.data.trace?.traceparent).toBe(`00-${trace.send.traceId}-${trace.send.spanId}-01`);
    // The exports went with the configured headers, to the traces path, as JSON.
    expect(receiver.exports[0]).toMatchObject({ path: '/v1/traces', contentType: 'application/json' });
    expect(receiver.exports[0]!.headers.authorization).toBe(`Bearer ${COLLECTOR_SECRET}`);
    expect(sdkModulesLoaded().length).toBeGreaterThan(0);
  });

  it('puts no credential, secret, header or URL in any span', async () => {
    await eventually(() => expect(receiver.spans.length).toBeGreaterThan(0));
    const secrets = [
      org.apiKey,
      org.password,
      COLLECTOR_SECRET,
      sandboxToken(await server.ctx.secrets.get('sandbox-network'), channelId),
      TEST_ENCRYPTION_KEY.split(':')[1]!,
    ];
    for (const [span, name, value] of everyAttribute(receiver.spans)) {
      expect(name, `${span}: ${name}`).not.toMatch(/authorization|cookie|header|^url\./i);
      for (const secret of secrets) expect(value, `${span}: ${name}`).not.toContain(secret);
      expect(value, `${span}: ${name}`).not.toMatch(/\?|Bearer /);
    }
  });
});

describe('with a sampler that keeps no trace', () => {
  let network: FakeNetwork;
  let receiver: OtlpReceiver;
  beforeAll(async () => {
    [network, receiver] = await Promise.all([startFakeNetwork(), startOtlpReceiver()]);
  });
  afterAll(async () => {
    await Promise.all([network?.close(), receiver?.close()]);
  });

  it('carries the decision to the job, whose run is dropped with its request', async () => {
    const { server, org, channelId } = await startPublishingServer(network, {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_TRACES_SAMPLER: 'parentbased_always_off',
    });
    try {
      const post = await publishNow(server, org, channelId);
      const { rows } = await sql<{ data: { trace?: { traceparent?: string } } }>`
        select data from pgboss.job where name = 'publish-post' and data->>'postId' = ${post.id}`.execute(
        server.ctx.db,
      );
      // Version 00, a trace id, a span id, and the flags 00: not sampled (W3C Trace Context).
      expect(rows[0]?.data.trace?.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    } finally {
      await server.close();
    }
    expect(receiver.spans).toEqual([]);
  });
});

describe('with a receiver that cannot be reached', () => {
  it('logs the failed exports in a line each, answers all the same, and still stops', async () => {
    const lines: string[] = [];
    const logger = createLogger({ logLevel: 'warn' }, { write: (line: string) => void lines.push(line) });
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const server = await startTestServer({
      logger,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: nobody, OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_EXPORTER_OTLP_TIMEOUT: '2000' },
    });
    try {
      expect((await server.fetch('/public/v1/channels')).status).toBe(401);
      await eventually(() => expect(lines.join('')).toContain('OpenTelemetry: connect ECONNREFUSED'));
      expect((await server.fetch('/public/v1/channels')).status).toBe(401);
    } finally {
      await server.close();
    }
    for (const line of lines) {
      expect(JSON.parse(line)).toMatchObject({ component: 'opentelemetry' });
      expect(line).not.toMatch(/stack|\\n\s+at /);
    }
  });
});

// The programs as installed (`npm start`): the SDK loaded from its own modules next to the bundle, its
// default encoding (http/protobuf), and the spans still waiting sent on SIGTERM. With a batch delay of
// an hour, nothing is sent before the processes stop. On PostgreSQL an API process and a worker
// process share the database, and the job's run continues the request's trace across them.
describe('the built server', () => {
  const installation = scratchInstallation('tracing');
  let network: FakeNetwork;
  let receiver: OtlpReceiver;
  beforeAll(async () => {
    [network, receiver] = await Promise.all([startFakeNetwork(), startOtlpReceiver()]);
  });
  afterAll(async () => {
    await Promise.all([network?.close(), receiver?.close()]);
  });

  it('sends the whole trace of a publication when its processes stop', { timeout: 3 * TIMEOUTS.process }, async () => {
    const stdout = async (...args: string[]) => {
      const result = await installation.admin(...args);
      expect(result.code, result.stderr).toBe(0);
      return result.stdout;
    };
    const orgId = await stdout(
      'create-org',
      '--name',
      'Traced',
      '--email',
      'ops@example.com',
      '--password',
      'a long password',
    );
    const key = await stdout('create-key', '--org', orgId, '--name', 'tracing test');
    const channelId = await stdout('add-channel', '--org', orgId, '--provider', 'sandbox', '--name', 'Sandbox');
    const env = {
      SANDBOX_NETWORK_URL: network.url,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: '3600000',
    };
    const stops: (() => Promise<number | null>)[] = [];
    try {
      const api = await installation.start(env, TEST_DATABASE_URL ? { args: ['--role', 'api'] } : {});
      stops.push(() => api.stop());
      if (TEST_DATABASE_URL) stops.push(await startWorker(installation.env(env)));
      await publishNow(api, { auth: { Authorization: `Bearer ${key}` } }, channelId);
      expect(receiver.exports).toEqual([]);
    } finally {
      for (const stopped of stops) expect(await stopped()).toBe(0);
    }
    expect(receiver.exports.every((sent) => sent.contentType === 'application/x-protobuf')).toBe(true);
    const trace = publicationTrace(receiver.spans, Number(new URL(network.url).port));
    expect(trace.request.resource['service.name']).toBe('post-scheduler');
  });
});

/** Starts the build's worker process (`--role worker`, which serves no HTTP); how to stop it. */
async function startWorker(env: NodeJS.ProcessEnv): Promise<() => Promise<number | null>> {
  const child = spawnBuilt('start', ['--role', 'worker'], env);
  let output = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  try {
    await eventually(() => expect(output).toContain('worker is running'), { timeout: TIMEOUTS.process, interval: 100 });
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return () => stop(child);
}
