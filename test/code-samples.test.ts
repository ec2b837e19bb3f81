import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApiKey } from '../src/accounts/api-keys.js';
import { addReturnOrigin } from '../src/channels/return-origins.js';
import { parseYaml, SPEC_FILES } from '../src/core/contract.js';
import type { Client } from 'openapi-fetch';
import type { paths } from '../generated/public-v1.js';
import { dataOf, publicApi, type ApiError, type OAuthSchemas, type Schemas } from './support/api.js';
import { openBrowser, skipBrowserTests } from './support/chromium.js';
import { eventually } from './support/eventually.js';
import { startFakeGoogle, youtubeEnv, type FakeGoogle } from './support/fake-google.js';
import { pinterestEnv, startFakePinterest, type FakePinterest } from './support/fake-pinterest.js';
import { startFakeTikTok, tiktokEnv, type FakeTikTok } from './support/fake-tiktok.js';
import { createChannel, createOrganization, type TestOrganization } from './support/fixtures.js';
import { mp4WithDuration, png } from './support/media-samples.js';
import { approve, channelsStatus, createOAuthApp, exchange, type TestApp } from './support/oauth.js';
import { freePort, ROOT, stop, untilExit } from './support/processes.js';
import { startRemoteServer, type RemoteServer } from './support/remote-server.js';
import { scratchDirs } from './support/scratch.js';
import { startTestServer, type TestServer } from './support/server.js';
import { TIMEOUTS } from './support/timeouts.js';
import { startUpload } from './support/uploads.js';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.js';

// The request samples of the API reference (`x-codeSamples`, which Redoc shows beside every
// operation) are run as a reader would run them: every curl sample with bash against a real server,
// with the variables it reads set to real fixtures; every TypeScript sample type-checked against the
// SDK's source and run in this process against the same server. The YouTube and TikTok operations
// run against the fakes of those networks, as the other tests do.

interface CodeSample {
  lang: string;
  label: string;
  source: string;
}

interface Operation {
  operationId: string;
  method: string;
  /** The path template, e.g. `/public/v1/posts/{id}`. */
  path: string;
  samples: CodeSample[];
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

function operationsOf(file: string): Operation[] {
  const spec = parseYaml(fs.readFileSync(file, 'utf8')) as {
    paths: Record<string, Record<string, { operationId: string; 'x-codeSamples'?: CodeSample[] }>>;
  };
  return Object.entries(spec.paths).flatMap(([template, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, operation]) => ({
        operationId: operation.operationId,
        method: method.toUpperCase(),
        path: template,
        samples: operation['x-codeSamples'] ?? [],
      })),
  );
}

const PUBLIC = operationsOf(SPEC_FILES.publicV1);
const OAUTH = operationsOf(SPEC_FILES.oauth);

const isCurl = (sample: CodeSample) => sample.lang === 'Shell' && sample.label === 'curl';
const curlOf = (operation: Operation) => operation.samples.find(isCurl)!;
const typeScriptOf = (operation: Operation) => operation.samples.filter((sample) => sample.lang === 'TypeScript');

/** The SDK method each operation's sample calls (`upload` makes the three requests of a signed upload). */
const SDK_METHODS: Record<string, string> = {
  isConnected: 'isConnected',
  listChannels: 'channels',
  deleteChannel: 'deleteChannel',
  connectChannel: 'connectChannel',
  getQuota: 'quota',
  tiktokCreatorInfo: 'tiktokCreatorInfo',
  tiktokAnalytics: 'tiktokAnalytics',
  pinterestBoards: 'pinterestBoards',
  createPost: 'createPost',
  listPosts: 'listPosts',
  getPost: 'getPost',
  updatePost: 'updatePost',
  deletePost: 'deletePost',
  getPostHistory: 'postHistory',
  schedulePost: 'schedulePost',
  changePostStatus: 'changePostStatus',
  skipPost: 'skipPost',
  createSeries: 'createSeries',
  getSeries: 'getSeries',
  splitSeries: 'splitSeries',
  endSeries: 'endSeries',
  approvePost: 'approvePost',
  rejectPost: 'rejectPost',
  importPosts: 'importPosts',
  exportPosts: 'exportPosts',
  duplicatePost: 'duplicatePost',
  queuePost: 'queuePost',
  getChannelSchedule: 'getChannelSchedule',
  replaceChannelSchedule: 'replaceChannelSchedule',
  getChannelQueue: 'getChannelQueue',
  listMedia: 'listMedia',
  uploadFromUrl: 'uploadFromUrl',
  createUpload: 'upload',
  completeUpload: 'upload',
  deleteMedia: 'deleteMedia',
  listWebhooks: 'listWebhooks',
  createWebhook: 'createWebhook',
  getWebhook: 'getWebhook',
  updateWebhook: 'updateWebhook',
  deleteWebhook: 'deleteWebhook',
  testWebhook: 'testWebhook',
  rotateWebhookSecret: 'rotateWebhookSecret',
  listWebhookDeliveries: 'webhookDeliveries',
  retryWebhookDelivery: 'retryWebhookDelivery',
};

/**
 * The requests a shell sample sends to the server, read from its text: each curl command whose URL
 * is `"$BASE/…"`, with its method (`-X`, else POST when it sends data, else GET) and its path.
 */
