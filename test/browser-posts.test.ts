import fs from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostStatus } from '../src/core/contract.js';
import { launchChromium, skipBrowserTests, type ChromiumProfile } from './support/chromium.js';
import { startFakeNetwork, type FakeNetwork } from './support/fake-network.js';
import { createChannel, createOrganization, type TestOrganization } from './support/fixtures.js';
import { json } from './support/http.js';
import { send } from './support/posts.js';
import { startTestServer, type TestServer } from './support/server.js';

const ARTIFACTS = new URL('../test-artifacts/', import.meta.url);

describe.skipIf(skipBrowserTests)('the Posts pages in a real browser (Chromium)', () => {
  let network: FakeNetwork;
  let server: TestServer;
  let org: TestOrganization;
  let other: TestOrganization;
  let profile: ChromiumProfile;
  let page: Page;
  const ids: Record<'failed' | 'published' | 'scheduled', string> = { failed: '', published: '', scheduled: '' };

  async function create(body: object): Promise<string> {
    const response = await send(server, org.auth, 'POST', '/public/v1/posts', body);
    const answer = await json(response);
    expect(response.status, JSON.stringify(answer)).toBe(201);
    return answer.data[0].id;
  }

  async function statusOf(id: string): Promise<PostStatus> {
    return (await json(await send(server, org.auth, 'GET', `/public/v1/posts/${id}`))).status;
  }

  async function until(id: string, status: PostStatus): Promise<void> {
    const deadline = Date.now() + 15_000;
    while ((await statusOf(id)) !== status) {
      if (Date.now() > deadline) throw new Error(`${id} is not ${status} after 15 s`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  beforeAll(async () => {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
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
    ids.failed = await create({ type: 'now', channelIds: [channel], content: 'Refused the first time' });
    await until(ids.failed, 'failed');
    ids.published = await create({ type: 'now', channelIds: [channel], content: 'Goes out at once' });
    await until(ids.published, 'published');
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString();
    ids.scheduled = await create({ type: 'schedule', date: tomorrow, channelIds: [channel], content: 'Due tomorrow' });

    profile = await launchChromium();
    page = await profile.context.newPage();
  }, 120_000);

  afterAll(async () => {
    await profile?.close();
    await server?.close();
    await network?.close();
  });

  it('asks a visitor who is not signed in to log in, and comes back to the posts after', async () => {
    await page.goto(`${server.baseUrl}/posts`);
    expect(new URL(page.url()).pathname).toBe('/login');
    await page.getByLabel('Email').fill(org.email);
    await page.getByLabel('Password').fill(org.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await expect.poll(() => new URL(page.url()).pathname).toBe('/posts');
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
    await page.screenshot({ path: new URL('posts.png', ARTIFACTS).pathname, fullPage: true });

    await page.getByLabel('Status').selectOption('failed');
    await page.getByRole('button', { name: 'Show' }).click();
    await expect.poll(() => new URL(page.url()).searchParams.get('status')).toBe('failed');
    expect(await page.locator('tbody tr').count()).toBe(1);
    expect(await row(ids.failed).count()).toBe(1);

    // Tomorrow's date range holds only the post due tomorrow.
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    await page.goto(`${server.baseUrl}/posts?from=${tomorrow}&to=${tomorrow}`);
    expect(await page.locator('tbody tr').count()).toBe(1);
    expect(await row(ids.scheduled).count()).toBe(1);
    // A filter that is not one is refused, not ignored.
    const refused = await page.goto(`${server.baseUrl}/posts?status=lost`);
    expect(refused?.status()).toBe(400);
  });

  it('shows a failed post’s history, and Schedule again publishes it', async () => {
    await page.goto(`${server.baseUrl}/posts`);
    await page.locator(`tr[data-post-id="${ids.failed}"] a`).click();
    await expect.poll(() => new URL(page.url()).pathname).toBe(`/posts/${ids.failed}`);
    const history = () =>
      page.locator('.history li').evaluateAll((items) => items.map((item) => item.getAttribute('data-event-type')));
    expect(await history()).toEqual(['created', 'scheduled', 'publishing', 'failed']);
    expect(await page.locator('.history li[data-event-type="failed"]').textContent()).toContain(
      'This channel does not take links.',
    );

    await page.getByRole('button', { name: 'Schedule again' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toBe('The post is scheduled again.');
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
    await page.screenshot({ path: new URL('post-history.png', ARTIFACTS).pathname, fullPage: true });
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
    const [theirs] = (
      await json(
        await send(server, other.auth, 'POST', '/public/v1/posts', {
          type: 'draft',
          channelIds: [(await createChannel(server.ctx.db, other.id, 'sandbox')).id],
          content: 'Theirs',
        }),
      )
    ).data;
    const response = await page.goto(`${server.baseUrl}/posts/${theirs.id}`);
    expect(response?.status()).toBe(404);
    expect(await page.content()).not.toContain('Theirs');
  });
});

async function csrfToken(page: Page): Promise<string> {
  await page.goto(new URL('/posts', page.url()).href);
  return await page.locator('input[name="csrf_token"]').first().inputValue();
}
