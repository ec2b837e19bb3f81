import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import Service, {
  ServiceError,
  type CreatePostRequest,
  type RequestOptions,
  type ServiceOptions,
} from '../../../src/sdk/src/index.js';
import type { operations } from '../../../src/sdk/src/spec.js';
import { stringMatching } from '../../support/typed-matchers.js';

/**
 * An operation of the contract that the server answers, by its operationId (the `event…` ones are the
 * webhooks it sends).
 */
export type Operation = Exclude<keyof operations, `event${string}`>;

/** Where the contract suite runs: Prism mocking the contract, or the real server behind Prism's validating proxy. */
export interface ContractTarget {
  /** A client of the target; `credential` defaults to one the target accepts. */
  client(options?: ServiceOptions & { credential?: string }): Service;
  /**
   * Whether answers reflect what was sent (a real server) or are the contract's examples (a mock,
   * which answers the same example whatever the ids); only a real server is held to the former.
   */
  echoes: boolean;
  /** A sandbox channel of the organization. */
  sandboxChannelId: string;
  /** A credential, and the call options, that the target answers with 401. */
  refused: { credential: string; options: RequestOptions };
  /** Call options under which a lookup of an unknown id answers 404. */
  notFoundOptions: RequestOptions;
  /**
   * A client whose organization has used its rate limit, the call options that get a 429, and the
   * `Retry-After` expected.
   */
  rateLimited: { client: (options?: ServiceOptions) => Service; options: RequestOptions; retryAfter: number };
  /** Why some of `operations` cannot be tried on this target (not built yet), or undefined. */
  unavailable(...operations: Operation[]): string | undefined;
}

/** A 1×1 transparent PNG. */
export const PNG_PIXEL = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

/** Up to `max` items of an async iterator; a mock's pages never end, so the suite never reads them all. */
export async function take<T>(items: AsyncIterable<T>, max: number): Promise<T[]> {
  const taken: T[] = [];
  for await (const item of items) {
    taken.push(item);
    if (taken.length >= max) break;
  }
  return taken;
}

async function failureOf(promise: Promise<unknown>): Promise<ServiceError> {
  const outcome = await promise.then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(outcome).toBeInstanceOf(ServiceError);
  return outcome as ServiceError;
}

/**
 * The SDK's contract tests: every method called the way an integrator would, against a target that
 * checks each request (and, for the real server, each response) against `openapi/public-v1.yaml`.
 */
