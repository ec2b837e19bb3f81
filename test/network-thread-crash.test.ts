import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addReturnOrigin } from '../src/channels/return-origins.js';
import { publicApi } from './support/api.js';
import { BrowserSession, inputValue } from './support/browser-session.js';
import { TEST_DATABASE_URL } from './support/database.js';
import { eventually } from './support/eventually.js';
import { startFakeMastodon, type FakeMastodon, type FakeMastodonAccount } from './support/fake-mastodon.js';
import { startFakeX, type FakeX } from './support/fake-x.js';
import { startPdsProxy, type PdsProxy } from './support/pds-proxy.js';
import { startPds, type PdsAccount, type PdsRecord, type TestPds } from './support/pds.js';
import { startPublishingRig, type PublishingRig } from './support/publishing-rig.js';
import { scaled, TIMEOUTS } from './support/timeouts.js';
import { dataOf } from './support/typed-answers.js';

// Threads to Mastodon, X and Bluesky published by worker processes of the build that are killed with
// SIGKILL between parts, while the network is creating a part (the worker dies without its answer), on
// PostgreSQL (the embedded database belongs to one process), against the fake Mastodon, the fake X and
// Bluesky's reference PDS, each made slow per status, post or record. What thread-crash.test.ts proves
// with the sandbox network, here with the ways each network has to find a part whose answer was lost:
// Mastodon's Idempotency-Key, sent again; X's timeline of the account, searched before anything is sent
// again; Bluesky's record key, chosen before the record is sent, where the record is asked for and put
// only where none is.
const onPostgres = describe.skipIf(!TEST_DATABASE_URL);

const PARTS = 4;
// Each status, post or record takes this long at the network, so that a thread is under way for a few seconds.
const NETWORK_DELAY_MS = 500;
const WORKER_ENV = { PUBLISH_LEASE_SECONDS: '5', PUBLISH_RETRY_BASE_MS: '500' };
const RETURN_URL = 'https://app.example.org/connected';

/** What the network created for a part of a thread: its id, URL and the part it replies to. */
interface Created {
  id: string;
  url: string;
  replyTo: string | null;
}

/** How a network of the drill is driven and read. */
interface Network {
  name: string;
  rig: PublishingRig;
  channelIds: string[];
  threads: number;
  /** Status, post or record creations the network is working on now. */
  inFlight(): number;
  /** Everything the network created with this text, in order of creation. */
  created(text: string, channelIndex: number): Created[] | Promise<Created[]>;
}

/** The text of a part: every part of every thread differs, as X refuses the same text twice. */
const partText = (thread: number, part: number) => `Thread ${thread + 1}, part ${part + 1}`;

/** How many parts of each thread of the rig are recorded as published, by post id. */
async function recordedParts(rig: PublishingRig): Promise<Map<string, number>> {
  const rows = await rig.api.ctx.db
    .selectFrom('posts')
    .select(['id', 'release_id', 'thread'])
    .where('organization_id', '=', rig.org.id)
    .execute();
  return new Map(
    rows.map((row) => [
      row.id,
      (row.release_id === null ? 0 : 1) + row.thread.filter((part) => part.releaseId !== null).length,
    ]),
  );
}

/** The threads that have some of their parts recorded as published, and not all. */
const midway = (parts: Map<string, number>) => [...parts.values()].filter((n) => n > 0 && n < PARTS).length;

/**
 * Creates the threads (thread `t` to channel `t` modulo the channels), kills a worker twice while a
 * thread is midway and a part is at the network, lets a third finish, and checks on the network and in
 * the posts that every thread was published once, in order, each part a reply to the one before.
 * The numbers of the drill, for the log.
 */