function requestsToServer(source: string): { method: string; path: string }[] {
  const lines = source
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('#'));
  const requests: { method: string; path: string }[] = [];
  for (const line of lines) {
    const at = line.search(/\bcurl\s/);
    if (at < 0) continue;
    const command = line.slice(at);
    const url = /"\$BASE(\/[^"?]*)[^"]*"/.exec(command);
    if (!url) continue;
    const method = /\s-X\s+([A-Z]+)/.exec(command)?.[1] ?? (/\s(-d|--data\S*|--json)\s/.test(command) ? 'POST' : 'GET');
    requests.push({ method, path: url[1]! });
  }
  return requests;
}

/** Whether a sample's path is the template's, with a shell variable (`$POST`) for each path parameter. */
function samplePathMatches(samplePath: string, template: string): boolean {
  const pattern = template.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\\\{[^}]+\\\}/g, '\\$[A-Z_]+');
  return new RegExp(`^${pattern}$`).test(samplePath);
}

/** Whether a path the server received is the template's. */
function requestPathMatches(requested: string, template: string): boolean {
  const pattern = template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+');
  return new RegExp(`^${pattern}$`).test(requested);
}

describe('every operation of the reference has its request samples', () => {
  it('a curl sample and an @service/sdk sample on each Public API operation, each sending the request of its operation', () => {
    expect(PUBLIC).toHaveLength(44);
    for (const operation of PUBLIC) {
      const curl = operation.samples.filter(isCurl);
      const sdk = operation.samples.filter((sample) => sample.lang === 'TypeScript' && sample.label === '@service/sdk');
      expect([curl.length, sdk.length], operation.operationId).toEqual([1, 1]);
      const requests = requestsToServer(curl[0]!.source);
      expect(requests, `${operation.operationId}: one curl request to $BASE`).toHaveLength(1);
      expect(requests[0]!.method, operation.operationId).toBe(operation.method);
      expect(
        samplePathMatches(requests[0]!.path, operation.path),
        `${operation.operationId}: ${requests[0]!.path} is not ${operation.path}`,
      ).toBe(true);
      expect(sdk[0]!.source, operation.operationId).toMatch(/^import Service from '@service\/sdk';$/m);
      expect(sdk[0]!.source, operation.operationId).toContain(`service.${SDK_METHODS[operation.operationId]}(`);
    }
    // The receiver beside createWebhook shows how to verify what the endpoint will receive.
    const receiver = PUBLIC.find((operation) => operation.operationId === 'createWebhook')!.samples.find(
      (sample) => sample.label === 'Receiver (@service/sdk)',
    );
    expect(receiver?.source).toContain('verifyWebhook(');
  });

  it('a curl sample on each OAuth operation, the authorization URL built in TypeScript, and fetch for the token and revocation endpoints', () => {
    expect(OAUTH.map((operation) => operation.operationId).sort()).toEqual([
      'authorizationServerMetadata',
      'authorize',
      'mcpProtectedResourceMetadata',
      'protectedResourceMetadata',
      'publicApiProtectedResourceMetadata',
      'register',
      'revoke',
      'token',
    ]);
    for (const operation of OAUTH) {
      expect(operation.samples.filter(isCurl), operation.operationId).toHaveLength(1);
      const requests = requestsToServer(curlOf(operation).source);
      expect(requests, operation.operationId).toEqual([{ method: operation.method, path: operation.path }]);
    }
    const byId = (id: string) => OAUTH.find((operation) => operation.operationId === id)!;
    expect(
      typeScriptOf(byId('authorize'))
        .map((sample) => sample.source)
        .join(),
    ).toContain('new URLSearchParams(');
    for (const id of ['token', 'revoke', 'register']) {
      const fetchSample = byId(id).samples.find(
        (sample) => sample.lang === 'TypeScript' && sample.label === 'TypeScript',
      );
      expect(fetchSample?.source, id).toContain(`fetch(\`\${process.env.BASE}${byId(id).path}\``);
    }
  });

  it('are each in a language the reference of its API lists, without which Redoc does not show them', () => {
    const config = parseYaml(fs.readFileSync(path.join(ROOT, 'redocly.yaml'), 'utf8')) as {
      apis: Record<string, { openapi?: { codeSamples?: { languages: { lang: string; label?: string }[] } } }>;
    };
    for (const [api, operations] of [
      ['public-v1', PUBLIC],
      ['oauth', OAUTH],
    ] as const) {
      const shown = new Set(
        config.apis[api]!.openapi?.codeSamples?.languages.map((language) =>
          (language.label ?? language.lang).toLowerCase(),
        ),
      );
      for (const operation of operations) {
        for (const sample of operation.samples)
          expect(shown.has(sample.label.toLowerCase()), `${api} ${operation.operationId}: ${sample.label}`).toBe(true);
      }
    }
  });

  it('name no server: the address is $BASE in shell and process.env.BASE in TypeScript', () => {
    for (const operation of [...PUBLIC, ...OAUTH]) {
      for (const sample of operation.samples) {
        expect(sample.source, `${operation.operationId} (${sample.label})`).not.toMatch(/localhost|127\.0\.0\.1|:3000/);
        if (sample.lang === 'TypeScript' && /fetch\(|new Service\(|new URL\(/.test(sample.source))
          expect(sample.source).toContain('process.env.BASE');
      }
    }
  });
});

let google: FakeGoogle;
let tiktok: FakeTikTok;
let pinterest: FakePinterest;
let receiver: WebhookReceiver;
let files: RemoteServer;
let server: TestServer;
let org: TestOrganization;
/** The Public API as the organization. */
let api: Client<paths>;
let app: TestApp;
let sandboxChannel: string;
let tiktokChannel: string;
let pinterestChannel: string;
const scratchDir = scratchDirs();
let work: string;
let videoFile: string;

// The networks' fakes, a receiver, a file server and the server, with a channel connected through the API.
beforeAll(async () => {
  [google, tiktok, pinterest, receiver] = await Promise.all([
    startFakeGoogle(),
    startFakeTikTok({ account: { displayName: 'Acme on TikTok', username: 'acme' } }),
    startFakePinterest(),
    startWebhookReceiver(),
  ]);
  pinterest.addBoard({ name: 'Summer recipes', sections: ['Salads'] });
  const poster = png(4);
  files = await startRemoteServer((_req, res) => res.writeHead(200, { 'Content-Type': 'image/png' }).end(poster));
  server = await startTestServer({
    // The worker sends webhook deliveries. Loopback receivers and files are allowed as an operator
    // allows ranges of its own network.
    worker: true,
    env: {
      ...youtubeEnv(google),
      ...tiktokEnv(tiktok),
      ...pinterestEnv(pinterest),
      WEBHOOK_ALLOW_RANGES: '127.0.0.1/32',
      // A refused delivery is tried once more, soon, and then settles as failed.
      WEBHOOK_RETRY_SCHEDULE: '0.2',
      MEDIA_FETCH_ALLOW_RANGES: '127.0.0.1/32',
      RATE_LIMIT_MAX: '100000',
      DAILY_POST_LIMIT_SANDBOX: '1000',
    },
  });
  org = await createOrganization(server.ctx.db, 'Acme Studio');
  api = publicApi(server, org.auth);
  sandboxChannel = (await createChannel(server.ctx.db, org.id, 'sandbox', 'Sandbox')).id;
  // The samples return users to https://app.example.com, which the organization lists.
  await addReturnOrigin(server.ctx.db, org.id, 'https://app.example.com');
  tiktokChannel = await connectThroughApi('tiktok');
  pinterestChannel = await connectThroughApi('pinterest');
  app = await createOAuthApp(server.ctx.db, org.id);
  work = scratchDir('code-samples');
  videoFile = path.join(work, 'winter.mp4');
  fs.writeFileSync(videoFile, mp4WithDuration(5));
}, 2 * TIMEOUTS.hook);
afterAll(async () => {
  await server?.close();
  await Promise.all([google?.close(), tiktok?.close(), pinterest?.close(), receiver?.close(), files?.close()]);
});

/** Connects an account of the network's fake as an integrator's user does: consent, callback, return URL. */
async function connectThroughApi(provider: 'youtube' | 'tiktok' | 'pinterest'): Promise<string> {
  const { authorizationUrl } = await dataOf(
    api.POST('/public/v1/channels/connect', { body: { provider, returnUrl: 'https://app.example.com/back' } }),
    200,
  );
  const consent = await fetch(authorizationUrl, { redirect: 'manual' });
  const callback = new URL(consent.headers.get('location')!);
  const back = await server.fetch(callback.pathname + callback.search, { redirect: 'manual' });
  const channelId = new URL(back.headers.get('location')!).searchParams.get('channelId');
  expect(channelId).toMatch(/^ch_/);
  return channelId!;
}

async function newPost(type: 'draft' | 'schedule'): Promise<string> {
  const post = { date: '2030-12-01T09:30:00.000Z', content: 'A post of the samples', channelIds: [sandboxChannel] };
  const created = await dataOf(
    api.POST('/public/v1/posts', { body: type === 'draft' ? { type, ...post } : { type, ...post } }),
    201,
  );
  return created.data[0]!.id;
}

/** A weekly series on the sandbox channel, starting at `startsAt`. */
function newSeries(startsAt = '2030-12-02T08:00:00.000Z'): Promise<Schemas['Series']> {
  return dataOf(
    api.POST('/public/v1/series', {
      body: {
        rule: 'FREQ=WEEKLY',
        timeZone: 'Europe/Berlin',
        startsAt,
        posts: [{ channelId: sandboxChannel, content: 'A series of the samples' }],
      },
    }),
    201,
  );
}

/** The first occurrence of a new series that starts tomorrow (within the horizon, so it exists as a post). */
async function newOccurrence(): Promise<string> {
  const series = await newSeries(new Date(server.clock.now().getTime() + 86_400_000).toISOString());
  const posts = await dataOf(api.GET('/public/v1/posts', { params: { query: { limit: 100 } } }), 200);
  return posts.data.find((post) => post.series?.id === series.id)!.id;
}

let contributorApi: Client<paths> | undefined;

/** A post a contributor asked to publish, waiting for approval. */
async function pendingPost(): Promise<string> {
  if (!contributorApi) {
    const { secret } = await createApiKey(server.ctx.db, org.id, 'Contributor of the samples', { role: 'contributor' });
    contributorApi = publicApi(server, { Authorization: `Bearer ${secret}` });
  }
  const post = { date: '2030-12-01T09:30:00.000Z', content: 'A post of the samples', channelIds: [sandboxChannel] };
  const created = await dataOf(contributorApi.POST('/public/v1/posts', { body: { type: 'schedule', ...post } }), 201);
  expect(created.data[0]!.status).toBe('pending_approval');
  return created.data[0]!.id;
}

/** A signed upload whose bytes arrived, not completed yet. */
async function uploadedBytes(): Promise<string> {
  const bytes = fs.readFileSync(videoFile);
  const upload = await startUpload(server, org, 'winter.mp4', 'video/mp4', bytes.length);
  expect((await fetch(upload.uploadUrl, { method: 'PUT', headers: upload.headers, body: bytes })).status).toBe(200);
  return upload.uploadId;
}

function completed(uploadId: string): Promise<Schemas['Media']> {
  return dataOf(api.POST('/public/v1/media/uploads/{uploadId}/complete', { params: { path: { uploadId } } }), 200);
}

async function newMedia(): Promise<string> {
  return (await completed(await uploadedBytes())).id;
}

function newWebhook(url = receiver.url): Promise<Schemas['CreatedWebhook']> {
  return dataOf(api.POST('/public/v1/webhooks', { body: { url, eventTypes: ['post.published'] } }), 201);
}

let sharedWebhook: string | undefined;
async function webhook(): Promise<string> {
  sharedWebhook ??= (await newWebhook()).id;
  return sharedWebhook;
}

/** The delivery of a test event, once tried (a delivery being tried cannot be sent again). */
async function settledDelivery(webhookId: string): Promise<Schemas['WebhookDelivery']> {
  const path = { params: { path: { id: webhookId } } };
  const { id } = await dataOf(api.POST('/public/v1/webhooks/{id}/test', path), 202);
  return eventually(async () => {
    const { data } = await dataOf(
      api.GET('/public/v1/webhooks/{id}/deliveries', { params: { ...path.params, query: { limit: 100 } } }),
      200,
    );
    const delivery = data.find((candidate) => candidate.id === id);
    expect(delivery?.lastStatusCode, `delivery ${id} not tried: ${JSON.stringify(delivery)}`).not.toBeNull();
    expect(delivery?.status).not.toBe('pending');
    return delivery!;
  });
}

type Env = Record<string, string>;

/** What each Public API sample reads besides BASE and KEY, made fresh for each run. */
const PUBLIC_FIXTURES: Record<string, () => Env | Promise<Env>> = {
  isConnected: () => ({}),
  listChannels: () => ({}),
  deleteChannel: async () => ({ CHANNEL: (await createChannel(server.ctx.db, org.id, 'sandbox', 'To remove')).id }),
  connectChannel: () => ({}),
  getQuota: () => ({}),
  tiktokCreatorInfo: () => ({ CHANNEL: tiktokChannel }),
  tiktokAnalytics: () => ({ CHANNEL: tiktokChannel }),
  pinterestBoards: () => ({ CHANNEL: pinterestChannel }),
  createPost: () => ({ CHANNEL: sandboxChannel }),
  listPosts: () => ({ CHANNEL: sandboxChannel }),
  getPost: async () => ({ POST: await newPost('draft') }),
  updatePost: async () => ({ POST: await newPost('draft') }),
  deletePost: async () => ({ POST: await newPost('draft') }),
  getPostHistory: async () => ({ POST: await newPost('schedule') }),
  schedulePost: async () => ({ POST: await newPost('draft') }),
  changePostStatus: async () => ({ POST: await newPost('schedule') }),
  skipPost: async () => ({ POST: await newOccurrence() }),
  createSeries: () => ({ CHANNEL: sandboxChannel }),
  getSeries: async () => ({ SERIES: (await newSeries()).id }),
  splitSeries: async () => ({ SERIES: (await newSeries()).id }),
  endSeries: async () => ({ SERIES: (await newSeries()).id }),
  approvePost: async () => ({ POST: await pendingPost() }),
  rejectPost: async () => ({ POST: await pendingPost() }),
  importPosts: () => {
    const file = path.join(work, `import-${randomBytes(4).toString('hex')}.csv`);
    fs.writeFileSync(file, `key,channels,text,time\n${randomBytes(8).toString('hex')},${sandboxChannel},Imported,\n`);
    return { CSV_FILE: file };
  },
  exportPosts: () => ({}),
  duplicatePost: async () => ({ POST: await newPost('draft') }),
  getChannelSchedule: () => ({ CHANNEL: sandboxChannel }),
  replaceChannelSchedule: () => ({ CHANNEL: sandboxChannel }),
  getChannelQueue: () => ({ CHANNEL: sandboxChannel }),
  // A draft put in the queue needs a channel with slots.
  queuePost: async () => {
    const slots = [{ weekday: 'monday' as const, time: '09:00' }];
    await dataOf(
      api.PUT('/public/v1/channels/{id}/schedule', { params: { path: { id: sandboxChannel } }, body: { slots } }),
      200,
    );
    return { POST: await newPost('draft') };
  },
  listMedia: () => ({}),
  uploadFromUrl: () => ({ FILE_URL: `${files.origin}/campaigns/winter/poster.png` }),
  createUpload: () => ({ FILE: videoFile }),
  // The SDK's sample is upload(), which makes all three requests from FILE.
  completeUpload: async () => ({ UPLOAD: await uploadedBytes(), FILE: videoFile }),
  deleteMedia: async () => ({ MEDIA: await newMedia() }),
  listWebhooks: () => ({}),
  createWebhook: () => ({ WEBHOOK_URL: receiver.url }),
  getWebhook: async () => ({ WEBHOOK: await webhook() }),
  updateWebhook: async () => ({ WEBHOOK: await webhook() }),
  deleteWebhook: async () => ({ WEBHOOK: (await newWebhook()).id }),
  testWebhook: async () => ({ WEBHOOK: await webhook() }),
  rotateWebhookSecret: async () => ({ WEBHOOK: await webhook() }),
  listWebhookDeliveries: async () => ({ WEBHOOK: await webhook() }),
  retryWebhookDelivery: async () => {
    const id = await webhook();
    return { WEBHOOK: id, DELIVERY: (await settledDelivery(id)).id };
  },
};

/** Checks of what a sample did, beyond its 2xx answers, where the answer alone would not show it. */
const post = (id: string | undefined) => api.GET('/public/v1/posts/{id}', { params: { path: { id: id! } } });
const PUBLIC_EFFECTS: Record<string, (env: Env) => Promise<void>> = {
  deletePost: async (env) => expect((await post(env.POST)).response.status).toBe(404),
  deleteMedia: async (env) => {
    const media = await dataOf(api.GET('/public/v1/media', { params: { query: { limit: 100 } } }), 200);
    expect(media.data.map(({ id }) => id)).not.toContain(env.MEDIA);
  },
  changePostStatus: async (env) => expect((await dataOf(post(env.POST), 200)).status).toBe('draft'),
  skipPost: async (env) => expect((await dataOf(post(env.POST), 200)).status).toBe('skipped'),
  approvePost: async (env) => expect((await dataOf(post(env.POST), 200)).status).toBe('scheduled'),
  rejectPost: async (env) => expect((await dataOf(post(env.POST), 200)).status).toBe('draft'),
};

/** Each OAuth sample's variables: a registered app, and a code or a token issued to it. */
const OAUTH_FIXTURES: Record<string, () => Env | Promise<Env>> = {
  authorize: () => ({ CLIENT_ID: app.clientId }),
  token: async () => {
    const verifier = randomBytes(32).toString('base64url');
    const code = await approve(server.ctx.db, app, org, {
      codeChallenge: createHash('sha256').update(verifier).digest('base64url'),
    });
    return { CODE: code, VERIFIER: verifier, CLIENT_ID: app.clientId, CLIENT_SECRET: app.secret };
  },
  revoke: async () => ({
    ACCESS_TOKEN: await exchange(server, app, await approve(server.ctx.db, app, org)),
    CLIENT_ID: app.clientId,
    CLIENT_SECRET: app.secret,
  }),
  authorizationServerMetadata: () => ({}),
  protectedResourceMetadata: () => ({}),
  publicApiProtectedResourceMetadata: () => ({}),
  mcpProtectedResourceMetadata: () => ({}),
  register: () => ({}),
};

const OAUTH_EFFECTS: Record<string, (env: Env) => Promise<void>> = {
  revoke: async (env) => expect(await channelsStatus(server, env.ACCESS_TOKEN!)).toBe(401),
};

interface RecordedRequest {
  method: string;
  url: URL;
  status: number;
  redirect: string;
}

// Every curl of a sample runs through this function: it stops the script at the first answer that is
// not a success, and reports each request's method, URL and status on stderr.
const CURL_RECORDER = `curl() { command curl "$@" --fail-with-body --write-out '%{stderr}REQUEST %{method} %{url_effective} %{http_code} %{redirect_url}\\n'; }`;

/** Runs a shell sample with bash, with nothing in its environment but PATH and the variables given. */
async function runShell(source: string, env: Env) {
  const child = spawn('bash', ['-c', `set -euo pipefail\n${CURL_RECORDER}\n${source}`], {
    cwd: work,
    // HOME has no .curlrc, so the samples run as written.
    env: { PATH: process.env.PATH, HOME: work, BASE: server.baseUrl, ...env },
  });
  const finished = await untilExit(child, TIMEOUTS.process);
  const requests: RecordedRequest[] = [...finished.stderr.matchAll(/^REQUEST (\S+) (\S+) (\d+) ?(.*)$/gm)].map(
    ([, method, url, status, redirect]) => ({
      method: method!,
      url: new URL(url!),
      status: Number(status),
      redirect: redirect ?? '',
    }),
  );
  return { ...finished, requests };
}

/**
 * The one request of a sample to an operation of its API (not to a signed upload URL) is the request
 * of the operation it documents, and is answered as `status` says.
 */
function expectOneRequestOf(operation: Operation, requests: RecordedRequest[], status: (code: number) => boolean) {
  const operations = PUBLIC.includes(operation) ? PUBLIC : OAUTH;
  const toApi = (request: RecordedRequest) =>
    request.url.origin === server.baseUrl &&
    operations.some((candidate) => requestPathMatches(request.url.pathname, candidate.path));
  const toServer = requests.filter(toApi);
  expect(toServer, JSON.stringify(requests)).toHaveLength(1);
  const [request] = toServer;
  expect(request!.method).toBe(operation.method);
  expect(
    requestPathMatches(request!.url.pathname, operation.path),
    `${request!.url.pathname} is not ${operation.path}`,
  ).toBe(true);
  expect(status(request!.status), `answered ${request!.status}`).toBe(true);
  return request!;
}

const success = (code: number) => code >= 200 && code < 300;

describe('the curl samples, run with bash against a real server', () => {
  for (const operation of PUBLIC) {
    it(`${operation.operationId}: ${operation.method} ${operation.path}`, async () => {
      const env = { KEY: org.apiKey, ...(await PUBLIC_FIXTURES[operation.operationId]!()) };
      const run = await runShell(curlOf(operation).source, env);
      expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
      expectOneRequestOf(operation, run.requests, success);
      // Any other request (the PUT of a signed upload) succeeded too, or the script would have stopped.
      for (const request of run.requests) expect(success(request.status), request.url.href).toBe(true);
      await PUBLIC_EFFECTS[operation.operationId]?.(env);
    });
  }

  it('createUpload leaves an upload whose bytes arrived, which completes into the media', async () => {
    const upload = PUBLIC.find((operation) => operation.operationId === 'createUpload')!;
    const run = await runShell(`${curlOf(upload).source}\necho "UPLOAD=$UPLOAD"`, { KEY: org.apiKey, FILE: videoFile });
    expect(run.code, run.stderr).toBe(0);
    expect(run.requests.map((request) => request.method)).toEqual(['POST', 'PUT']);
    const uploadId = /^UPLOAD=(upl_\S+)$/m.exec(run.stdout)?.[1];
    expect(await completed(uploadId!)).toMatchObject({
      fileName: 'winter.mp4',
      contentType: 'video/mp4',
      size: fs.statSync(videoFile).size,
    });
  });

  for (const operation of OAUTH) {
    it(`OAuth ${operation.operationId}: ${operation.method} ${operation.path}`, async () => {
      const env = await OAUTH_FIXTURES[operation.operationId]!();
      const run = await runShell(curlOf(operation).source, env);
      expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
      if (operation.operationId === 'authorize') {
        // Without a browser session, a valid authorization link leads to the login page.
        const request = expectOneRequestOf(operation, run.requests, (code) => code === 302);
        expect(new URL(request.redirect).pathname).toBe('/login');
      } else {
        expectOneRequestOf(operation, run.requests, success);
      }
      if (operation.operationId === 'token')
        expect(JSON.parse(run.stdout) as OAuthSchemas['TokenResponse']).toMatchObject({
          access_token: expect.stringMatching(/^pos_/) as unknown,
          id: org.id,
        });
      await OAUTH_EFFECTS[operation.operationId]?.(env);
    });
  }

  it('a sample stops with the server’s error when its request is refused', async () => {
    const getPost = PUBLIC.find((operation) => operation.operationId === 'getPost')!;
    const run = await runShell(curlOf(getPost).source, { KEY: org.apiKey, POST: 'post_unknown' });
    expect(run.code).not.toBe(0);
    expect(run.requests.map((request) => request.status)).toEqual([404]);
    expect((JSON.parse(run.stdout) as ApiError).error.code).toBe('not_found');
  });
});

/** Where the SDK's types and code are: its source, as the package build compiles it. */
const SDK_ENTRY = path.join(ROOT, 'src', 'sdk', 'src', 'index.ts');

interface TypeScriptSample {
  name: string;
  operation: Operation;
  api: 'public-v1' | 'oauth';
  sample: CodeSample;
}

const TYPESCRIPT_SAMPLES: TypeScriptSample[] = [
  ...PUBLIC.flatMap((operation) =>
    typeScriptOf(operation).map((sample, i) => ({
      name: `${operation.operationId}-${i}`,
      operation,
      api: 'public-v1' as const,
      sample,
    })),
  ),
  ...OAUTH.flatMap((operation) =>
    typeScriptOf(operation).map((sample, i) => ({
      name: `oauth-${operation.operationId}-${i}`,
      operation,
      api: 'oauth' as const,
      sample,
    })),
  ),
];

/**
 * A project as an integrator has it: ESM (`"type": "module"`), `"module": "NodeNext"`, strict, with
 * `@service/sdk` resolving to the SDK. Each sample is a module of its own.
 */
function writeSampleProject(dir: string): string[] {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  fs.writeFileSync(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        ...SAMPLE_COMPILER_OPTIONS,
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        target: 'ES2022',
        lib: ['ES2023'],
      },
    }),
  );
  return TYPESCRIPT_SAMPLES.map(({ name, sample }) => {
    const file = path.join(dir, `${name}.ts`);
    fs.writeFileSync(file, sample.source);
    return file;
  });
}

