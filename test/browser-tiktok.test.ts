import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  artifactPath,
  describeInChromium,
  openBrowser,
  PAGE_WAIT,
  signUp,
  type BrowserWithPage,
} from './support/chromium.js';
import { startFakeTikTok, tiktokEnv, type FakeTikTok } from './support/fake-tiktok.js';
import { startTestServer, type TestServer } from './support/server.js';
import { TIMEOUTS } from './support/timeouts.js';

/**
 * Connecting TikTok the way a user does, in Chromium: Connect TikTok in Settings → Channels, TikTok's
 * consent page (the fake gives consent at once, or the user cancels), and back to the page with the
 * account's name, handle and avatar; cancelling says so and connects nothing.
 */
describeInChromium('TikTok in Settings → Channels, in Chromium', () => {
  let tiktok: FakeTikTok;
  let server: TestServer;
  let browser: BrowserWithPage;
  let page: Page;

  beforeAll(async () => {
    tiktok = await startFakeTikTok({ account: { displayName: 'Nora on TikTok', username: 'nora.makes' } });
    server = await startTestServer({ env: tiktokEnv(tiktok) });
    browser = await openBrowser();
    page = browser.page;
  }, 2 * TIMEOUTS.hook);

  afterAll(async () => {
    await server?.close();
    await tiktok?.close();
    await browser?.close();
  });

  it('connects a TikTok account, and a cancelled consent connects nothing', async () => {
    await page.goto(`${server.baseUrl}/signup`);
    await signUp(page, { name: 'Nora', email: 'nora@clips.example', organization: 'Nora Clips' });

    tiktok.deny();
    await page.goto(`${server.baseUrl}/settings/channels`);
    await page.getByRole('button', { name: 'Connect TikTok' }).click();
    await expect.poll(() => page.getByRole('alert').textContent(), PAGE_WAIT).toMatch(/TikTok/);
    expect(await page.locator('li.channel', { hasText: 'Nora on TikTok' }).count()).toBe(0);

    await page.getByRole('button', { name: 'Connect TikTok' }).click();
    await expect.poll(() => page.getByRole('status').textContent(), PAGE_WAIT).toMatch(/The account is connected/);
    const row = page.locator('li.channel', { hasText: 'Nora on TikTok' });
    expect(await row.locator('.status').textContent()).toBe('Active');
    expect(await row.textContent()).toContain('nora.makes');
    expect(await row.locator('img').getAttribute('src')).toBe(tiktok.account.avatarUrl);
    await page.screenshot({ path: artifactPath('channels-tiktok.png'), fullPage: true });

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