async function drill(network: Network): Promise<{ atFirstKill: number; atSecondKill: number }> {
  const { rig, channelIds, threads } = network;
  const api = publicApi(rig.api, rig.org.auth);
  const created = await api.POST('/public/v1/posts', {
    body: {
      type: 'now',
      posts: Array.from({ length: threads }, (_, t) => ({
        channelId: channelIds[t % channelIds.length]!,
        content: partText(t, 0),
        thread: Array.from({ length: PARTS - 1 }, (_, p) => ({ content: partText(t, p + 1) })),
      })),
    },
  });
  const ids = dataOf(created, 201).data.map((post) => post.id);
  expect(ids).toHaveLength(threads);

  // First kill: once a thread has a part recorded as published and the rest not, while the network
  // works on a part, whose answer the worker then never gets.
  const first = await network.rig.startWorker();
  await eventually(
    async () => {
      expect(midway(await recordedParts(rig))).toBeGreaterThan(0);
      expect(network.inFlight()).toBeGreaterThan(0);
    },
    { timeout: scaled(60_000), interval: 20 },
  );
  await first.kill();
  // Nothing moves while no worker runs: this is where the threads stood when it died.
  const atFirstKill = await recordedParts(rig);
  expect(midway(atFirstKill), 'threads under way when the first worker died').toBeGreaterThan(0);

  // Second kill: once the next worker took the threads over and published a part of one that it has
  // not finished, again while the network works on a part.
  const second = await rig.startWorker();
  await eventually(
    async () => {
      const now = await recordedParts(rig);
      const movedOn = [...now].filter(([id, n]) => n > atFirstKill.get(id)! && n < PARTS);
      expect(movedOn.length).toBeGreaterThan(0);
      expect(network.inFlight()).toBeGreaterThan(0);
    },
    { timeout: scaled(60_000), interval: 20 },
  );
  await second.kill();
  const atSecondKill = await recordedParts(rig);
  expect(midway(atSecondKill), 'threads under way when the second worker died').toBeGreaterThan(0);

  await rig.startWorker();
  expect(await rig.untilSettled(scaled(150_000))).toEqual({ published: threads });

  for (const [t, id] of ids.entries()) {
    // On the network: each part once, each a reply to the part before.
    const parts: Created[][] = [];
    for (let p = 0; p < PARTS; p++) parts.push(await network.created(partText(t, p), t % channelIds.length));
    expect(
      parts.map((sent) => sent.length),
      `how many times ${network.name} created each part of ${id}`,
    ).toEqual(Array.from({ length: PARTS }, () => 1));
    const once = parts.map((sent) => sent[0]!);
    expect(
      once.map((part) => part.replyTo),
      `what each part of ${id} replies to`,
    ).toEqual([null, ...once.slice(0, -1).map((part) => part.id)]);
    // The post records where each part went.
    const post = dataOf(await api.GET('/public/v1/posts/{id}', { params: { path: { id } } }));
    expect(post.status).toBe('published');
    expect(
      [
        { id: post.releaseId, url: post.releaseUrl },
        ...post.thread.map((part) => ({ id: part.releaseId, url: part.releaseUrl })),
      ],
      `the recorded releases of ${id}`,
    ).toEqual(once.map((part) => ({ id: part.id, url: part.url })));
  }
  return { atFirstKill: midway(atFirstKill), atSecondKill: midway(atSecondKill) };
}

/** The Public API's connect, to the network's consent page (which consents at once) and back: the channel's id. */
async function connectThroughApi(
  rig: PublishingRig,
  body: { provider: 'mastodon'; instance: string } | { provider: 'x' },
): Promise<string> {
  const api = publicApi(rig.api, rig.org.auth);
  const { authorizationUrl } = dataOf(
    await api.POST('/public/v1/channels/connect', { body: { ...body, returnUrl: RETURN_URL } }),
  );
  // On a connection of its own, as a browser would come to the network's page.
  const consent = await new Promise<string>((resolve, reject) => {
    http
      .get(authorizationUrl, { agent: false }, (response) => {
        response.resume();
        resolve(response.headers.location ?? '');
      })
      .on('error', reject);
  });
  const callback = new URL(consent);
  const back = await rig.api.fetch(callback.pathname + callback.search, { redirect: 'manual' });
  expect(back.status).toBe(303);
  const landed = new URL(back.headers.get('location')!);
  expect(landed.searchParams.get('reconnected')).toBe('false');
  return landed.searchParams.get('channelId')!;
}

