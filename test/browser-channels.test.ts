import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApiKey } from '../src/accounts/api-keys.js';
import { dataOf, publicApi } from './support/api.js';
import {
  artifactPath,
  describeInChromium,
  openBrowser,
  PAGE_WAIT,
  signUp,
  untilAt,
  type BrowserWithPage,
} from './support/chromium.js';
import { eventually } from './support/eventually.js';
import { startFakeNetwork, type FakeNetwork } from './support/fake-network.js';
import { startTestServer, type TestServer } from './support/server.js';
import { TIMEOUTS } from './support/timeouts.js';

describeInChromium('Settings → Channels in a real browser (Chromium)', () => {
  let network: FakeNetwork;
  let server: TestServer;
  let browser: BrowserWithPage;
  let page: Page;

  beforeAll(async () => {
    network = await startFakeNetwork();
    server = await startTestServer({ worker: true, env: { SANDBOX_NETWORK_URL: network.url } });
    browser = await openBrowser();
    page = browser.page;
  }, 2 * TIMEOUTS.hook);

  afterAll(async () => {
    await server?.close();
    await network?.close();
    await browser?.close();
  });

  const channelRow = (name: string) => page.locator('li.channel', { hasText: name });

  it('gives a new organization a sandbox channel that publishes, with nothing else to set up', async () => {
    await page.goto(`${server.baseUrl}/signup`);
    await signUp(page, { name: 'Nora', email: 'nora@studio.example', organization: 'Nora Studio' });

    // A new user lands on the calendar; Settings opens on the channels.
    await untilAt(page, '/calendar');
    await page.getByRole('link', { name: 'Settings' }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent(), PAGE_WAIT).toBe('Channels');
    expect(await channelRow('Sandbox').locator('.status').textContent()).toBe('Active');
    // No operator app for the real networks in this test: said so, not offered (YouTube, TikTok, X,
    // Facebook, Instagram, Threads, LinkedIn, Pinterest).
    // Mastodon and Bluesky need none: Mastodon asks for the user's instance, Bluesky signs in with an
    // app password on this server's page.
    expect(await page.getByText('Not configured by the operator of this server.').count()).toBe(8);
    expect(await page.getByLabel('Your Mastodon instance').count()).toBe(1);
    expect(await page.getByRole('button', { name: 'Connect Bluesky' }).isEnabled()).toBe(true);

    // The organization's first channel publishes a post at once.
    const organizationId = (
      await server.ctx.db
        .selectFrom('organizations')
        .select('id')
        .where('name', '=', 'Nora Studio')
        .executeTakeFirstOrThrow()
    ).id;
    const channel = await server.ctx.db
      .selectFrom('channels')
      .select(['id', 'provider'])
      .where('organization_id', '=', organizationId)
      .executeTakeFirstOrThrow();
    expect(channel.provider).toBe('sandbox');
    const { secret } = await createApiKey(server.ctx.db, organizationId, 'test');
    const api = publicApi(server, { Authorization: `Bearer ${secret}` });
    const created = await dataOf(
      api.POST('/public/v1/posts', { body: { type: 'now', content: 'First post', channelIds: [channel.id] } }),
      201,
    );
    const postId = created.data[0]!.id;
    await eventually(async () => {
      const post = await dataOf(api.GET('/public/v1/posts/{id}', { params: { path: { id: postId } } }), 200);
      expect(post.status).toBe('published');
    });
    await page.goto(`${server.baseUrl}/posts`);
    expect(await page.locator(`tr[data-post-id="${postId}"] .status`).textContent()).toBe('published');
    expect(network.publicationsOf(postId)).toBe(1);
  });

  it('adds a sandbox channel, disables and enables it, and removes it after saying what happens to its posts', async () => {
    await page.goto(`${server.baseUrl}/settings/channels`);
    await page.getByLabel(/Sandbox channel name/).fill('Second sandbox');
    await page.getByRole('button', { name: 'Add sandbox channel' }).click();
    await expect.poll(() => page.getByRole('status').textContent(), PAGE_WAIT).toBe('The sandbox channel is added.');
    expect(await channelRow('Second sandbox').locator('.status').textContent()).toBe('Active');

    await page.getByRole('button', { name: 'Disable Second sandbox' }).click();
    await expect.poll(() => channelRow('Second sandbox').locator('.status').textContent(), PAGE_WAIT).toBe('Disabled');
    await page.getByRole('button', { name: 'Enable Second sandbox' }).click();
    await expect.poll(() => channelRow('Second sandbox').locator('.status').textContent(), PAGE_WAIT).toBe('Active');

    // A network the operator did not configure: its button is disabled and looks it.
    const unconfigured = page.getByRole('button', { name: 'Connect YouTube' });
    expect(await unconfigured.isDisabled()).toBe(true);
    // Compiled without DOM types: the expression runs in the page.
    const look = await page.evaluate(`(() => {
      const button = [...document.querySelectorAll('button')].find((b) => b.textContent.trim() === 'Connect YouTube');
      const style = getComputedStyle(button);
      return [style.cursor, style.borderStyle];
    })()`);
    expect(look).toEqual(['not-allowed', 'dashed']);

    expect(await page.getByText('Removing a channel turns its scheduled and failed posts into drafts').count()).toBe(1);
    await page.screenshot({ path: artifactPath('channels.png'), fullPage: true });
    await page.getByRole('button', { name: 'Remove Second sandbox' }).click();
    // Asked first: Cancel keeps it, the page's own button removes it.
    await expect
      .poll(() => page.getByRole('heading', { level: 1 }).textContent(), PAGE_WAIT)
      .toBe('Remove Second sandbox?');
    await page.getByRole('link', { name: 'Cancel' }).click();
    await expect.poll(() => channelRow('Second sandbox').count(), PAGE_WAIT).toBe(1);
    await page.getByRole('button', { name: 'Remove Second sandbox' }).click();
    await page.getByRole('button', { name: 'Remove the channel' }).click();
    await expect.poll(() => page.getByRole('status').textContent(), PAGE_WAIT).toContain('The channel is removed');
    expect(await channelRow('Second sandbox').count()).toBe(0);
    expect(await channelRow('Sandbox').count()).toBe(1);
  });

  it('refuses an action on another organization’s channel', async () => {
    const other = await server.ctx.db
      .insertInto('organizations')
      .values({ id: 'org_other00000000000000', name: 'Other' })
      .returning('id')
      .executeTakeFirstOrThrow();
    const theirs = await server.ctx.db
      .insertInto('channels')
      .values({
        id: 'ch_theirs0000000000000',
        organization_id: other.id,
        provider: 'sandbox',
        name: 'Theirs',
        username: null,
        picture: null,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    await page.goto(`${server.baseUrl}/settings/channels`);
    const token = await page.locator('input[name="csrf_token"]').first().inputValue();
    const response = await page.request.post(`${server.baseUrl}/settings/channels/${theirs.id}/remove`, {
      form: { csrf_token: token },
      maxRedirects: 0,
    });
    expect(response.status()).toBe(404);
    const still = await server.ctx.db
      .selectFrom('channels')
      .select('status')
      .where('id', '=', theirs.id)
      .executeTakeFirstOrThrow();
    expect(still.status).toBe('active');
  });
});
