import dns from 'node:dns';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from 'openapi-fetch';
import type { paths } from '../generated/public-v1.js';
import { dataOf, publicApi } from './support/api.js';
import { eventually } from './support/eventually.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { png } from './support/media-samples.js';
import { startRemoteServer, type RemoteServer } from './support/remote-server.js';
import { startTestServer, type TestServer } from './support/server.js';

// DNS rebinding: a name whose owner answers a public address when the server checks it and a
// loopback address a moment later, when a careless client would resolve it again to connect.
// 127.0.0.2 stands for the public address (the server is configured to allow it); the loopback
// services listen on the same port at every address the system resolves `localhost` to, so a
// connection made after a second lookup (the test's resolver or the system's) would reach them.
const HOST = 'localhost';
const CHECKED = '127.0.0.2';
const LOOPBACK = '127.0.0.1';

/** Answers the checked address to the first question after `arm()`, loopback to every later one. */
class RebindingResolver {
  private asked = 0;
  readonly questions: string[] = [];

  arm(): void {
    this.asked = 0;
  }

  resolve = (hostname: string): Promise<string[]> => {
    this.questions.push(hostname);
    if (hostname !== HOST)
      return Promise.reject(Object.assign(new Error(`${hostname} is not known here`), { code: 'ENOTFOUND' }));
    this.asked += 1;
    return Promise.resolve([this.asked === 1 ? CHECKED : LOOPBACK]);
  };
}

const picture = png(2);
const resolver = new RebindingResolver();
let server: TestServer;
let org: TestOrganization;
let api: Client<paths>;
let checked: RemoteServer;
let loopbackServices: RemoteServer[];
const hooks: string[] = [];

beforeAll(async () => {
  checked = await startRemoteServer((req, res) => {
    if (req.method === 'POST') {
      req.on('data', () => {});
      req.on('end', () => {
        hooks.push(String(req.headers['webhook-id']));
        res.writeHead(204).end();
      });
    } else {
      res.writeHead(200, { 'Content-Type': 'image/png' }).end(picture);
    }
  }, CHECKED);
  const systemAddresses = (await dns.promises.lookup(HOST, { all: true })).map((entry) => entry.address);
  expect(systemAddresses).toContain(LOOPBACK);
  loopbackServices = await Promise.all(
    [...new Set([LOOPBACK, ...systemAddresses])].map((address) =>
      startRemoteServer(
        (_req, res) => res.writeHead(200, { 'Content-Type': 'image/png' }).end(png(3)),
        address,
        checked.port,
      ),
    ),
  );
  server = await startTestServer({
    resolve: resolver.resolve,
    worker: true,
    env: { MEDIA_FETCH_ALLOW_RANGES: CHECKED, WEBHOOK_ALLOW_RANGES: `${CHECKED}/32`, WEBHOOK_RETRY_SCHEDULE: '0.2' },
  });
  org = await createOrganization(server.ctx.db, 'Rebinding');
  api = publicApi(server, org.auth);
});
afterAll(async () => {
  await server?.close();
  await Promise.all([checked?.close(), ...(loopbackServices ?? []).map((service) => service.close())]);
});

const loopbackRequests = () => loopbackServices.flatMap((service) => service.requests);

const uploadFromUrl = (url: string) => api.POST('/public/v1/media/upload-from-url', { body: { url } });

describe('outbound connections go to the address that was checked', () => {
  it('the rig: a second answer for the name is loopback, which the server refuses', async () => {
    resolver.arm();
    await resolver.resolve(HOST);
    const { error, response } = await uploadFromUrl(`http://${HOST}:${checked.port}/first-answer-used-up.png`);
    expect(response.status).toBe(422);
    expect(error?.error.message).toContain('loopback');
    expect(loopbackRequests()).toEqual([]);
    expect(checked.requests).toEqual([]);
  });

  it('upload from URL: the file comes from the checked address, loopback is never reached', async () => {
    resolver.arm();
    const media = await dataOf(uploadFromUrl(`http://${HOST}:${checked.port}/poster.png`), 201);
    expect(media.contentType).toBe('image/png');
    expect(checked.requests).toEqual([{ method: 'GET', path: '/poster.png', host: `${HOST}:${checked.port}` }]);
    expect(loopbackRequests()).toEqual([]);
  });

  it('webhook delivery: the receiver at the checked address gets it, loopback is never reached', async () => {
    resolver.arm();
    const endpoint = await dataOf(
      api.POST('/public/v1/webhooks', {
        body: { url: `http://${HOST}:${checked.port}/hooks`, eventTypes: ['post.published'] },
      }),
      201,
    );

    resolver.arm();
    const path = { params: { path: { id: endpoint.id } } };
    const delivery = await dataOf(api.POST('/public/v1/webhooks/{id}/test', path), 202);
    const settled = await eventually(async () => {
      const list = await dataOf(api.GET('/public/v1/webhooks/{id}/deliveries', path), 200);
      const tried = list.data.find((item) => item.id === delivery.id && item.status !== 'pending');
      expect(tried, 'the delivery, tried').toBeDefined();
      return tried!;
    });
    expect(settled.status).toBe('succeeded');
    expect(hooks).toEqual([delivery.id]);
    expect(loopbackRequests()).toEqual([]);
    expect(resolver.questions.every((name) => name === HOST)).toBe(true);
  });
});
