import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Channel } from '../src/channels/tables.js';
import { newId } from '../src/core/ids.js';
import { Keyring } from '../src/crypto/keyring.js';
import type { DatabaseHandle } from '../src/db/database.js';
import { OutboundClient } from '../src/net/outbound-client.js';
import { credentialsContext } from '../src/providers/account-credentials.js';
import { SiteRefusedError } from '../src/providers/connection-contract.js';
import { MastodonAdapter } from '../src/providers/mastodon/adapter.js';
import { MastodonApi } from '../src/providers/mastodon/api.js';
import { MastodonConnection, type MastodonCredentials } from '../src/providers/mastodon/connection.js';
import {
  appSecretContext,
  instanceOrigin,
  MastodonInstances,
  reencryptMastodonApps,
} from '../src/providers/mastodon/instance.js';
import {
  PermanentPublishError,
  ReconnectNeededError,
  TransientPublishError,
  type Outcome,
  type Progress,
  type PublicationInput,
  type PublishableMedia,
  type PublishedPart,
} from '../src/providers/publishing-contract.js';
import { createTestDatabase } from './support/database.js';
import { startFakeMastodon, type FakeMastodon } from './support/fake-mastodon.js';
import { createOrganization } from './support/fixtures.js';
import { mp4, png } from './support/media-samples.js';
import { TestClock } from './support/test-clock.js';

// The Mastodon adapter's parts against the fake Mastodon, without the rest of the service: the
// instance's app and limits, the connection (PKCE where the instance supports it), and the steps of a
// publication with their failures, including a status whose answer was lost, found again by sending
// it once more with its Idempotency-Key.
const REDIRECT_URI = 'http://127.0.0.1:9/channels/callback/mastodon';
let database: DatabaseHandle;
let mastodon: FakeMastodon;
let oldMastodon: FakeMastodon;
let organizationId: string;
const clock = new TestClock();
const keyring = new Keyring([{ id: 'test', key: randomBytes(32) }]);
// The instances are user-given: the address policy applies, with the fakes' loopback address allowed
// as an operator allows a range (MEDIA_FETCH_ALLOW_RANGES).
const outbound = new OutboundClient({
  allowPrivateAddresses: false,
  allowedRanges: ['127.0.0.1/32'],
  idleTimeoutSeconds: 10,
  maxDurationSeconds: 30,
});
const api = new MastodonApi(outbound);
let instances: MastodonInstances;
let connection: MastodonConnection;
let adapter: MastodonAdapter;
let channel: Channel;

beforeAll(async () => {
  database = await createTestDatabase();
  mastodon = await startFakeMastodon({ account: { username: 'acme', displayName: 'Acme Studio' } });
  oldMastodon = await startFakeMastodon({ supportsPkce: false, account: { username: 'elder' } });
  organizationId = (await createOrganization(database.db, 'Acme')).id;
  instances = new MastodonInstances(
    api,
    database.db,
    keyring,
    { mastodon: { appName: 'Post Scheduler tests', appWebsite: undefined }, publicUrl: 'http://127.0.0.1:9' },
    clock,
  );
  connection = new MastodonConnection(api, instances);
  adapter = new MastodonAdapter(api, database.db, keyring, clock);
  channel = await connectChannel(mastodon);
});
afterAll(async () => {
  outbound.close();
  await mastodon?.close();
  await oldMastodon?.close();
  await database?.close();
});

/** The user's way through the connection: the instance named, its consent page, the code traded. */
async function connect(instance: FakeMastodon, named = instance.url): Promise<MastodonCredentials> {
  const site = await connection.site.prepare(named, REDIRECT_URI);
  const verifier = randomBytes(32).toString('base64url');
  const codeChallenge = createHash('sha256').update(verifier).digest('base64url');
  const consent = await fetch(
    await connection.authorizeUrl({ state: 'st', redirectUri: REDIRECT_URI, codeChallenge, site }),
    {
      redirect: 'manual',
    },
  );
  const back = new URL(consent.headers.get('location')!);
  expect(back.searchParams.get('state')).toBe('st');
  return connection.exchangeCode({
    code: back.searchParams.get('code')!,
    redirectUri: REDIRECT_URI,
    codeVerifier: verifier,
    site,
  });
}

