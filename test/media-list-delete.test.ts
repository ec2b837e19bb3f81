import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostStatus } from '../src/core/contract.js';
import { publicApi, type Schemas } from './support/api.js';
import { createChannel, createOrganization, insertPost, type TestOrganization } from './support/fixtures.js';
import { png } from './support/media-samples.js';
import { startTestServer, type TestServer } from './support/server.js';
import { dataOf, refusalOf } from './support/typed-answers.js';
import { anyString, stringMatching } from './support/typed-matchers.js';

let server: TestServer;
let acme: TestOrganization;
let globex: TestOrganization;

beforeAll(async () => {
  server = await startTestServer();
  acme = await createOrganization(server.ctx.db, 'Acme');
  globex = await createOrganization(server.ctx.db, 'Globex');
});
afterAll(() => server?.close());

const api = (org: TestOrganization) => publicApi(server, org.auth);

/** Step 1 of the signed upload of `bytes`, a PNG. */
const startUpload = async (org: TestOrganization, fileName: string, bytes: Buffer) =>
  dataOf(
    await api(org).POST('/public/v1/media/uploads', {
      body: { fileName, contentType: 'image/png', size: bytes.length },
    }),
    201,
  );

/** Step 3 of the signed upload. */
const complete = (org: TestOrganization, uploadId: string) =>
  api(org).POST('/public/v1/media/uploads/{uploadId}/complete', { params: { path: { uploadId } } });

/** Media through the public three-step upload, created at `at` on the server's clock. */
async function uploadMedia(org: TestOrganization, fileName: string, at: string): Promise<Schemas['Media']> {
  server.setNow(at);
  try {
    const bytes = png();
    const upload = await startUpload(org, fileName, bytes);
    expect((await fetch(upload.uploadUrl, { method: 'PUT', headers: upload.headers, body: bytes })).status).toBe(200);
    return dataOf(await complete(org, upload.uploadId));
  } finally {
    server.setNow(undefined);
  }
}

/** A post of the organization, on a channel of its own, that uses the media. */
async function postUsing(org: TestOrganization, status: PostStatus, mediaIds: string[]): Promise<string> {
  const channel = await createChannel(server.ctx.db, org.id, 'sandbox');
  const scheduledAt = status === 'draft' ? null : '2026-12-01T09:00:00.000Z';
  return insertPost(server.ctx.db, { organizationId: org.id, channelId: channel.id, status, scheduledAt, mediaIds });
}

const list = (org: TestOrganization, query: { limit?: number; cursor?: string } = {}) =>
  api(org).GET('/public/v1/media', { params: { query } });
const remove = (org: TestOrganization, id: string) =>
  api(org).DELETE('/public/v1/media/{id}', { params: { path: { id } } });
const idsOf = async (org: TestOrganization) => dataOf(await list(org)).data.map((media) => media.id);

describe('GET /public/v1/media', () => {
  it('pages through the organization’s media newest first with a cursor, and never shows another organization’s', async () => {
    const org = await createOrganization(server.ctx.db, 'Lister');
    const first = await uploadMedia(org, 'a.png', '2026-11-20T10:00:00.000Z');
    const second = await uploadMedia(org, 'b.png', '2026-11-20T11:00:00.000Z');
    // Two in the same millisecond: the id breaks the tie, so none is skipped or repeated.
    const third = await uploadMedia(org, 'c.png', '2026-11-20T12:00:00.000Z');
    const fourth = await uploadMedia(org, 'd.png', '2026-11-20T12:00:00.000Z');
    await uploadMedia(globex, 'theirs.png', '2026-11-20T13:00:00.000Z');

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: Schemas['MediaPage'] = dataOf(await list(org, cursor ? { limit: 3, cursor } : { limit: 3 }));
      seen.push(...page.data.map((media) => media.id));
      cursor = page.nextCursor;
      pages += 1;
    } while (cursor);

    const newestFirst = [third, fourth].sort((a, b) => (a.id < b.id ? 1 : -1)).map((media) => media.id);
    expect(seen).toEqual([...newestFirst, second.id, first.id]);
    expect(pages).toBe(2);

    const { data } = dataOf(await list(org));
    expect(data[3]).toEqual({
      id: first.id,
      fileName: 'a.png',
      contentType: 'image/png',
      kind: 'image',
      size: png().length,
      durationSec: null,
      pageCount: null,
      url: stringMatching(/\/media-files\/media\/.+\?expires=\d+&type=image%2Fpng&signature=/),
      urlExpiresAt: anyString(),
      createdAt: '2026-11-20T10:00:00.000Z',
    });
    const downloaded = await fetch(data[3]!.url);
    expect(Buffer.from(await downloaded.arrayBuffer()).equals(png())).toBe(true);
  });

  it('refuses a cursor it did not issue, and a limit out of range', async () => {
    const forged = [
      { c: '0000-01-01T00:00:00+01:00', i: 'med_x' },
      { c: '2026-11-21T16:05:44.902Z', i: 'med_\u0000' },
      { c: 1795600000, i: 'med_x' },
    ].map((key) => Buffer.from(JSON.stringify(key)).toString('base64url'));
    for (const cursor of [
      'not-a-cursor',
      Buffer.from('{"c":"yesterday","i":"med_x"}').toString('base64url'),
      ...forged,
    ]) {
      const error = refusalOf(await list(acme, { cursor }), 400, 'validation_failed');
      expect(error.details).toEqual([
        { path: 'query.cursor', message: 'is not a cursor issued by this API for this list and these filters' },
      ]);
    }
    refusalOf(await list(acme, { limit: 0 }), 400);
    refusalOf(await list(acme, { limit: 101 }), 400);
  });
});