export function describeContract(name: string, getTarget: () => ContractTarget): void {
  describe(`@service/sdk against ${name}`, () => {
    it('checks the credential', async () => {
      const target = getTarget();
      const status = await target.client().isConnected();
      expect(status.connected).toBe(true);
      expect(status.organization.id).toMatch(/^org_/);
      expect(status.credential.type).toBe('api_key');
    });

    it('lists channels under both names, and their quota', async () => {
      const target = getTarget();
      const service = target.client();
      const channels = await service.channels();
      expect(await service.integrations()).toEqual(channels);
      expect(channels.data).toContainEqual(
        expect.objectContaining({ id: target.sandboxChannelId, provider: 'sandbox' }),
      );

      const quota = await service.quota();
      for (const channel of quota.data) {
        expect(channel.channelId).toMatch(/^ch_/);
        expect(channel.remaining).toBe(Math.max(0, channel.limit - channel.used));
        expect(Number.isNaN(Date.parse(channel.resetsAt))).toBe(false);
      }
      if (target.echoes) {
        expect(quota.data.map((channel) => channel.channelId)).toEqual(channels.data.map((channel) => channel.id));
      }
    });

    it('throws a ServiceError for a refused credential, with the credential redacted', async () => {
      const target = getTarget();
      const { credential, options } = target.refused;
      const error = await failureOf(target.client({ credential }).isConnected(options));
      expect(error).toMatchObject({ status: 401, code: 'unauthorized', details: [] });
      expect(error.requestId).toMatch(/^req_/);
      expect(error.headers['www-authenticate']).toMatch(/^Bearer/);
      expect(error.request).toMatchObject({ method: 'GET', headers: { authorization: '[redacted]' } });
      expect(error.request.url).toMatch(/\/public\/v1\/is-connected$/);
      const everything = JSON.stringify({ ...error, message: error.message, stack: error.stack });
      expect(everything).not.toContain(credential);
    });

    it('throws a ServiceError with retryAfter for a 429, at once when the wait exceeds the cap', async () => {
      const target = getTarget();
      const { client, options, retryAfter } = target.rateLimited;
      const attempts: string[] = [];
      const counting = client({
        maxRetryAfter: retryAfter - 1,
        fetch: (request) => {
          attempts.push(request.url);
          return fetch(request);
        },
      });
      const error = await failureOf(counting.channels(options));
      expect(error).toMatchObject({ status: 429, code: 'rate_limited', retryAfter });
      expect(error.requestId).toMatch(/^req_/);
      expect(attempts).toHaveLength(1);

      const noRetries = await failureOf(client().channels({ ...options, maxRetries: 0 }));
      expect(noRetries).toMatchObject({ status: 429, retryAfter });
    });

    it('creates posts idempotently, then reads and lists them', async (ctx) => {
      const target = getTarget();
      ctx.skip(
        !!target.unavailable('createPost', 'getPost', 'listPosts'),
        target.unavailable('createPost', 'getPost', 'listPosts'),
      );
      const service = target.client();
      const body: CreatePostRequest = {
        type: 'draft',
        posts: [
          { channelId: target.sandboxChannelId, content: 'First draft', settings: { __type: 'sandbox' } },
          {
            channelId: target.sandboxChannelId,
            content: 'Second draft',
            settings: { __type: 'sandbox', outcome: 'failed' },
          },
        ],
      };
      const idempotencyKey = randomUUID();
      const created = await service.createPost(body, { idempotencyKey });
      expect(created.group).toMatch(/^grp_/);
      expect(created.data.length).toBeGreaterThan(0);
      for (const post of created.data)
        expect(post).toMatchObject({ id: stringMatching(/^post_/), group: created.group });
      // The same key and body again: the first result, not new posts.
      const replay = await service.post(body, { idempotencyKey });
      expect(replay.group).toBe(created.group);
      expect(replay.data.map((post) => post.id)).toEqual(created.data.map((post) => post.id));

      const first = created.data[0]!;
      const read = await service.getPost(first.id);
      expect(read.id).toMatch(/^post_/);

      const page = await service.listPosts({ group: created.group, status: ['draft'], limit: 1 });
      expect(await service.postList({ group: created.group, status: ['draft'], limit: 1 })).toEqual(page);
      const iterated = await take(service.iteratePosts({ group: created.group, limit: 1 }), 3);
      expect(iterated.length).toBeGreaterThan(0);

      if (target.echoes) {
        expect(created.data).toMatchObject([
          { channelId: target.sandboxChannelId, content: 'First draft', status: 'draft', provider: 'sandbox' },
          {
            channelId: target.sandboxChannelId,
            content: 'Second draft',
            status: 'draft',
            settings: { outcome: 'failed' },
          },
        ]);
        expect(read).toEqual(first);
        expect(page.data).toHaveLength(1);
        expect(page.nextCursor).not.toBeNull();
        // Two pages of one post each: the iterator followed the cursor to the end.
        expect(iterated.map((post) => post.id).sort()).toEqual(created.data.map((post) => post.id).sort());
      }
    });

    it('edits, schedules, unschedules and deletes a post', async (ctx) => {
      const target = getTarget();
      const needs: Operation[] = [
        'createPost',
        'updatePost',
        'schedulePost',
        'changePostStatus',
        'deletePost',
        'getPost',
        'getPostHistory',
      ];
      ctx.skip(!!target.unavailable(...needs), target.unavailable(...needs));
      const service = target.client();
      const created = await service.createPost({
        type: 'draft',
        content: 'Doors open at 9',
        channelIds: [target.sandboxChannelId],
      });
      const post = created.data[0]!;

      const edited = await service.updatePost(post.id, { content: 'Doors open at 10' });
      const at = new Date(Date.now() + 24 * 3600 * 1000);
      const scheduled = await service.schedulePost(post.id, at);
      expect(scheduled.status).toBe('scheduled');
      const unscheduled = await service.changePostStatus(post.id, 'draft');
      expect(unscheduled.status).toBe('draft');
      const history = await take(service.iteratePostHistory(post.id), 20);
      expect(history.length).toBeGreaterThan(0);
      await expect(service.deletePost(post.id)).resolves.toBeUndefined();

      if (target.echoes) {
        expect(edited).toMatchObject({ id: post.id, content: 'Doors open at 10', status: 'draft' });
        expect(scheduled).toMatchObject({ id: post.id, scheduledAt: at.toISOString() });
        expect(unscheduled).toMatchObject({ id: post.id, scheduledAt: at.toISOString() });
        expect(history.map((event) => [event.type, event.status])).toEqual([
          ['created', 'draft'],
          ['edited', 'draft'],
          ['scheduled', 'scheduled'],
          ['drafted', 'draft'],
        ]);
        await expect(service.getPost(post.id)).rejects.toMatchObject({ status: 404, code: 'not_found' });
      }
    });

    it('imports rows after a dry run, exports them as CSV and duplicates a post', async (ctx) => {
      const target = getTarget();
      const needs: Operation[] = ['importPosts', 'exportPosts', 'duplicatePost'];
      ctx.skip(!!target.unavailable(...needs), target.unavailable(...needs));
      const service = target.client();
      const file = {
        rows: [{ key: globalThis.crypto.randomUUID(), channels: [target.sandboxChannelId], text: 'Imported' }],
      };
      const check = await service.importPosts(file, { dryRun: true });
      const report = await service.importPosts(file);
      const postId = report.rows[0]!.postIds[0]!;
      const csv = await service.exportPosts({ format: 'csv' });
      expect(typeof csv).toBe('string');
      const copy = await service.duplicatePost(postId);
      expect(copy.status).toBe('draft');

      if (target.echoes) {
        expect(check).toMatchObject({ dryRun: true, invalid: 0, rows: [{ row: 1, outcome: 'valid' }] });
        expect(report).toMatchObject({ dryRun: false, created: 1, rows: [{ row: 1, outcome: 'created' }] });
        expect(csv.split('\n')[0]).toBe('key,channels,text,time,media,settings,status,provider,publishedAt,releaseUrl');
        expect(csv).toContain(`${postId},${target.sandboxChannelId},Imported,,,`);
        expect(copy).toMatchObject({ channelId: target.sandboxChannelId, content: 'Imported', scheduledAt: null });
        expect(copy.id).not.toBe(postId);
        expect((await service.importPosts(file)).existing).toBe(1);
      }
    });

    it('throws a 404 ServiceError for an unknown post', async (ctx) => {
      const target = getTarget();
      ctx.skip(!!target.unavailable('getPost'), target.unavailable('getPost'));
      const error = await failureOf(target.client().getPost('post_doesNotExist000000', target.notFoundOptions));
      expect(error).toMatchObject({ status: 404, code: 'not_found', details: [] });
      expect(error.requestId).toMatch(/^req_/);
      expect(error.message).not.toBe('');
    });

    it('uploads a file in three steps, lists and deletes it', async (ctx) => {
      const target = getTarget();
      const needs: Operation[] = ['createUpload', 'completeUpload', 'listMedia', 'deleteMedia'];
      ctx.skip(!!target.unavailable(...needs), target.unavailable(...needs));
      const service = target.client();
      const media = await service.upload(PNG_PIXEL, 'pixel.png');
      expect(media.id).toMatch(/^med_/);

      const page = await service.listMedia({ limit: 10 });
      expect(Array.isArray(page.data)).toBe(true);
      const listed = await take(service.iterateMedia(), 100);
      await expect(service.deleteMedia(media.id)).resolves.toBeUndefined();

      if (target.echoes) {
        expect(media).toMatchObject({
          fileName: 'pixel.png',
          contentType: 'image/png',
          kind: 'image',
          size: PNG_PIXEL.length,
        });
        expect(listed.map((item) => item.id)).toContain(media.id);
        await expect(service.deleteMedia(media.id)).rejects.toMatchObject({ status: 404, code: 'not_found' });
      }
    });
  });
}
