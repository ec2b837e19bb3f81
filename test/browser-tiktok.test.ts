import fs from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, skipBrowserTests, type ChromiumProfile } from './support/chromium.js';
import { startFakeTikTok, tiktokEnv, type FakeTikTok } from './support/fake-tiktok.js';
import { startTestServer, type TestServer } from './support/server.js';

const ARTIFACTS = new URL('../test-artifacts/', import.meta.url);

/**
 * Connecting TikTok the way a user does, in Chromium: Connect TikTok in Settings → Channels, TikTok's
 * consent page (the fake gives consent at once, or the user cancels), and back to the page with the
 * account's name, handle and avatar; cancelling says so and connects nothing.
 */
describe.skipIf(skipBrowserTests)('TikTok in Settings → Channels, in Chromium', () => {
  let tiktok: FakeTikTok;
  let server: TestServer;
  let profile: ChromiumProfile;
  let page: Page;

  beforeAll(async () => {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    tiktok = await startFakeTikTok({ account: { displayName: 'Nora on TikTok', username: 'nora.makes' } });
    server = await startTestServer({ env: tiktokEnv(tiktok) });
    profile = await launchChromium();
    page = await profile.context.newPage();
  }, 120_000);

  afterAll(async () => {
    await profile?.close();
    await server?.close();
    await tiktok?.close();
  });

  it('connects a TikTok account, and a cancelled consent connects nothing', async () => {
    await page.goto(`${server.baseUrl}/signup`);
    await page.getByLabel('Your name').fill('Nora');
    await page.getByLabel('Email').fill('nora@clips.example');
    await page.getByLabel('Password').fill('a long and good password');
    await page.getByLabel('Organization name').fill('Nora Clips');
    await page.getByRole('button', { name: 'Create account' }).click();
    await expect.poll(() => new URL(page.url()).pathname).not.toBe('/signup');

    tiktok.deny();
    await page.goto(`${server.baseUrl}/settings/channels`);
    await page.getByRole('button', { name: 'Connect TikTok' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/TikTok/);
    expect(await page.locator('li.channel', { hasText: 'Nora on TikTok' }).count()).toBe(0);

    await page.getByRole('button', { name: 'Connect TikTok' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toMatch(/The account is connected/);
    const row = page.locator('li.channel', { hasText: 'Nora on TikTok' });
    expect(await row.locator('.status').textContent()).toBe('Active');
    expect(await row.textContent()).toContain('nora.makes');
    expect(await row.locator('img').getAttribute('src')).toBe(tiktok.account.avatarUrl);
    await page.screenshot({ path: new URL('channels-tiktok.png', ARTIFACTS).pathname, fullPage: true });

    // The consent page was asked for what the service needs, with state, and without PKCE (TikTok's web flow).
    const consent = new URL(
      tiktok.url + tiktok.requests.filter((r) => r.path.startsWith('/v2/auth/authorize/')).at(-1)!.path,
    );
    expect(consent.searchParams.get('scope')).toBe(
      'user.info.basic,user.info.stats,video.list,video.publish,video.upload',
    );
    expect(consent.searchParams.get('state')).toMatch(/.{20,}/);
    expect(consent.searchParams.get('redirect_uri')).toBe(`${server.baseUrl}/channels/callback/tiktok`);
  });
});