/**
 * The Public API's connect of a Bluesky account, signed in on this server's page with its handle and
 * app password as its owner would: the channel's id.
 */
async function connectBlueskyThroughApi(rig: PublishingRig, account: PdsAccount): Promise<string> {
  const api = publicApi(rig.api, rig.org.auth);
  const page = new URL(
    dataOf(await api.POST('/public/v1/channels/connect', { body: { provider: 'bluesky', returnUrl: RETURN_URL } }))
      .authorizationUrl,
  );
  const browser = new BrowserSession(rig.api);
  const form = await browser.get(page.pathname + page.search);
  expect(form.status).toBe(200);
  const html = (await form.text()).split('action="/channels/sign-in/')[1]!;
  const done = await browser.postForm(page.pathname, {
    csrf_token: inputValue(html, 'csrf_token')!,
    state: inputValue(html, 'state')!,
    account: account.handle,
    password: account.appPassword,
    server: '',
  });
  expect(done.status).toBe(303);
  const landed = new URL(done.headers.get('location')!);
  expect(landed.searchParams.get('reconnected')).toBe('false');
  return landed.searchParams.get('channelId')!;
}

onPostgres('threads to Mastodon published by worker processes killed between parts', () => {
  // Four accounts of one instance, a thread to each: a few statuses at the instance at once.
  const THREADS = 4;
  let mastodon: FakeMastodon;
  beforeAll(async () => {
    mastodon = await startFakeMastodon({ account: { username: 'crash0' } });
    mastodon.slowStatuses(NETWORK_DELAY_MS);
  });
  afterAll(async () => {
    await mastodon?.close();
  });

  it(
    'a kill -9 between parts: every thread finishes once, in order, each status replying to the one before',
    { timeout: scaled(240_000) },
    async () => {
      // The instance is on loopback: allowed as an operator allows a range of their network.
      const env = { MEDIA_FETCH_ALLOW_RANGES: '127.0.0.1/32', DAILY_POST_LIMIT_MASTODON: '1000' };
      const rig = await startPublishingRig({ channels: 0, apiEnv: env, workerEnv: { ...WORKER_ENV, ...env } });
      try {
        await addReturnOrigin(rig.api.ctx.db, rig.org.id, new URL(RETURN_URL).origin);
        const accounts: FakeMastodonAccount[] = [mastodon.account];
        for (let i = 1; i < THREADS; i++) accounts.push(mastodon.createAccount({ username: `crash${i}` }));
        const channelIds: string[] = [];
        for (const account of accounts) {
          mastodon.signInAs(account);
          channelIds.push(await connectThroughApi(rig, { provider: 'mastodon', instance: mastodon.url }));
        }
        const numbers = await drill({
          name: 'Mastodon',
          rig,
          channelIds,
          threads: THREADS,
          inFlight: () => mastodon.statusesInFlight(),
          created: (text, channel) => {
            const account = accounts[channel]!;
            return mastodon.statuses
              .filter((status) => status.text === text)
              .map((status) => {
                // Each status of the thread's account, under the one key of its part, whatever the attempt.
                expect(status.accountId).toBe(account.id);
                return {
                  id: status.id,
                  url: `${mastodon.url}/@${account.username}/${status.id}`,
                  replyTo: status.inReplyToId,
                };
              });
          },
        });
        // Every send of a part carried the key its status was created under: a status whose answer died
        // with a worker is asked for again under its key, and answered, not created again.
        const keys = new Set(mastodon.statuses.map((status) => status.idempotencyKey));
        const sends = mastodon.requests.filter((r) => r.method === 'POST' && r.path === '/api/v1/statuses');
        expect(sends.filter((r) => r.idempotencyKey === null || !keys.has(r.idempotencyKey))).toEqual([]);
        const replays = mastodon.idempotencyKeys.filter((use) => use.replayed).length;
        console.log(
          `Mastodon thread crash drill: ${numbers.atFirstKill} and ${numbers.atSecondKill} of ${THREADS} threads ` +
            `under way at the kills, ${mastodon.statuses.length} statuses, ${replays} answered again by their key`,
        );
      } finally {
        await rig.close();
      }
    },
  );
});