/** A channel of the organization holding the account's credentials, as connecting stores them. */
async function connectChannel(instance: FakeMastodon): Promise<Channel> {
  const credentials = await connect(instance);
  const identity = await connection.identity(credentials);
  return database.db
    .insertInto('channels')
    .values({
      id: newId('ch'),
      organization_id: organizationId,
      provider: 'mastodon',
      name: identity.name,
      username: identity.username,
      picture: identity.picture,
      external_id: identity.externalId,
      credentials: keyring.encrypt(
        JSON.stringify(credentials),
        credentialsContext(organizationId, 'mastodon', identity.externalId),
      ),
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

function image(name: string, altText?: string): PublishableMedia {
  const bytes = png(4, 3);
  return {
    id: newId('med'),
    fileName: name,
    contentType: 'image/png',
    kind: 'image',
    size: bytes.length,
    url: 'http://media.invalid/unused',
    open: () => Promise.resolve(Readable.from([bytes])),
    ...(altText ? { altText } : {}),
  };
}

function video(name: string): PublishableMedia {
  const bytes = mp4(8192);
  return {
    id: newId('med'),
    fileName: name,
    contentType: 'video/mp4',
    kind: 'video',
    size: bytes.length,
    url: 'http://media.invalid/unused',
    open: () => Promise.resolve(Readable.from([bytes])),
  };
}

let posts = 0;
function publication(
  content: string,
  options: { media?: PublishableMedia[]; settings?: unknown; reply?: PublicationInput['reply']; postId?: string } = {},
): PublicationInput {
  posts += 1;
  return {
    post: {
      id: options.postId ?? `post_test${posts}`,
      attempt: 1,
      content,
      settings: options.settings ?? { __type: 'mastodon', visibility: 'public', sensitive: false },
    },
    channel,
    media: options.media ?? [],
    ...(options.reply ? { reply: options.reply } : {}),
    signal: new AbortController().signal,
  };
}

/** Runs a publication's steps as the worker does, a pending answer asked again; the outcome and the steps run. */
async function publish(input: PublicationInput): Promise<{ outcome: Outcome; steps: string[]; pending: number }> {
  let progress: Progress = adapter.start(input);
  const steps: string[] = [];
  let pending = 0;
  for (;;) {
    steps.push(progress.step);
    const result = await adapter.run(input, progress);
    if ('outcome' in result) return { outcome: result.outcome, steps, pending };
    if ('pending' in result) {
      pending += 1;
      expect(result.pending.checkAgainInSeconds).toBeGreaterThanOrEqual(2);
      continue;
    }
    if ('restart' in result) throw new Error(`restarted: ${result.restart.reason}`);
    progress = result.next;
  }
}

function released(outcome: Outcome): PublishedPart {
  if (outcome.status !== 'published') throw new Error(`not published: ${outcome.message}`);
  return { releaseId: outcome.releaseId, releaseUrl: outcome.releaseUrl, reference: outcome.reference ?? {} };
}

const statusOf = (id: string) => mastodon.statuses.find((s) => s.id === id)!;

describe('an instance the user names', () => {
  it('is written as its origin, from a domain, a URL or a handle; http only for a loopback host', () => {
    expect(instanceOrigin('mastodon.social')).toEqual({ origin: 'https://mastodon.social' });
    expect(instanceOrigin(' https://Mastodon.Social/@alice ')).toEqual({ origin: 'https://mastodon.social' });
    expect(instanceOrigin('@alice@fosstodon.org')).toEqual({ origin: 'https://fosstodon.org' });
    expect(instanceOrigin('http://127.0.0.1:4000')).toEqual({ origin: 'http://127.0.0.1:4000' });
    expect(instanceOrigin('http://mastodon.social')).toEqual({ problem: 'an instance is reached over https' });
    expect(instanceOrigin('')).toHaveProperty('problem');
    expect(instanceOrigin('not a domain')).toHaveProperty('problem');
  });

  it('is refused at an address the outbound policy refuses (loopback beyond the allowed range)', async () => {
    const port = new URL(mastodon.url).port;
    const refused = connection.site.prepare(`http://127.0.0.2:${port}`, REDIRECT_URI);
    await expect(refused).rejects.toThrow(SiteRefusedError);
    await expect(refused).rejects.toThrow(/127\.0\.0\.2 is a loopback address/);
  });

  it('is refused when it does not answer as a Mastodon instance', async () => {
    const page = await fetch(`${mastodon.url}/api/v2/instance`);
    expect(page.status).toBe(200);
    mastodon.failNext(502, 'GET /api/v2/instance');
    await expect(connection.site.prepare(mastodon.url, REDIRECT_URI)).rejects.toThrow(
      /does not answer as a Mastodon instance \(502/,
    );
  });

  it('has this installation’s app registered once, its secret encrypted, and its limits read', async () => {
    await connect(mastodon);
    expect(mastodon.apps).toHaveLength(1);
    expect(mastodon.apps[0]).toMatchObject({
      name: 'Post Scheduler tests',
      website: 'http://127.0.0.1:9',
      scopes: ['read:accounts', 'write:statuses', 'write:media'],
      redirectUris: [REDIRECT_URI],
    });
    const stored = await database.db
      .selectFrom('mastodon_apps')
      .selectAll()
      .where('instance', '=', mastodon.url)
      .execute();
    expect(stored).toHaveLength(1);
    expect(stored[0]!.client_id).toBe(mastodon.apps[0]!.clientId);
    expect(stored[0]!.client_secret).not.toContain(mastodon.apps[0]!.clientSecret);
    expect(stored[0]!.client_secret).toMatch(/^enc:v1:/);

    mastodon.limits.maxCharacters = 5000;
    instances.forgetInfo(mastodon.url);
    expect(await instances.limits(mastodon.url)).toMatchObject({
      maxCharacters: 5000,
      maxMediaAttachments: 4,
      charactersReservedPerUrl: 23,
      descriptionLimit: 1500,
    });
    mastodon.limits.maxCharacters = 500;
    instances.forgetInfo(mastodon.url);
  });
  it('has its client secret encrypted again with a new key when the key is rotated', async () => {
    const next = { id: 'next', key: randomBytes(32) };
    const rotated = new Keyring([next, ...keyring.keys]);
    const count = await database.db.selectFrom('mastodon_apps').select('id').execute();
    expect(await reencryptMastodonApps(database.db, rotated)).toBe(count.length);
    for (const app of await database.db.selectFrom('mastodon_apps').selectAll().execute()) {
      expect(Keyring.keyIdOf(app.client_secret)).toBe('next');
      const fake = [...mastodon.apps, ...oldMastodon.apps].find((a) => a.clientId === app.client_id)!;
      expect(rotated.decrypt(app.client_secret, appSecretContext(app))).toBe(fake.clientSecret);
    }
    // Encrypted with the key already first: nothing to write.
    expect(await reencryptMastodonApps(database.db, rotated)).toBe(0);
    // Back to the key the other tests have.
    expect(await reencryptMastodonApps(database.db, new Keyring([...keyring.keys, next]))).toBe(count.length);
  });
});

describe('connecting an account', () => {
  it('uses PKCE on an instance that supports it (4.3 and later), and reads the account', async () => {
    const credentials = await connect(mastodon);
    const authorization = mastodon.authorizations.at(-1)!;
    expect(authorization.codeChallengeMethod).toBe('S256');
    expect(authorization.codeChallenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(authorization.scopes).toEqual(['read:accounts', 'write:statuses', 'write:media']);
    expect(credentials).toMatchObject({
      refreshToken: null,
      expiresAt: null,
      scopes: ['read:accounts', 'write:statuses', 'write:media'],
      site: mastodon.url,
      clientId: mastodon.apps[0]!.clientId,
    });
    expect(await connection.identity(credentials)).toEqual({
      externalId: `${mastodon.account.id}@${mastodon.domain}`,
      name: 'Acme Studio',
      username: `@acme@${mastodon.domain}`,
      picture: `${mastodon.url}/avatars/original/missing.png`,
    });
  });

  it('sends no challenge to an older instance, which knows nothing of PKCE', async () => {
    const credentials = await connect(oldMastodon);
    expect(oldMastodon.authorizations.at(-1)!.codeChallenge).toBeNull();
    expect((await connection.identity(credentials)).username).toBe(`@elder@${oldMastodon.domain}`);
  });

  it('has no refresh: a refused token means connecting again', async () => {
    const credentials = await connect(mastodon);
    await expect(connection.refresh()).rejects.toThrow(/no refresh tokens/);
    await connection.revoke(credentials);
    expect(mastodon.tokens.find((t) => t.accessToken === credentials.accessToken)?.revoked).toBe(true);
    await expect(connection.identity(credentials)).rejects.toThrow(/refused the account's token/);
  });
});

describe('publishing', () => {
  it('posts a text status with the post’s settings and an Idempotency-Key', async () => {
    const input = publication('Hello from the scheduler #launch', {
      settings: { __type: 'mastodon', visibility: 'unlisted', spoilerText: 'News', sensitive: true, language: 'de' },
    });
    const { outcome, steps } = await publish(input);
    expect(steps).toEqual(['status']);
    const status = statusOf(released(outcome).releaseId);
    expect(outcome).toMatchObject({ releaseUrl: `${mastodon.url}/@acme/${status.id}` });
    expect(status).toMatchObject({
      text: 'Hello from the scheduler #launch',
      visibility: 'unlisted',
      spoilerText: 'News',
      sensitive: true,
      language: 'de',
      inReplyToId: null,
      idempotencyKey: `${input.post.id}-1-1`,
    });
  });

  it('uploads four images with their alt text, then posts them in order', async () => {
    const media = [image('a.png', 'A red door'), image('b.png', 'A blue sky'), image('c.png'), image('d.png', 'Steps')];
    const settings = {
      __type: 'mastodon',
      visibility: 'public',
      sensitive: false,
      focus: { [media[1]!.id]: { x: -0.5, y: 0.25 } },
    };
    const { outcome, steps } = await publish(publication('Four pictures', { media, settings }));
    expect(steps).toEqual(['media', 'media', 'media', 'media', 'status']);
    const status = statusOf(released(outcome).releaseId);
    expect(status.mediaIds).toHaveLength(4);
    const attached = status.mediaIds.map((id) => mastodon.media.find((m) => m.id === id)!);
    expect(attached.map((m) => [m.fileName, m.description])).toEqual([
      ['a.png', 'A red door'],
      ['b.png', 'A blue sky'],
      ['c.png', null],
      ['d.png', 'Steps'],
    ]);
    // The focal point set for the second image, and none for the others (the instance crops around the centre).
    expect(attached.map((m) => m.focus)).toEqual([null, { x: -0.5, y: 0.25 }, null, null]);
  });

  it('posts a thread as a chain of replies', async () => {
    const first = released((await publish(publication('1/3 A thread'))).outcome);
    const reply = (part: number, parent: PublishedPart) => ({ part, parts: 3, root: first, parent });
    const second = released((await publish(publication('2/3 goes on', { reply: reply(2, first) }))).outcome);
    const third = released((await publish(publication('3/3 and ends', { reply: reply(3, second) }))).outcome);
    expect(statusOf(second.releaseId).inReplyToId).toBe(first.releaseId);
    expect(statusOf(third.releaseId).inReplyToId).toBe(second.releaseId);
  });

  it('waits for a video the instance still processes, asked again as the worker asks a pending publication', async () => {
    mastodon.processNextMedia(2);
    const { outcome, steps, pending } = await publish(publication('A video', { media: [video('clip.mp4')] }));
    expect(steps).toEqual(['media', 'processing', 'processing', 'processing', 'status']);
    expect(pending).toBe(2);
    expect(statusOf(released(outcome).releaseId).mediaIds).toHaveLength(1);
  });

  it('finds a status whose answer was lost by sending it again with its key: one status', async () => {
    const input = publication('Lost in transit');
    const progress = adapter.start(input);
    mastodon.loseNextStatusAnswer();
    const lost = await adapter.run(input, progress).catch((error: unknown) => error);
    expect(lost).toBeInstanceOf(TransientPublishError);
    expect((lost as TransientPublishError).answered).toBe(false);
    const created = mastodon.statuses.filter((s) => s.text === 'Lost in transit');
    expect(created).toHaveLength(1);

    const found = await adapter.lookup(input, progress);
    expect(found).toMatchObject({ status: 'published', releaseId: created[0]!.id });
    expect(mastodon.statuses.filter((s) => s.text === 'Lost in transit')).toHaveLength(1);
    expect(mastodon.idempotencyKeys.filter((k) => k.key === progress.reference.idempotencyKey)).toEqual([
      { key: `${input.post.id}-1-1`, accountId: mastodon.account.id, statusId: created[0]!.id, replayed: false },
      { key: `${input.post.id}-1-1`, accountId: mastodon.account.id, statusId: created[0]!.id, replayed: true },
    ]);
  });

  it('cannot tell once the key’s hour may be over', async () => {
    const input = publication('Long gone');
    const progress = adapter.start(input);
    clock.stopAt(new Date(Date.now() + 55 * 60_000));
    try {
      expect(await adapter.lookup(input, progress)).toMatchObject({
        status: 'unknown',
        message: expect.stringMatching(/over an hour ago/) as string,
      });
    } finally {
      clock.stopAt(undefined);
    }
    expect(mastodon.statuses.filter((s) => s.text === 'Long gone')).toHaveLength(0);
  });

  it('asks again about a status answered 500 or 502 (it may exist), and retries a 503 as not created', async () => {
    for (const status of [500, 502, 504] as const) {
      mastodon.failNext(status, 'POST /api/v1/statuses');
      const error = await publish(publication(`Failed with ${status}`)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TransientPublishError);
      expect((error as TransientPublishError).answered).toBe(false);
    }
    mastodon.failNext(503, 'POST /api/v1/statuses');
    const error = await publish(publication('Failed with 503')).catch((e: unknown) => e);
    expect((error as TransientPublishError).answered).toBe(true);
  });

  it('waits until X-RateLimit-Reset after a 429', async () => {
    mastodon.rateLimitNext(1, 120);
    const error = await publish(publication('Too fast')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransientPublishError);
    const wait = (error as TransientPublishError).retryAfterSeconds!;
    expect(wait).toBeGreaterThanOrEqual(100);
    expect(wait).toBeLessThanOrEqual(121);
  });

  it('fails the post with the instance’s words when it refuses the status', async () => {
    mastodon.refuseNextStatus();
    const error = await publish(publication('Refused')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PermanentPublishError);
    expect(error).toMatchObject({
      code: 'rejected_by_network',
      message: 'Mastodon refused the status: Validation failed: Text character limit of 500 exceeded.',
    });
  });

  it('needs the channel connected again once the user revoked the app’s access', async () => {
    const other = mastodon.createAccount({ username: 'revoker' });
    mastodon.signInAs(other);
    const revoker = await connectChannel(mastodon);
    mastodon.signInAs(mastodon.account);
    mastodon.revokeAll(other);
    const error = await publish({ ...publication('Revoked'), channel: revoker }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReconnectNeededError);
    expect((error as Error).message).toMatch(/The access token was revoked/);
  });
});
