import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { PostStatus } from '../src/core/contract.js';
import { dataOf, publicApi, type RequestBody } from './support/api.js';
import {
  artifactPath,
  describeInChromium,
  openBrowser,
  pageWidth,
  PAGE_WAIT,
  pathOf,
  untilAt,
  type BrowserWithPage,
} from './support/chromium.js';
import { eventually } from './support/eventually.js';
import { startFakeNetwork, type FakeNetwork } from './support/fake-network.js';
import { createChannel, createOrganization, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';
import { TIMEOUTS } from './support/timeouts.js';

describeInChromium('the Posts pages in a real browser (Chromium)', () => {
  let network: FakeNetwork;
  let server: TestServer;
  let org: TestOrganization;
  let other: TestOrganization;
  let browser: BrowserWithPage;
  let page: Page;
  const ids: Record<'failed' | 'published' | 'scheduled', string> = { failed: '', published: '', scheduled: '' };
  /** When the scheduled post is due. */
  let tomorrow: string;

  async function create(organization: TestOrganization, body: RequestBody<'createPost'>): Promise<string> {
    const created = await dataOf(publicApi(server, organization.auth).POST('/public/v1/posts', { body }), 201);
    return created.data[0]!.id;
  }

  async function statusOf(id: string): Promise<string> {
    const api = publicApi(server, org.auth);
    return (await dataOf(api.GET('/public/v1/posts/{id}', { params: { path: { id } } }), 200)).status;
  }

  async function until(id: string, status: PostStatus): Promise<void> {
    await eventually(async () => expect(await statusOf(id)).toBe(status));
  }

  beforeAll(async () => {
    network = await startFakeNetwork();
    server = await startTestServer({
      worker: true,
      env: { SANDBOX_NETWORK_URL: network.url, PUBLISH_RETRY_BASE_MS: '200' },
    });
    org = await createOrganization(server.ctx.db, 'Posts Studio');
    other = await createOrganization(server.ctx.db, 'Someone else');
    const channel = (await createChannel(server.ctx.db, org.id, 'sandbox', 'Studio sandbox')).id;

    // The network refuses the first publication, takes the second; the third is due tomorrow.
    network.failNext(1, 422, { error: 'rejected', message: 'This channel does not take links.' });
    ids.failed = await create(org, { type: 'now', channelIds: [channel], content: 'Refused the first time' });
    await until(ids.failed, 'failed');
    ids.published = await create(org, { type: 'now', channelIds: [channel], content: 'Goes out at once' });
    await until(ids.published, 'published');
    tomorrow = new Date(Date.now() + 86_400_000).toISOString();
    ids.scheduled = await create(org, {
      type: 'schedule',
      date: tomorrow,
      channelIds: [channel],
      content: 'Due tomorrow',
    });

    browser = await openBrowser();
    page = browser.page;
  }, 2 * TIMEOUTS.hook);

  afterAll(async () => {
    await server?.close();
    await network?.close();
    await browser?.close();
  });

  it('asks a visitor who is not signed in to log in, and comes back to the posts after', async () => {
    await page.goto(`${server.baseUrl}/posts`);
    expect(pathOf(page)).toBe('/login');
    await page.getByLabel('Email').fill(org.email);
    await page.getByLabel('Password').fill(org.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await untilAt(page, '/posts');
  });

  it('lists the organization’s posts with their channel, time, status and error, and filters them by status', async () => {
    await page.goto(`${server.baseUrl}/posts`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Posts');
    expect(await page.getByRole('link', { name: 'Posts' }).getAttribute('aria-current')).toBe('page');
    const row = (id: string) => page.locator(`tr[data-post-id="${id}"]`);
    expect(await page.locator('tbody tr').count()).toBe(3);
    expect(await row(ids.failed).locator('.status').textContent()).toBe('failed');
    expect(await row(ids.failed).locator('.post-error').textContent()).toContain('rejected_by_network');
    expect(await row(ids.failed).locator('.post-error').textContent()).toContain('This channel does not take links.');
    expect(await row(ids.failed).getByRole('button', { name: 'Schedule again' }).count()).toBe(1);
    expect(await row(ids.published).locator('.status').textContent()).toBe('published');
    expect(await row(ids.published).textContent()).toContain('Studio sandbox');
    expect(await row(ids.published).getByRole('button', { name: 'Schedule again' }).count()).toBe(0);
    expect(await row(ids.scheduled).textContent()).toMatch(/due \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC/);
    // In the reader's zone once it is known: Kolkata is UTC+5:30.
    await page.goto(`${server.baseUrl}/posts?tz=Asia/Kolkata`);
    const due = new Date(Date.parse(tomorrow) + 330 * 60_000).toISOString().slice(0, 16).replace('T', ' ');
    expect(await row(ids.scheduled).textContent()).toContain(`due ${due} GMT+5:30`);
    await page.goto(`${server.baseUrl}/posts?tz=UTC`);
    await page.screenshot({ path: artifactPath('posts.png'), fullPage: true });

    await page.getByLabel('Status').selectOption('failed');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL((url) => url.searchParams.get('status') === 'failed');
    expect(await page.locator('tbody tr').count()).toBe(1);
    expect(await row(ids.failed).count()).toBe(1);

    // Tomorrow's date range holds only the post due tomorrow.
    const day = tomorrow.slice(0, 10);
    await page.goto(`${server.baseUrl}/posts?from=${day}&to=${day}`);
    expect(await page.locator('tbody tr').count()).toBe(1);
    expect(await row(ids.scheduled).count()).toBe(1);
    // A filter that is not one is refused, not ignored.
    const refused = await page.goto(`${server.baseUrl}/posts?status=lost`);
    expect(refused?.status()).toBe(400);

    // On a phone's screen the list does not scroll sideways.
    const desktop = page.viewportSize()!;
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await page.goto(`${server.baseUrl}/posts`);
      const { scrollWidth, wider } = await pageWidth(page);
      expect(scrollWidth, `wider than 390 px: ${wider.join(', ')}`).toBeLessThanOrEqual(390);
    } finally {
      await page.setViewportSize(desktop);
    }
  });

  it('shows a failed post’s history, and Schedule again publishes it', async () => {
    await page.goto(`${server.baseUrl}/posts`);
    await page.locator(`tr[data-post-id="${ids.failed}"] a`).click();
    await untilAt(page, `/posts/${ids.failed}`);
    const history = async () =>
      Promise.all((await page.locator('.history li').all()).map((item) => item.getAttribute('data-event-type')));
    expect(await history()).toEqual(['created', 'scheduled', 'publishing', 'failed']);
    expect(await page.locator('.history li[data-event-type="failed"]').textContent()).toContain(
      'This channel does not take links.',
    );

    await page.getByRole('button', { name: 'Schedule again' }).click();
    await expect.poll(() => page.getByRole('status').textContent(), PAGE_WAIT).toBe('The post is scheduled again.');
    await until(ids.failed, 'published');
    await page.reload();
    expect(await page.locator('dd .status').textContent()).toBe('published');
    expect(await history()).toEqual([
      'created',
      'scheduled',
      'publishing',
      'failed',
      'scheduled',
      'publishing',
      'published',
    ]);
    expect(await page.getByRole('button', { name: 'Schedule again' }).count()).toBe(0);
    expect(network.publicationsOf(ids.failed)).toBe(1);
    await page.screenshot({ path: artifactPath('post-history.png'), fullPage: true });
  });

  it('refuses Schedule again for a post that has not failed, and shows why', async () => {
    const response = await page.request.post(`${server.baseUrl}/posts/${ids.published}/schedule-again`, {
      form: { csrf_token: await csrfToken(page) },
      maxRedirects: 0,
    });
    expect(response.status()).toBe(409);
    expect(await response.text()).toContain('could not be scheduled again');
    expect(await statusOf(ids.published)).toBe('published');
  });

  it('answers 404 for a post of another organization', async () => {
    const theirs = await create(other, {
      type: 'draft',
      channelIds: [(await createChannel(server.ctx.db, other.id, 'sandbox')).id],
      content: 'Theirs',
    });
    const response = await page.goto(`${server.baseUrl}/posts/${theirs}`);
    expect(response?.status()).toBe(404);
    expect(await page.content()).not.toContain('Theirs');
  });
});

async function csrfToken(page: Page): Promise<string> {
  await page.goto(new URL('/posts', page.url()).href);
  return await page.locator('input[name="csrf_token"]').first().inputValue();
}
