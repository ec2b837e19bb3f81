import fs from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { seriousViolations } from './support/axe.js';
import {
  artifactPath,
  describeInChromium,
  openBrowser,
  PAGE_WAIT,
  pathOf,
  untilAt,
  type BrowserWithPage,
} from './support/chromium.js';
import { startFakeLinkedIn, type FakeLinkedIn } from './support/fake-linkedin.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { pdfDocument } from './support/media-samples.js';
import { startTestServer, type TestServer } from './support/server.js';
import { TIMEOUTS } from './support/timeouts.js';
import { stringMatching } from './support/typed-matchers.js';

/**
 * LinkedIn the way a user meets it, in Chromium, against the fake LinkedIn: Connect LinkedIn in Settings →
 * Channels, LinkedIn's consent, then this server's page where the member and the company page they
 * administer are chosen (one channel each); then a post written in the composer for the page, with
 * characters LinkedIn's little text reserves, a first comment and who may see it, published now and
 * linked to on LinkedIn, as written; then a PDF uploaded in the composer and published for the page as a
 * document post under the title typed. Every page is scanned with axe-core on the way.
 */
describeInChromium('LinkedIn from Settings → Channels to a published post, in Chromium', () => {
  let linkedin: FakeLinkedIn;
  let server: TestServer;
  let org: TestOrganization;
  let browser: BrowserWithPage;
  let page: Page;

  beforeAll(async () => {
    linkedin = await startFakeLinkedIn({
      organizations: [{ id: 2414183, localizedName: 'Acme Bakery', vanityName: 'acme-bakery', role: 'ADMINISTRATOR' }],
    });
    server = await startTestServer({
      worker: true,
      env: {
        LINKEDIN_CLIENT_ID: linkedin.clientId,
        LINKEDIN_CLIENT_SECRET: linkedin.clientSecret,
        LINKEDIN_COMMUNITY_MANAGEMENT: 'true',
        LINKEDIN_API_URL: linkedin.url,
        LINKEDIN_AUTH_URL: linkedin.url,
        PUBLISH_RETRY_BASE_MS: '200',
      },
    });
    org = await createOrganization(server.ctx.db, 'Acme');
    browser = await openBrowser();
    page = browser.page;
  }, 2 * TIMEOUTS.hook);

  afterAll(async () => {
    await server?.close();
    await linkedin?.close();
    // Fails the file when a script of a page threw.
    await browser?.close();
  });

  async function scan(name: string): Promise<void> {
    const violations = await seriousViolations(page);
    expect(violations, `${name}: ${JSON.stringify(violations, null, 2)}`).toEqual([]);
  }

  const channelRow = (name: string) => page.locator('li.channel', { hasText: name });

  it('connects the member and their page, and publishes the page’s post as written with its first comment', async () => {
    await page.goto(`${server.baseUrl}/login?next=/settings/channels`);
    await page.getByLabel('Email').fill(org.email);
    await page.getByLabel('Password').fill(org.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await untilAt(page, '/settings/channels');

    await page.getByRole('button', { name: 'Connect LinkedIn' }).click();
    await untilAt(page, '/channels/choose/linkedin');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Choose what to connect from LinkedIn');
    await scan('choice page');
    await page.getByRole('checkbox', { name: /Ada Lovelace/ }).check();
    await page.getByRole('checkbox', { name: /Acme Bakery/ }).check();
    await page.getByRole('button', { name: 'Connect the chosen accounts' }).click();
    await untilAt(page, '/settings/channels');
    for (const name of ['Ada Lovelace', 'Acme Bakery'])
      await expect.poll(() => channelRow(name).locator('.status').textContent(), PAGE_WAIT).toBe('Active');
    await scan('Settings → Channels with LinkedIn');

    await page.goto(`${server.baseUrl}/compose`);
    await page.getByRole('checkbox', { name: 'Acme Bakery' }).check();
    const text = 'Open (Sunday) @ 9 — #fresh {rye} [sourdough] <3 ~ *daily* _baked_ | \\o/';
    await page.getByLabel('Text', { exact: true }).fill(text);
    await expect
      .poll(() => page.locator('#content-counts [data-count-for="linkedin"]').textContent(), PAGE_WAIT)
      .toBe(`LinkedIn commentary: ${text.length} of 3000 characters`);
    await page.getByLabel('First comment', { exact: true }).fill('Order at acme.example');
    const bakery = await server.ctx.db
      .selectFrom('channels')
      .select('id')
      .where('external_id', '=', 'urn:li:organization:2414183')
      .executeTakeFirstOrThrow();
    // Each LinkedIn channel has its own settings: the page's.
    await page.locator(`#settings-${bakery.id}-visibility`).selectOption('LOGGED_IN');
    await scan('composer (LinkedIn)');
    await page.getByRole('button', { name: 'Publish now' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent(), PAGE_WAIT).toBe('The post is created.');
    expect(pathOf(page)).toMatch(/^\/posts\//);

    await expect
      .poll(() => page.locator('dd .status').textContent(), { timeout: 2 * TIMEOUTS.browser, interval: 200 })
      .toBe('published');
    const [made] = linkedin.posts;
    expect(made).toMatchObject({ author: 'urn:li:organization:2414183', visibility: 'LOGGED_IN' });
    expect(linkedin.shownText(made!)).toBe(text);
    expect(await page.locator('dd a').first().getAttribute('href')).toBe(
      `https://www.linkedin.com/feed/update/${made!.id}/`,
    );
    await expect.poll(() => linkedin.comments.map((c) => c.text), PAGE_WAIT).toEqual(['Order at acme.example']);
    await page.screenshot({ path: artifactPath('linkedin-published.png'), fullPage: true });

    // A PDF: uploaded in the composer, shown with its pages, published as a document post with its title.
    const deck = artifactPath('linkedin-menu.pdf');
    fs.writeFileSync(deck, await pdfDocument(3));
    await page.goto(`${server.baseUrl}/compose`);
    await page.getByRole('checkbox', { name: 'Acme Bakery' }).check();
    await page.getByLabel('Text', { exact: true }).fill('Our menu, page by page');
    await page.getByLabel('Upload images, videos or PDFs').setInputFiles(deck);
    await expect.poll(() => page.locator('.upload-row').textContent(), PAGE_WAIT).toBe('linkedin-menu.pdf: uploaded');
    expect(await page.locator('input[name="media"]').first().isChecked()).toBe(true);
    await page.locator(`#settings-${bakery.id}-documentTitle`).fill('Spring menu');
    // LinkedIn has processed the document by the first look (the wait between looks is not this walk's subject).
    linkedin.processingChecks(0);
    await scan('composer (LinkedIn document)');
    await page.getByRole('button', { name: 'Publish now' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent(), PAGE_WAIT).toBe('The post is created.');
    await expect
      .poll(() => page.locator('dd .status').textContent(), { timeout: 2 * TIMEOUTS.browser, interval: 200 })
      .toBe('published');
    const document = linkedin.posts.find((post) => linkedin.shownText(post) === 'Our menu, page by page');
    expect(document?.content.media).toEqual({ id: stringMatching(/^urn:li:document:/), title: 'Spring menu' });
    expect(linkedin.documents.find((d) => d.urn === document!.content.media!.id)?.status).toBe('AVAILABLE');
  });
});
