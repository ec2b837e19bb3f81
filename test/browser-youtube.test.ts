import fs from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../src/accounts/api-keys.js';
import { launchChromium, skipBrowserTests, type ChromiumProfile } from './support/chromium.js';
import { startFakeGoogle, youtubeEnv, type FakeGoogle } from './support/fake-google.js';
import { mp4 } from './support/media-samples.js';
import { startTestServer, type TestServer } from './support/server.js';

const ARTIFACTS = new URL('../test-artifacts/', import.meta.url);
const CHUNK = 256 * 1024;

/**
 * A new user's whole way to a published video, in Chromium: sign up, connect YouTube in Settings →
 * Channels (the fake Google gives consent at once), schedule a video post through the API, see it
 * published with its watch URL; then Google's grant revoked, the post failing with
 * channel_needs_reconnect and the channel marked, reconnected, scheduled again, published.
 */
describe.skipIf(skipBrowserTests)('YouTube from sign-up to a published video, in Chromium', () => {
  let google: FakeGoogle;
  let server: TestServer;
  let profile: ChromiumProfile;
  let page: Page;
  let auth: Record<string, string>;

  beforeAll(async () => {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
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
    profile = await launchChromium();
    page = await profile.context.newPage();
  }, 120_000);

  afterAll(async () => {
    await profile?.close();
    await server?.close();
    await google?.close();
  });

  async function api(path: string, init: { method?: string; body?: unknown } = {}) {
    const response = await server.fetch(path, {
      method: init.method ?? 'GET',
      headers: { ...auth, ...(init.body ? { 'Content-Type': 'application/json' } : {}) },
      ...(init.body ? { body: JSON.stringify(init.body) } : {}),
    });
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  }

  async function untilSettled(id: string): Promise<Record<string, any>> {
    let post: Record<string, any> = {};
    await expect
      .poll(async () => (post = (await api(`/public/v1/posts/${id}`)).body).status, { timeout: 20_000, interval: 100 })
      .toMatch(/^(published|failed)$/);
    return post;
  }

  async function connect(button: string) {
    await page.goto(`${server.baseUrl}/settings/channels`);
    await page.getByRole('button', { name: button }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toMatch(/The account is connected/);
  }

  it('connects YouTube, and a scheduled video post is published with its watch URL', async () => {
    await page.goto(`${server.baseUrl}/signup`);
    await page.getByLabel('Your name').fill('Nora');
    await page.getByLabel('Email').fill('nora@videos.example');
    await page.getByLabel('Password').fill('a long and good password');
    await page.getByLabel('Organization name').fill('Nora Videos');
    await page.getByRole('button', { name: 'Create account' }).click();
    await expect.poll(() => new URL(page.url()).pathname).not.toBe('/signup');

    await connect('Connect YouTube');
    const row = page.locator('li.channel', { hasText: 'Nora on YouTube' });
    expect(await row.locator('.status').textContent()).toBe('Active');
    await page.screenshot({ path: new URL('channels-youtube.png', ARTIFACTS).pathname, fullPage: true });

    const organizationId = (
      await server.ctx.db
        .selectFrom('organizations')
        .select('id')
        .where('name', '=', 'Nora Videos')
        .executeTakeFirstOrThrow()
    ).id;
    auth = { Authorization: `Bearer ${(await createApiKey(server.ctx.db, organizationId, 'test')).secret}` };
    const channel = (await api('/public/v1/channels')).body.data.find(
      (c: { provider: string }) => c.provider === 'youtube',
    );
    const bytes = mp4(400 * 1024);
    const upload = (
      await api('/public/v1/media/uploads', {
        method: 'POST',
        body: { fileName: 'first.mp4', contentType: 'video/mp4', size: bytes.length },
      })
    ).body;
    expect((await fetch(upload.uploadUrl, { method: 'PUT', headers: upload.headers, body: bytes })).status).toBe(200);
    const media = (await api(`/public/v1/media/uploads/${upload.uploadId}/complete`, { method: 'POST' })).body;

    const created = await api('/public/v1/posts', {
      method: 'POST',
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
    });
    expect(created.status).toBe(201);
    const postId = created.body.data[0].id;
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
    expect(await page.getByRole('link', { name: post.releaseUrl }).count()).toBe(1);
  });

  it('marks the channel when Google’s grant is revoked, and publishes again once the user reconnects', async () => {
    google.revokeAll();
    const channel = (await api('/public/v1/channels')).body.data.find(
      (c: { provider: string }) => c.provider === 'youtube',
    );
    const media = (await api('/public/v1/media')).body.data[0];
    const created = await api('/public/v1/posts', {
      method: 'POST',
      body: {
        type: 'now',
        posts: [
          {
            channelId: channel.id,
            content: 'Second',
            mediaIds: [media.id],
            settings: { __type: 'youtube', title: 'Second video', privacyStatus: 'public', madeForKids: false },
          },
        ],
      },
    });
    const postId = created.body.data[0].id;
    const failed = await untilSettled(postId);
    expect(failed.status).toBe('failed');
    expect(failed.error.code).toBe('channel_needs_reconnect');

    await page.goto(`${server.baseUrl}/settings/channels`);
    const row = page.locator('li.channel', { hasText: 'Nora on YouTube' });
    expect(await row.locator('.status').textContent()).toBe('Needs reconnecting');
    await connect('Reconnect Nora on YouTube');
    expect(await row.locator('.status').textContent()).toBe('Active');

    await page.goto(`${server.baseUrl}/posts/${postId}`);
    await page.getByRole('button', { name: 'Schedule again' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toBe('The post is scheduled again.');
    const published = await untilSettled(postId);
    expect(published.status).toBe('published');
    expect(google.videos.filter((v) => v.title === 'Second video')).toHaveLength(1);
  });
});
