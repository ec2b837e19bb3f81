import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseYaml, SPEC_FILES } from '../src/core/contract.js';
import { bodyOf, dataOf, publicApi, type ApiError, type Schemas } from './support/api.js';
import {
  createChannel,
  createOrganization,
  insertMedia,
  insertPost,
  type TestOrganization,
} from './support/fixtures.js';
import { zip } from './support/media-samples.js';
import { FakeTikTok, send } from './support/posts.js';
import { startRemoteServer, type RemoteServer } from './support/remote-server.js';
import { startTestServer, type TestServer } from './support/server.js';

/**
 * Prism serves the contract's examples to partners, who build their error handling on them: each
 * example must be an answer the real server gives in the same situation. Ids differ from run to run,
 * so they are compared by their prefix.
 */

// The contract as plain data: tests walk it by the names the OpenAPI format gives its parts.
interface WithExamples {
  content: Record<string, { examples: Record<string, { value: unknown }> }>;
}
const spec = parseYaml(fs.readFileSync(SPEC_FILES.publicV1, 'utf8')) as {
  components: { responses: Record<string, WithExamples> };
  paths: Record<string, Record<string, { responses: Record<string, WithExamples> }>>;
};
const exampleOf = (answer: WithExamples | undefined, name: string) =>
  answer!.content['application/json']!.examples[name]!.value;
const errorExample = (response: string, name: string) => exampleOf(spec.components.responses[response], name);
const anyId = (value: unknown): unknown =>
  JSON.parse(JSON.stringify(value).replace(/\b(ch|post|med|req|grp|org|upl)_[A-Za-z0-9]{20}\b/g, '$1_…'));

let server: TestServer;
let files: RemoteServer;
let acme: TestOrganization;
const tiktok = new FakeTikTok();
let youtube: string;
let tiktokChannel: string;
let sandbox: string;

beforeAll(async () => {
  files = await startRemoteServer(
    (_req, res) => void res.writeHead(200, { 'Content-Type': 'application/zip' }).end(zip()),
  );
  server = await startTestServer({
    env: { RATE_LIMIT_MAX: '1000000', DAILY_POST_LIMIT_TIKTOK: '15', MEDIA_FETCH_ALLOW_RANGES: '127.0.0.1/32' },
    providers: { tiktok: { creatorInfo: tiktok } },
  });
  server.setNow('2026-11-21T16:00:00.000Z');
  acme = await createOrganization(server.ctx.db, 'Acme Studio');
  youtube = (await createChannel(server.ctx.db, acme.id, 'youtube')).id;
  tiktokChannel = (await createChannel(server.ctx.db, acme.id, 'tiktok')).id;
  sandbox = (await createChannel(server.ctx.db, acme.id, 'sandbox')).id;
});
afterAll(async () => {
  await server?.close();
  await files?.close();
});

/** The whole answer of a refusal, its ids compared by their prefix. */
async function refusal(response: Response) {
  return anyId(await bodyOf<ApiError>(response));
}

