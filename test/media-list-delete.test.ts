import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostStatus } from '../src/core/contract.js';
import { createChannel, createOrganization, insertPost, type TestOrganization } from './support/fixtures.js';
import { json } from './support/http.js';
import { png } from './support/media-samples.js';
import { startTestServer, type TestServer } from './support/server.js';

let server: TestServer;
let acme: TestOrganization;
let globex: TestOrganization;

beforeAll(async () => {
  server = await startTestServer();
  acme = await createOrganization(server.ctx.db, 'Acme');
  globex = await createOrganization(server.ctx.db, 'Globex');
});
afterAll(() => server?.close());

/** Media through the public three-step upload, created at `at` on the server's clock. */
async function uploadMedia(org: TestOrganization, fileName: string, at: string) {
  server.setNow(at);
  try {
    const bytes = png();
    const created = await server.fetch('/public/v1/media/uploads', {
      method: 'POST',
      headers: { ...org.auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ fileName, contentType: 'image/png', size: bytes.length }),
    });
    const upload = await json(created);
    expect((await fetch(upload.uploadUrl, { method: 'PUT', headers: upload.headers, body: bytes })).status).toBe(200);
    const completed = await server.fetch(`/public/v1/media/uploads/${upload.uploadId}/complete`, {
      method: 'POST',
      headers: org.auth,
    });
    expect(completed.status).toBe(200);
    return json(completed);
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

const list = (org: TestOrganization, query = '') => server.fetch(`/public/v1/media${query}`, { headers: org.auth });
const remove = (org: TestOrganization, id: string) =>
  server.fetch(`/public/v1/media/${id}`, { method: 'DELETE', headers: org.auth });

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
      const response = await list(org, `?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(response.status).toBe(200);
      const page = await json(response);
      seen.push(...page.data.map((media: { id: string }) => media.id));
      cursor = page.nextCursor;
      pages += 1;
    } while (cursor);

    const newestFirst = [third, fourth].sort((a, b) => (a.id < b.id ? 1 : -1)).map((media) => media.id);
    expect(seen).toEqual([...newestFirst, second.id, first.id]);
    expect(pages).toBe(2);

    const { data } = await json(await list(org));
    expect(data[3]).toEqual({
      id: first.id,
      fileName: 'a.png',
      contentType: 'image/png',
      kind: 'image',
      size: png().length,
      durationSec: null,
      url: expect.stringMatching(/\/media-files\/media\/.+\?expires=\d+&type=image%2Fpng&signature=/),
      urlExpiresAt: expect.any(String),
      createdAt: '2026-11-20T10:00:00.000Z',
    });
    const downloaded = await fetch(data[3].url);
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
      const response = await list(acme, `?cursor=${cursor}`);
      expect(response.status).toBe(400);
      const { error } = await json(response);
      expect(error.code).toBe('validation_failed');
      expect(error.details).toEqual([
        { path: 'query.cursor', message: 'is not a cursor issued by this API for this list and these filters' },
      ]);
    }
    expect((await list(acme, '?limit=0')).status).toBe(400);
    expect((await list(acme, '?limit=101')).status).toBe(400);
  });
});

describe('DELETE /public/v1/media/{id}', () => {
  it('deletes the media and its file (204)', async () => {
    const media = await uploadMedia(acme, 'gone.png', '2026-11-20T10:00:00.000Z');
    const file = path.join(server.ctx.config.dataDir, 'media', 'media', acme.id, media.id);
    expect(fs.existsSync(file)).toBe(true);
    await postUsing(acme, 'published', [media.id]); // published posts keep their content on the network
    await postUsing(acme, 'draft', [media.id]);

    const response = await remove(acme, media.id);
    expect(response.status).toBe(204);
    expect(fs.existsSync(file)).toBe(false);
    expect((await json(await list(acme))).data.map((m: { id: string }) => m.id)).not.toContain(media.id);
    expect((await remove(acme, media.id)).status).toBe(404);
  });

  it('answers 404 for another organization’s media and leaves it alone', async () => {
    const theirs = await uploadMedia(globex, 'private.png', '2026-11-20T10:00:00.000Z');
    const response = await remove(acme, theirs.id);
    expect(response.status).toBe(404);
    expect((await json(response)).error).toMatchObject({
      code: 'not_found',
      message: `There is no media ${theirs.id} in this organization.`,
    });
    expect((await remove(acme, 'med_unknown00000000000')).status).toBe(404);
    expect((await json(await list(globex))).data.map((m: { id: string }) => m.id)).toContain(theirs.id);
  });

  it('refuses (409) while a scheduled or publishing post uses the media', async () => {
    const media = await uploadMedia(acme, 'busy.png', '2026-11-20T10:00:00.000Z');
    const other = await uploadMedia(acme, 'other.png', '2026-11-20T10:00:00.000Z');
    const scheduled = await postUsing(acme, 'scheduled', [other.id, media.id]);
    const publishing = await postUsing(acme, 'publishing', [media.id]);

    const response = await remove(acme, media.id);
    expect(response.status).toBe(409);
    const { error } = await json(response);
    expect(error.code).toBe('conflict');
    expect(error.message).toBe(
      'The media is used by 2 scheduled or publishing posts; delete or edit those posts first.',
    );
    expect(error.details).toEqual(
      expect.arrayContaining([
        { path: 'id', message: `used by ${scheduled} (scheduled)` },
        { path: 'id', message: `used by ${publishing} (publishing)` },
      ]),
    );
    const { data } = await json(await list(acme));
    const kept = data.find((m: { id: string }) => m.id === media.id);
    expect((await fetch(kept.url)).status).toBe(200);

    await server.ctx.db
      .updateTable('posts')
      .set({ status: 'published' })
      .where('id', 'in', [scheduled, publishing])
      .execute();
    expect((await remove(acme, media.id)).status).toBe(204);
  });

  it('answers 422 when completing an upload whose media was deleted since', async () => {
    const bytes = png();
    const created = await json(
      await server.fetch('/public/v1/media/uploads', {
        method: 'POST',
        headers: { ...acme.auth, 'Content-Type': 'application/json' },
        body: JSON.stringify({ fileName: 'once.png', contentType: 'image/png', size: bytes.length }),
      }),
    );
    await fetch(created.uploadUrl, { method: 'PUT', headers: created.headers, body: bytes });
    const complete = () =>
      server.fetch(`/public/v1/media/uploads/${created.uploadId}/complete`, { method: 'POST', headers: acme.auth });
    const media = await json(await complete());
    expect((await remove(acme, media.id)).status).toBe(204);
    const response = await complete();
    expect(response.status).toBe(422);
    expect((await json(response)).error.message).toContain(
      `completed as media ${media.id}, which has since been deleted`,
    );
  });
});