onPostgres('threads to X published by worker processes killed between parts', () => {
  // One account (the fake X has one), which X's adapter publishes to one post at a time: the threads
  // go one after the other.
  const THREADS = 3;
  let x: FakeX;
  beforeAll(async () => {
    x = await startFakeX({ account: { username: 'crashdrill' } });
    x.slowPosts(NETWORK_DELAY_MS);
  });
  afterAll(async () => {
    await x?.close();
  });

  it(
    'a kill -9 between parts: every thread finishes once, in order, each post replying to the one before',
    { timeout: scaled(240_000) },
    async () => {
      const env = {
        X_CLIENT_ID: x.clientId,
        X_CLIENT_SECRET: x.clientSecret,
        X_API_URL: x.url,
        X_AUTHORIZE_URL: x.authorizeUrl,
        DAILY_POST_LIMIT_X: '1000',
      };
      const rig = await startPublishingRig({ channels: 0, apiEnv: env, workerEnv: { ...WORKER_ENV, ...env } });
      try {
        await addReturnOrigin(rig.api.ctx.db, rig.org.id, new URL(RETURN_URL).origin);
        const channelId = await connectThroughApi(rig, { provider: 'x' });
        const numbers = await drill({
          name: 'X',
          rig,
          channelIds: [channelId],
          threads: THREADS,
          inFlight: () => x.postsInFlight(),
          created: (text) =>
            x.tweets
              .filter((tweet) => tweet.sentText === text)
              .map((tweet) => ({
                id: tweet.id,
                url: `https://x.com/crashdrill/status/${tweet.id}`,
                replyTo: tweet.inReplyToTweetId,
              })),
        });
        // X has no idempotency key: a post whose answer died with a worker was found in the account's
        // timeline, never sent again (X would refuse the same text as a duplicate, hiding a second send).
        const sends = x.requests.filter((r) => r.operation === 'createPosts');
        expect(sends, 'the posts X was asked to create').toHaveLength(THREADS * PARTS);
        const searches = x.requests.filter((r) => r.operation === 'getUsersPosts').length;
        console.log(
          `X thread crash drill: ${numbers.atFirstKill} and ${numbers.atSecondKill} of ${THREADS} threads under way ` +
            `at the kills, ${x.tweets.length} posts, ${searches} searches of the timeline`,
        );
      } finally {
        await rig.close();
      }
    },
  );
});