const SAMPLE_COMPILER_OPTIONS = {
  strict: true,
  noEmit: true,
  skipLibCheck: true,
  types: ['node'],
  typeRoots: [path.join(ROOT, 'node_modules', '@types')],
  paths: { '@service/sdk': [SDK_ENTRY] },
};

describe('the TypeScript samples', () => {
  it('type-check against the SDK’s types, as modules of an ESM project', () => {
    const dir = path.join(work, 'typescript');
    const files = writeSampleProject(dir);
    const program = ts.createProgram(files, {
      ...SAMPLE_COMPILER_OPTIONS,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      lib: ['lib.es2023.d.ts'],
      baseUrl: dir,
    });
    const problems = ts.getPreEmitDiagnostics(program).map((diagnostic) => {
      const where = diagnostic.file
        ? `${path.basename(diagnostic.file.fileName)}:${diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start ?? 0).line + 1}`
        : '';
      return `${where} ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`;
    });
    expect(problems).toEqual([]);
    // The samples were part of the program, and the SDK behind @service/sdk too.
    expect(program.getSourceFiles().map((file) => path.resolve(file.fileName))).toEqual(
      expect.arrayContaining([...files, SDK_ENTRY]),
    );
  });

  const runnable = TYPESCRIPT_SAMPLES.filter(({ sample }) => sample.label !== 'Receiver (@service/sdk)');
  for (const { name, operation, api, sample } of runnable) {
    it(`${name} (${sample.label}) runs against the server`, async () => {
      const env: Env =
        api === 'public-v1'
          ? { KEY: org.apiKey, ...(await PUBLIC_FIXTURES[operation.operationId]!()) }
          : await OAUTH_FIXTURES[operation.operationId]!();
      const logged = await runModule(name, sample.source, { BASE: server.baseUrl, ...env });
      if (api === 'public-v1') await PUBLIC_EFFECTS[operation.operationId]?.(env);
      else await OAUTH_EFFECTS[operation.operationId]?.(env);
      if (operation.operationId === 'authorize') {
        // The URL the sample built is a valid authorization link of the app.
        const link = await fetch(logged[0]!, { redirect: 'manual' });
        expect(link.status).toBe(302);
        expect(new URL(link.headers.get('location')!, server.baseUrl).pathname).toBe('/login');
      }
      if (operation.operationId === 'revoke') expect(logged).toEqual(['200']);
    });
  }

  it('the receiver beside createWebhook accepts deliveries signed with its secret and refuses others', async () => {
    const source = PUBLIC.find((operation) => operation.operationId === 'createWebhook')!.samples.find(
      (sample) => sample.label === 'Receiver (@service/sdk)',
    )!.source;
    const dir = path.join(work, 'receiver');
    writeSampleProject(dir);
    fs.writeFileSync(path.join(dir, 'receiver.ts'), source);
    const port = await freePort();
    const endpoint = await newWebhook(`http://127.0.0.1:${port}/hooks`);
    const stranger = await newWebhook(`http://127.0.0.1:${port}/hooks`);
    // tsx resolves @service/sdk through the project's tsconfig paths, as a bundler or tsc would.
    const child: ChildProcess = spawn(
      path.join(ROOT, 'node_modules', '.bin', 'tsx'),
      ['--tsconfig', path.join(dir, 'tsconfig.json'), path.join(dir, 'receiver.ts')],
      {
        cwd: dir,
        env: { PATH: process.env.PATH, PORT: String(port), WEBHOOK_SECRET: endpoint.secret },
        stdio: 'ignore',
      },
    );
    try {
      await untilListening(`http://127.0.0.1:${port}/hooks`, child);
      expect((await settledDelivery(endpoint.id)).lastStatusCode).toBe(204);
      expect((await settledDelivery(stranger.id)).lastStatusCode).toBe(400);
    } finally {
      await stop(child);
      for (const { id } of [endpoint, stranger])
        await dataOf(api.DELETE('/public/v1/webhooks/{id}', { params: { path: { id } } }), 204);
    }
  });
});

