import type { Client } from 'openapi-fetch';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { paths } from '../generated/public-v1.js';
import { createApiKey } from '../src/accounts/api-keys.js';
import { dataOf, publicApi, type Schemas } from './support/api.js';
import {
  artifactPath,
  describeInChromium,
  openBrowser,
  PAGE_WAIT,
  signUp,
  type BrowserWithPage,
} from './support/chromium.js';
import { eventually } from './support/eventually.js';
import { startFakeGoogle, youtubeEnv, type FakeGoogle } from './support/fake-google.js';
import { mp4 } from './support/media-samples.js';
import { startTestServer, type TestServer } from './support/server.js';
import { TIMEOUTS } from './support/timeouts.js';

const CHUNK = 256 * 1024;

/**
 * A new user's whole way to a published video, in Chromium: sign up, connect YouTube in Settings →
 * Channels (the fake Google gives consent at once), schedule a video post through the API, see it
 * published with its watch URL; then Google's grant revoked, the post failing with
 * channel_needs_reconnect and the channel marked, reconnected, scheduled again, published.
 */
describeInChromium('YouTube from sign-up to a published video, in Chromium', () => {
  let google: FakeGoogle;
  let server: TestServer;
  let browser: BrowserWithPage;
  let page: Page;
  /** The Public API as the organization the user signed up with. */
  let api: Client<paths>;

  beforeAll(async () => {
    google = await startFakeGoogle({
      account: { channelId: 'UC_browser_0001', title: 'Nora on YouTube', handle: '@nora' },
    });
    server = await startTestServer({
      worker: true,
      env: {
        ...youtubeEnv(google, CHUNK),
        PUBLISH_RETRY_BASE_MS: '200',
      },
    });
    browser = await openBrowser();
    page = browser.page;
  }, 2 * TIMEOUTS.hook);

  afterAll(async () => {
    await server?.close();
    await google?.close();
    await browser?.close();
  });

  /**
   * The post once the publisher is done with it: `published` or `failed`. Publishing a video is
   * several requests to Google (the upload in chunks, then the video's status), hence twice the wait.
   */
  function untilSettled(id: string): Promise<Schemas['Post']> {
    return eventually(
      async () => {
        const post = await dataOf(api.GET('/public/v1/posts/{id}', { params: { path: { id } } }), 200);
        expect(post.status).toMatch(/^(published|failed)$/);
        return post;
      },
      { timeout: 2 * TIMEOUTS.eventually },
    );
  }

  async function youtubeChannel(): Promise<Schemas['Channel']> {
    const channels = await dataOf(api.GET('/public/v1/channels'), 200);
    return channels.data.find((channel) => channel.provider === 'youtube')!;
  }

  async function connect(button: string) {
    await page.goto(`${server.baseUrl}/settings/channels`);
    await page.getByRole('button', { name: button }).click();
    await expect.poll(() => page.getByRole('status').textContent(), PAGE_WAIT).toMatch(/The account is connected/);
  }

  it('connects YouTube, and a scheduled video post is published with its watch URL', async () => {
    await page.goto(`${server.baseUrl}/signup`);
    await signUp(page, { name: 'Nora', email: 'nora@videos.example', organization: 'Nora Videos' });

    await connect('Connect YouTube');
    const row = page.locator('li.channel', { hasText: 'Nora on YouTube' });
    expect(await row.locator('.status').textContent()).toBe('Active');
    await page.screenshot({ path: artifactPath('channels-youtube.png'), fullPage: true });

    // The composer says what is missing in people's words, everything at once, next to each field.
    await page.goto(`${server.baseUrl}/compose`);
    await page.locator('#content').fill('My first video');
    await page.getByRole('button', { name: 'Schedule', exact: true }).click();
    await expect
      .poll(() => page.locator('#channels-error').textContent(), PAGE_WAIT)
      .toBe('Choose at least one channel.');
    await page.getByRole('checkbox', { name: /Nora on YouTube/ }).check();
    await page.getByRole('button', { name: 'Schedule', exact: true }).click();
    const settings = page.locator('section.channel-settings');
    await expect
      .poll(() => settings.locator('.field-error').allTextContents(), PAGE_WAIT)
      .toEqual([
        'YouTube needs a title.',
        'YouTube needs a privacy setting.',
        'YouTube needs an answer to “Made for kids?”.',
      ]);
    expect(await page.locator('#media-error').textContent()).toMatch(/A YouTube post needs exactly one video/);
    expect(await page.locator('body').textContent()).not.toMatch(/must (have|match|NOT)/);

    const organizationId = (
      await server.ctx.db
        .selectFrom('organizations')
        .select('id')
        .where('name', '=', 'Nora Videos')
        .executeTakeFirstOrThrow()
    ).id;
    api = publicApi(server, {
      Authorization: `Bearer ${(await createApiKey(server.ctx.db, organizationId, 'test')).secret}`,
    });
    const channel = await youtubeChannel();
    const bytes = mp4(400 * 1024);
    const upload = await dataOf(
      api.POST('/public/v1/media/uploads', {
        body: { fileName: 'first.mp4', contentType: 'video/mp4', size: bytes.length },
      }),
      201,
    );
    expect((await fetch(upload.uploadUrl, { method: 'PUT', headers: upload.headers, body: bytes })).status).toBe(200);
    const media = await dataOf(
      api.POST('/public/v1/media/uploads/{uploadId}/complete', { params: { path: { uploadId: upload.uploadId } } }),
      200,
    );

    const created = await dataOf(
      api.POST('/public/v1/posts', {
        body: {
          type: 'schedule',
          date: new Date(Date.now() + 2000).toISOString(),
          posts: [
            {
              channelId: channel.id,
              content: 'My first video',
              mediaIds: [media.id],
              settings: { __type: 'youtube', title: 'First video', privacyStatus: 'public', madeForKids: false },
            },
          ],
        },
      }),
      201,
    );
    const postId = created.data[0]!.id;
    const post = await untilSettled(postId);
    expect(post.status).toBe('published');
    expect(post.releaseUrl).toBe(`https://www.youtube.com/watch?v=${google.videos.at(-1)!.id}`);
    expect(google.videos.at(-1)).toMatchObject({
      title: 'First video',
      bytes: bytes.length,
      channelId: 'UC_browser_0001',
    });

    await page.goto(`${server.baseUrl}/posts/${postId}`);
    expect(await page.locator('dd .status').textContent()).toBe('published');
    expect(await page.getByRole('link', { name: post.releaseUrl! }).count()).toBe(1);
  });

  it('marks the channel when Google’s grant is revoked, and publishes again once the user reconnects', async () => {
    google.revokeAll();
    const channel = await youtubeChannel();
    const [media] = (await dataOf(api.GET('/public/v1/media'), 200)).data;
    const created = await dataOf(
      api.POST('/public/v1/posts', {
        body: {
          type: 'now',
          posts: [
            {
              channelId: channel.id,
              content: 'Second',
              mediaIds: [media!.id],
              settings: { __type: 'youtube', title: 'Second video', privacyStatus: 'public', madeForKids: false },
            },
          ],
        },
      }),
      201,
    );
    const postId = created.data[0]!.id;
    const failed = await untilSettled(postId);
    expect(failed.status).toBe('failed');
    expect(failed.error?.code).toBe('channel_needs_reconnect');

    await page.goto(`${server.baseUrl}/settings/channels`);
    const row = page.locator('li.channel', { hasText: 'Nora on YouTube' });
    expect(await row.locator('.status').textContent()).toBe('Needs reconnecting');
    await connect('Reconnect Nora on YouTube');
    expect(await row.locator('.status').textContent()).toBe('Active');

    await page.goto(`${server.baseUrl}/posts/${postId}`);
    await page.getByRole('button', { name: 'Schedule again' }).click();
    await expect.poll(() => page.getByRole('status').textContent(), PAGE_WAIT).toBe('The post is scheduled again.');
    const published = await untilSettled(postId);
    expect(published.status).toBe('published');
    expect(google.videos.filter((v) => v.title === 'Second video')).toHaveLength(1);
  });
});