describe('the error examples of the contract are answers of the real server', () => {
  it('BadRequest validationFailed', async () => {
    const response = await send(server, acme.auth, 'POST', '/public/v1/posts', {
      type: 'schedule',
      posts: [
        { channelId: youtube },
        { channelId: tiktokChannel, settings: { __type: 'tiktok', postMode: 'direct', privacyLevel: 'FRIENDS' } },
      ],
    });
    expect(response.status).toBe(400);
    expect(await refusal(response)).toEqual(anyId(errorExample('BadRequest', 'validationFailed')));
  });

  it('Unauthorized invalidCredential and missingCredential', async () => {
    const invalid = await server.fetch('/public/v1/channels', {
      headers: { Authorization: 'Bearer svc_live_revoked' },
    });
    expect(await refusal(invalid)).toEqual(anyId(errorExample('Unauthorized', 'invalidCredential')));
    expect(await refusal(await server.fetch('/public/v1/channels'))).toEqual(
      anyId(errorExample('Unauthorized', 'missingCredential')),
    );
  });

  it('NotFound notFound and Conflict publishing', async () => {
    expect(await refusal(await send(server, acme.auth, 'GET', '/public/v1/posts/post_4Ki7Lo1Pm3Nj8Bh5Gv2C'))).toEqual(
      anyId(errorExample('NotFound', 'notFound')),
    );
    const publishing = await insertPost(server.ctx.db, {
      organizationId: acme.id,
      channelId: sandbox,
      status: 'publishing',
      scheduledAt: '2026-11-21T16:00:00.000Z',
    });
    const conflict = await send(server, acme.auth, 'PATCH', `/public/v1/posts/${publishing}`, { content: 'too late' });
    expect(conflict.status).toBe(409);
    expect(await refusal(conflict)).toEqual(anyId(errorExample('Conflict', 'publishing')));
  });

  it('Conflict mediaInUse', async () => {
    const video = await insertMedia(server.ctx.db, acme.id, 'video');
    const post = await insertPost(server.ctx.db, {
      organizationId: acme.id,
      channelId: sandbox,
      status: 'scheduled',
      scheduledAt: '2026-12-01T09:30:00.000Z',
    });
    await server.ctx.db
      .updateTable('posts')
      .set({ media_ids: JSON.stringify([video]) })
      .where('id', '=', post)
      .execute();
    const response = await send(server, acme.auth, 'DELETE', `/public/v1/media/${video}`);
    expect(response.status).toBe(409);
    expect(await refusal(response)).toEqual(anyId(errorExample('Conflict', 'mediaInUse')));
  });

  it('PayloadTooLarge tooLarge and UnsupportedMediaType unsupportedType', async () => {
    const tooLarge = await send(server, acme.auth, 'POST', '/public/v1/media/uploads', {
      fileName: 'poster.jpg',
      contentType: 'image/jpeg',
      size: 15728640,
    });
    expect(tooLarge.status).toBe(413);
    expect(await refusal(tooLarge)).toEqual(anyId(errorExample('PayloadTooLarge', 'tooLarge')));
    const unsupported = await send(server, acme.auth, 'POST', '/public/v1/media/upload-from-url', {
      url: `${files.origin}/brochure.zip`,
    });
    expect(unsupported.status).toBe(415);
    expect(await refusal(unsupported)).toEqual(anyId(errorExample('UnsupportedMediaType', 'unsupportedType')));
  });

  it('Unprocessable postRules, quotaExceeded and refusedUrl', async () => {
    const image = await insertMedia(server.ctx.db, acme.id, 'image');
    const video = await insertMedia(server.ctx.db, acme.id, 'video');
    const rules = await send(server, acme.auth, 'POST', '/public/v1/posts', {
      type: 'schedule',
      date: '2026-12-01T09:30:00.000Z',
      posts: [
        {
          channelId: youtube,
          mediaIds: [image],
          settings: { __type: 'youtube', title: 'Winter', privacyStatus: 'unlisted', madeForKids: false },
        },
        {
          channelId: tiktokChannel,
          mediaIds: [video],
          settings: { __type: 'tiktok', postMode: 'direct', privacyLevel: 'FOLLOWER_OF_CREATOR' },
        },
      ],
    });
    expect(rules.status).toBe(422);
    expect(await refusal(rules)).toEqual(anyId(errorExample('Unprocessable', 'postRules')));

    for (let i = 0; i < 15; i++) {
      await insertPost(server.ctx.db, {
        organizationId: acme.id,
        channelId: tiktokChannel,
        status: 'scheduled',
        scheduledAt: '2026-12-01T08:00:00.000Z',
      });
    }
    const quota = await send(server, acme.auth, 'POST', '/public/v1/posts', {
      type: 'schedule',
      date: '2026-12-01T09:30:00.000Z',
      posts: [
        { channelId: sandbox, content: 'Doors open at 9' },
        {
          channelId: tiktokChannel,
          mediaIds: [video],
          settings: { __type: 'tiktok', postMode: 'direct', privacyLevel: 'SELF_ONLY' },
        },
      ],
    });
    expect(quota.status).toBe(422);
    expect(await refusal(quota)).toEqual(anyId(errorExample('Unprocessable', 'quotaExceeded')));

    const refused = await send(server, acme.auth, 'POST', '/public/v1/media/upload-from-url', {
      url: 'http://10.0.0.12/poster.jpg',
    });
    expect(refused.status).toBe(422);
    expect(await refusal(refused)).toEqual(anyId(errorExample('Unprocessable', 'refusedUrl')));
  });
});

describe('the media examples of the contract have the form of real media', () => {
  /**
   * What a client may rely on: the signed URL expires when `urlExpiresAt` says, in whole seconds, with
   * a full-length signature.
   */
  function signedUrlFacts(media: { url: string; urlExpiresAt: string }) {
    const url = new URL(media.url);
    return {
      path: url.pathname.replace(/\b(org|med)_[A-Za-z0-9]{20}\b/g, '$1_…'),
      expiresMatchesUrlExpiresAt: Number(url.searchParams.get('expires')) * 1000 === Date.parse(media.urlExpiresAt),
      signatureLength: url.searchParams.get('signature')?.length,
    };
  }

  it('listMedia and completeUpload', async () => {
    const id = await insertMedia(server.ctx.db, acme.id, 'video');
    await server.ctx.db
      .updateTable('media')
      .set({ storage_key: `media/${acme.id}/${id}` })
      .where('id', '=', id)
      .execute();
    const media = await dataOf(publicApi(server, acme.auth).GET('/public/v1/media'), 200);
    const real = media.data.find((m) => m.id === id)!;
    for (const [path, operation, status, name] of [
      ['/public/v1/media', 'get', '200', 'page'],
      ['/public/v1/media/uploads/{uploadId}/complete', 'post', '200', 'video'],
      ['/public/v1/media/upload-from-url', 'post', '201', 'image'],
    ] as const) {
      const value = exampleOf(spec.paths[path]![operation]!.responses[status], name) as
        Schemas['Media'] | Schemas['MediaPage'];
      const example = 'data' in value ? value.data[0]! : value;
      expect(signedUrlFacts(example), `${path} ${name}`).toEqual(signedUrlFacts(real));
    }
  });

  it('createUpload', async () => {
    const real = await dataOf(
      publicApi(server, acme.auth).POST('/public/v1/media/uploads', {
        body: { fileName: 'winter-collection.mp4', contentType: 'video/mp4', size: 48213776 },
      }),
      201,
    );
    const example = exampleOf(
      spec.paths['/public/v1/media/uploads']!.post!.responses['201'],
      'video',
    ) as Schemas['Upload'];
    const facts = (upload: { uploadUrl: string; expiresAt: string }) => {
      const url = new URL(upload.uploadUrl);
      return {
        path: url.pathname.replace(/\b(org|upl)_[A-Za-z0-9]{20}\b/g, '$1_…'),
        expiresMatchesExpiresAt: Number(url.searchParams.get('expires')) * 1000 === Date.parse(upload.expiresAt),
        signatureLength: url.searchParams.get('signature')?.length,
      };
    };
    expect(facts(example)).toEqual(facts(real));
    expect(example.headers).toEqual(real.headers);
  });
});