/** Waits until the receiver answers (an unsigned request: 400). */
async function untilListening(url: string, child: ChildProcess): Promise<void> {
  const answer = await eventually(
    async () => {
      if (child.exitCode !== null) return `the receiver exited with ${child.exitCode}`;
      return (await fetch(url, { method: 'POST', body: '{}' })).status;
    },
    { timeout: TIMEOUTS.process },
  );
  expect(answer).toBe(400);
}

/**
 * Runs a TypeScript sample as a module of this process, with `env` as its process.env, and answers
 * what it logged. Only the module specifier `@service/sdk` changes, to the SDK's source.
 */
async function runModule(name: string, source: string, env: Env): Promise<string[]> {
  const dir = path.join(work, 'run');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}.ts`);
  fs.writeFileSync(file, source.replaceAll("from '@service/sdk'", `from '${SDK_ENTRY}'`));
  const saved = { ...process.env };
  Object.assign(process.env, env);
  const logged: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...values: unknown[]) => {
    logged.push(values.map((value) => (typeof value === 'string' ? value : JSON.stringify(value))).join(' '));
  });
  try {
    await import(file);
  } finally {
    log.mockRestore();
    for (const key of Object.keys(env)) {
      if (saved[key] === undefined) delete process.env[key];
      else process.env[key] = saved[key];
    }
  }
  return logged;
}

/**
 * How long a reference page may take until its first operation is on the screen: Redoc renders the
 * whole reference in the browser before it shows any of it, which takes about 4 s for the Public API
 * on an idle 2-core machine and several times that when the machine is busy.
 */
const REFERENCE_RENDERED = 2 * TIMEOUTS.browser;

describe('the reference an installation serves', () => {
  it('carries the samples in its copies of the contracts and in the built /docs pages', async () => {
    for (const [name, operations] of [
      ['public-v1', PUBLIC],
      ['oauth', OAUTH],
    ] as const) {
      const response = await server.fetch(`/openapi/${name}.yaml`);
      expect(response.status).toBe(200);
      const served = parseYaml(await response.text()) as {
        paths: Record<string, Record<string, { 'x-codeSamples'?: CodeSample[] }>>;
      };
      for (const operation of operations) {
        expect(
          served.paths[operation.path]![operation.method.toLowerCase()]!['x-codeSamples'],
          operation.operationId,
        ).toEqual(operation.samples);
      }
    }
    // The pages embed the contracts they render (scripts/build-docs.sh), samples included.
    const docs = await (await server.fetch('/docs')).text();
    expect(docs).toContain('service.createPost({');
    expect(docs).toContain('verifyWebhook(Buffer.concat(chunks)');
    const oauthDocs = await (await server.fetch('/docs/oauth')).text();
    expect(oauthDocs).toContain('openssl dgst -sha256 -binary');
  });

  it('sends the pages compressed and Redoc’s script apart: one file both pages share, which a browser keeps', async () => {
    const get = (path: string, headers: Record<string, string> = {}) =>
      server.fetch(path, { headers: { 'accept-encoding': 'br, gzip', ...headers } });
    const scripts = new Set<string>();
    for (const path of ['/docs', '/docs/oauth']) {
      const page = await get(path);
      expect(page.status, path).toBe(200);
      expect(page.headers.get('content-encoding'), path).toBe('br');
      expect(page.headers.get('vary'), path).toMatch(/accept-encoding/i);
      // A page names the script of its build, so a browser asks whether it changed before using it again.
      expect(page.headers.get('cache-control'), path).toBe('no-cache');
      expect(Number(page.headers.get('content-length')), path).toBeLessThan(100_000);
      const html = await page.text();
      // Its outline, styles and contract; Redoc's script (2.3 MB) is not inlined.
      expect(html.length, path).toBeLessThan(600_000);
      const [, script, integrity] =
        /<link rel="modulepreload" href="(\/docs\/redoc-[0-9a-f]{16}\.js)" integrity="(sha384-[^"]+)"/.exec(html) ?? [];
      expect(html, path).toContain(`import { hydrate } from "${script}"`);
      scripts.add(script!);
      // As a browser revalidates (fetch would add `cache-control: no-cache` to a conditional request).
      const again = await get(path, { 'if-none-match': page.headers.get('etag')!, 'cache-control': 'max-age=0' });
      expect(again.status, path).toBe(304);

      const code = await get(script!, { 'accept-encoding': 'gzip' });
      expect(code.status, script).toBe(200);
      expect(code.headers.get('content-type'), script).toMatch(/^text\/javascript/);
      expect(code.headers.get('content-encoding'), script).toBe('gzip');
      // Its name changes with its content.
      expect(code.headers.get('cache-control'), script).toBe('public, max-age=31536000, immutable');
      const bytes = Buffer.from(await code.arrayBuffer());
      expect(`sha384-${createHash('sha384').update(bytes).digest('base64')}`, script).toBe(integrity);
      // Redoc's badge logo, which the pages' policy would block, is inlined at build.
      expect(bytes.toString('utf8'), script).not.toContain('https://cdn.redoc.ly/');
    }
    expect(scripts.size).toBe(1);
    expect((await server.fetch('/docs/redoc-0123456789abcdef.js')).status).toBe(404);
  });

  it.skipIf(skipBrowserTests)(
    'shows the samples in a browser (Chromium): the SDK’s once @service/sdk is chosen, and the OAuth TypeScript ones',
    async () => {
      const browser = await openBrowser();
      try {
        const { page } = browser;
        /** Waits until a code sample containing `text` is on the screen (TIMEOUTS.browser unless told). */
        const shown = (text: string, timeout?: number) =>
          page.locator('code', { hasText: text }).first().waitFor({ state: 'visible', timeout });
        const choose = async (language: string) => {
          await page.getByRole('button', { name: 'curl' }).first().click();
          await page.getByRole('menuitem', { name: language, exact: true }).click();
        };
        await page.goto(`${server.baseUrl}/docs#tag/Posts/operation/createPost`);
        await shown('curl -X POST "$BASE/public/v1/posts"', REFERENCE_RENDERED);
        await choose('@service/sdk');
        await shown('service.createPost({');
        await page.goto(`${server.baseUrl}/docs/oauth#tag/Tokens/operation/token`);
        await shown('curl -X POST "$BASE/api/oauth/token"', REFERENCE_RENDERED);
        await choose('TypeScript');
        await shown("grant_type: 'authorization_code'");
      } finally {
        await browser.close();
      }
    },
    3 * REFERENCE_RENDERED,
  );
});