onPostgres('threads to Bluesky published by worker processes killed between parts', () => {
  // Four accounts of the PDS, a thread to each (Bluesky's adapter publishes to an account one post at a
  // time): a few records being written at once.
  const THREADS = 4;
  const POST = 'app.bsky.feed.post';
  const PUT_RECORD = 'com.atproto.repo.putRecord';
  let pds: TestPds;
  let proxy: PdsProxy;
  beforeAll(async () => {
    pds = await startPds();
    // The accounts' PDS as the service reaches it (their DID documents name the proxy), slow to answer
    // a record it wrote.
    proxy = await startPdsProxy(pds);
    proxy.slow(PUT_RECORD, NETWORK_DELAY_MS);
  }, TIMEOUTS.hook);
  afterAll(async () => {
    await proxy?.close();
    await pds?.close();
  });

  it(
    'a kill -9 between parts: every thread finishes once, in order, each record replying to the one before',
    { timeout: scaled(240_000) },
    async () => {
      const env = {
        BLUESKY_ENTRYWAY_URL: proxy.url,
        BLUESKY_PLC_URL: proxy.url,
        // The PDS is on loopback: allowed as an operator allows a range of their network.
        MEDIA_FETCH_ALLOW_RANGES: '127.0.0.1/32',
        DAILY_POST_LIMIT_BLUESKY: '1000',
      };
      const rig = await startPublishingRig({ channels: 0, apiEnv: env, workerEnv: { ...WORKER_ENV, ...env } });
      try {
        await addReturnOrigin(rig.api.ctx.db, rig.org.id, new URL(RETURN_URL).origin);
        const accounts: PdsAccount[] = [];
        for (let i = 0; i < THREADS; i++) accounts.push(await pds.createAccount());
        const channelIds: string[] = [];
        for (const account of accounts) channelIds.push(await connectBlueskyThroughApi(rig, account));
        // Signed in at the PDS the accounts' DID documents name: the proxy.
        expect(proxy.calls.filter((call) => call === 'com.atproto.server.createSession')).toHaveLength(THREADS);
        const before = proxy.calls.length;

        /** The account's records with this text, oldest first. */
        const recordsOf = async (text: string, channel: number): Promise<PdsRecord[]> =>
          (await pds.listRecords(accounts[channel]!.did, POST))
            .filter((record) => record.value.text === text)
            .reverse();
        const numbers = await drill({
          name: 'Bluesky',
          rig,
          channelIds,
          threads: THREADS,
          inFlight: () => proxy.inFlight(PUT_RECORD),
          created: async (text, channel) =>
            (await recordsOf(text, channel)).map((record) => ({
              id: record.uri,
              url: `https://bsky.app/profile/${accounts[channel]!.did}/post/${record.uri.split('/').at(-1)!}`,
              replyTo: (record.value.reply as { parent: { uri: string } } | undefined)?.parent.uri ?? null,
            })),
        });

        // Each part after the first names the thread's first part as its root and the part before as its
        // parent, each by the cid the PDS holds.
        const ref = (record: PdsRecord) => ({ uri: record.uri, cid: record.cid });
        const records: PdsRecord[] = [];
        for (let t = 0; t < THREADS; t++) {
          const parts = await Promise.all(
            Array.from({ length: PARTS }, async (_, p) => (await recordsOf(partText(t, p), t))[0]!),
          );
          expect(
            parts.map((part) => part.value.reply),
            `the replies of thread ${t + 1}`,
          ).toEqual([
            undefined,
            ...parts.slice(0, -1).map((parent) => ({ root: ref(parts[0]!), parent: ref(parent) })),
          ]);
          records.push(...parts);
        }
        // Every write of a part was at the key its record has, chosen before it was sent, and only where
        // no record was (swapRecord: null): a write sent again after a lost answer could add nothing.
        const keys = new Set(records.map((record) => record.uri));
        const writes = proxy.inputs(PUT_RECORD);
        expect(
          writes.filter(
            (write) =>
              write.swapRecord !== null ||
              !keys.has(`at://${String(write.repo)}/${String(write.collection)}/${String(write.rkey)}`),
          ),
          'writes of a record elsewhere, or over one',
        ).toEqual([]);
        // Each kill left a record whose answer never came: the worker that took over asked for it first.
        const asked = proxy.calls.slice(before).filter((call) => call === 'com.atproto.repo.getRecord').length;
        expect(asked, 'records asked for at their key').toBeGreaterThanOrEqual(2);
        console.log(
          `Bluesky thread crash drill: ${numbers.atFirstKill} and ${numbers.atSecondKill} of ${THREADS} threads ` +
            `under way at the kills, ${records.length} records, ${writes.length} writes, ${asked} asked for at their key`,
        );
      } finally {
        await rig.close();
      }
    },
  );
});