describe('DELETE /public/v1/media/{id}', () => {
  it('deletes the media and its file (204)', async () => {
    const media = await uploadMedia(acme, 'gone.png', '2026-11-20T10:00:00.000Z');
    const file = path.join(server.ctx.config.dataDir, 'media', 'media', acme.id, media.id);
    expect(fs.existsSync(file)).toBe(true);
    await postUsing(acme, 'published', [media.id]); // published posts keep their content on the network
    await postUsing(acme, 'draft', [media.id]);

    dataOf(await remove(acme, media.id), 204);
    expect(fs.existsSync(file)).toBe(false);
    expect(await idsOf(acme)).not.toContain(media.id);
    refusalOf(await remove(acme, media.id), 404);
  });

  it('answers 404 for another organization’s media and leaves it alone', async () => {
    const theirs = await uploadMedia(globex, 'private.png', '2026-11-20T10:00:00.000Z');
    expect(refusalOf(await remove(acme, theirs.id), 404)).toMatchObject({
      code: 'not_found',
      message: `There is no media ${theirs.id} in this organization.`,
    });
    refusalOf(await remove(acme, 'med_unknown00000000000'), 404);
    expect(await idsOf(globex)).toContain(theirs.id);
  });

  it('refuses (409) while a scheduled or publishing post uses the media', async () => {
    const media = await uploadMedia(acme, 'busy.png', '2026-11-20T10:00:00.000Z');
    const other = await uploadMedia(acme, 'other.png', '2026-11-20T10:00:00.000Z');
    const scheduled = await postUsing(acme, 'scheduled', [other.id, media.id]);
    const publishing = await postUsing(acme, 'publishing', [media.id]);

    const error = refusalOf(await remove(acme, media.id), 409, 'conflict');
    expect(error.message).toBe(
      'The media is used by 2 scheduled or publishing posts; delete or edit those posts first.',
    );
    expect(error.details).toEqual(
      expect.arrayContaining([
        { path: 'id', message: `used by ${scheduled} (scheduled)` },
        { path: 'id', message: `used by ${publishing} (publishing)` },
      ]),
    );
    const { data } = dataOf(await list(acme));
    const kept = data.find((m) => m.id === media.id);
    expect((await fetch(kept!.url)).status).toBe(200);

    await server.ctx.db
      .updateTable('posts')
      .set({ status: 'published' })
      .where('id', 'in', [scheduled, publishing])
      .execute();
    dataOf(await remove(acme, media.id), 204);
  });

  it('answers 422 when completing an upload whose media was deleted since', async () => {
    const bytes = png();
    const created = await startUpload(acme, 'once.png', bytes);
    await fetch(created.uploadUrl, { method: 'PUT', headers: created.headers, body: bytes });
    const media = dataOf(await complete(acme, created.uploadId));
    dataOf(await remove(acme, media.id), 204);
    expect(refusalOf(await complete(acme, created.uploadId), 422).message).toContain(
      `completed as media ${media.id}, which has since been deleted`,
    );
  });
});
