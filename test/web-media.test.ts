import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicApi } from './support/api.js';
import { BrowserSession, decodeEntities, inputValue } from './support/browser-session.js';
import { createChannel, createOrganization, type TestOrganization } from './support/fixtures.js';
import { mp4, png } from './support/media-samples.js';
import { POSTS_TEST_ENV } from './support/posts.js';
import { startTestServer, type TestServer } from './support/server.js';
import { startUpload } from './support/uploads.js';

let server: TestServer;
let org: TestOrganization;
let browser: BrowserSession;

beforeAll(async () => {
  server = await startTestServer({ env: POSTS_TEST_ENV });
  org = await createOrganization(server.ctx.db, 'Media Studio');
  browser = new BrowserSession(server);
  await browser.logIn(org.email, org.password);
});
afterAll(() => server?.close());

async function upload(owner: TestOrganization, fileName: string, contentType: string, bytes: Buffer): Promise<string> {
  const started = await startUpload(server, owner, fileName, contentType, bytes.length);
  expect((await fetch(started.uploadUrl, { method: 'PUT', headers: started.headers, body: bytes })).status).toBe(200);
  const { data } = await publicApi(server, owner.auth).POST('/public/v1/media/uploads/{uploadId}/complete', {
    params: { path: { uploadId: started.uploadId } },
  });
  return data!.id;
}

function card(html: string, id: string): string {
  const match = new RegExp(`<li class="media-card" data-media-id="${id}">([\\s\\S]*?)</li>`).exec(html);
  if (!match) throw new Error(`no card for ${id}`);
  return decodeEntities(match[1]!);
}

describe('the media library', () => {
  it('shows the organization’s media with its type and size, newest first, and nobody else’s', async () => {
    const image = await upload(org, 'banner.png', 'image/png', png(40, 20, [0, 90, 200, 255]));
    const video = await upload(org, 'clip.mp4', 'video/mp4', mp4(300 * 1024));
    const stranger = await createOrganization(server.ctx.db, 'Stranger');
    await upload(stranger, 'secret.png', 'image/png', png(4));

    const html = await (await browser.get('/media')).text();
    expect(card(html, image)).toMatch(/banner\.png[\s\S]*image · image\/png · \d+ B/);
    expect(card(html, image)).toMatch(/<img src="http:\/\/127\.0\.0\.1:\d+\/[^"]+" alt=""/);
    expect(card(html, video)).toMatch(/clip\.mp4[\s\S]*video · video\/mp4 · 300\.0 KB/);
    expect(html.indexOf(video)).toBeLessThan(html.indexOf(image));
    expect(html).not.toContain('secret.png');
  });

  it('refuses to delete media a scheduled post uses, saying which posts, and deletes it once they are gone', async () => {
    const image = await upload(org, 'in-use.png', 'image/png', png(8));
    const channel = (await createChannel(server.ctx.db, org.id, 'sandbox')).id;
    const created = await publicApi(server, org.auth).POST('/public/v1/posts', {
      body: {
        type: 'schedule',
        date: '2030-01-01T09:00:00.000Z',
        channelIds: [channel],
        content: 'Uses it',
        mediaIds: [image],
      },
    });
    const post = created.data!.data[0]!;

    const token = inputValue(await (await browser.get('/media')).text(), 'csrf_token')!;
    const refused = await browser.postForm(`/media/${image}/delete`, { csrf_token: token, confirm: 'yes' });
    expect(refused.status).toBe(409);
    const html = decodeEntities(await refused.text());
    expect(html).toContain('The media was not deleted');
    expect(html).toContain('The media is used by 1 scheduled or publishing post; delete or edit those posts first.');
    // Each post that uses it is linked, to open it and change it.
    expect(html).toContain(`<li>Used by <a href="/posts/${post.id}">a scheduled post</a></li>`);
    expect(card(html, image)).toContain('in-use.png');

    const removed = await publicApi(server, org.auth).DELETE('/public/v1/posts/{id}', {
      params: { path: { id: post.id } },
    });
    expect(removed.response.status).toBe(204);
    // The button asks first, on a page of its own (no script needed); only its confirmation deletes.
    const asked = await browser.postForm(`/media/${image}/delete`, { csrf_token: token });
    expect(asked.status).toBe(200);
    const question = await asked.text();
    expect(question).toContain('<h1>Delete in-use.png?</h1>');
    expect(question).toMatch(/<input type="hidden" name="confirm" value="yes">/);
    expect(card(await (await browser.get('/media')).text(), image)).toContain('in-use.png');
    const deleted = await browser.postForm(`/media/${image}/delete`, { csrf_token: token, confirm: 'yes' });
    expect(deleted.status).toBe(303);
    expect(deleted.headers.get('location')).toBe('/media?deleted=1');
    const after = await (await browser.get('/media?deleted=1')).text();
    expect(after).toContain('The media is deleted.');
    expect(after).not.toContain(image);
  });

  it('answers 404 for another organization’s media, and 403 without the form’s token', async () => {
    const stranger = await createOrganization(server.ctx.db, 'Other stranger');
    const theirs = await upload(stranger, 'theirs.png', 'image/png', png(4));
    const token = inputValue(await (await browser.get('/media')).text(), 'csrf_token')!;
    expect((await browser.postForm(`/media/${theirs}/delete`, { csrf_token: token })).status).toBe(404);
    const mine = await upload(org, 'mine.png', 'image/png', png(4));
    expect((await browser.postForm(`/media/${mine}/delete`, {})).status).toBe(403);
    const { data: strangersMedia } = await publicApi(server, stranger.auth).GET('/public/v1/media');
    expect(strangersMedia?.data.map((media) => media.id)).toContain(theirs);
  });
});
