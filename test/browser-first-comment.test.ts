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
import { eventually } from './support/eventually.js';
import { createChannel, createOrganization, type TestOrganization } from './support/fixtures.js';
import { png } from './support/media-samples.js';
import { UNUSED_APPS, startTestServer, type TestServer } from './support/server.js';
import { TIMEOUTS } from './support/timeouts.js';
import { stringMatching } from './support/typed-matchers.js';

const PICTURES = [artifactPath('comment-first.png'), artifactPath('comment-second.png')];

/**
 * A post with a first comment written in the composer: the comment's field is offered while a channel
 * whose network takes comments is ticked (Instagram, the sandbox; not X), counted by that network's limit
 * while it is typed, with each network's settings beside it, and two images numbered in the order they
 * were chosen; then published now to the sandbox, which publishes the images in that order and the
 * comment on the post right after it: the post's page and the sandbox's show it with its link. Every page
 * is scanned with axe-core on the way.
 */
describeInChromium('a first comment written in the composer, in Chromium', () => {
  let server: TestServer;
  let org: TestOrganization;
  let browser: BrowserWithPage;
  let page: Page;
  const channels = { sandbox: '', x: '', instagram: '' };

  beforeAll(async () => {
    fs.writeFileSync(PICTURES[0]!, png(120, 80, [200, 40, 40, 255]));
    fs.writeFileSync(PICTURES[1]!, png(80, 120, [40, 40, 200, 255]));
    server = await startTestServer({ worker: true, env: { PUBLISH_RETRY_BASE_MS: '200', ...UNUSED_APPS } });
    // The sandbox network of the server itself, whose pages show a post's comments.
    server.ctx.config.sandbox.networkUrl = server.baseUrl;
    org = await createOrganization(server.ctx.db, 'Comment Studio');
    channels.sandbox = (await createChannel(server.ctx.db, org.id, 'sandbox', 'Comment sandbox')).id;
    channels.x = (await createChannel(server.ctx.db, org.id, 'x', 'Comment X')).id;
    channels.instagram = (await createChannel(server.ctx.db, org.id, 'instagram', 'Comment Instagram')).id;
    browser = await openBrowser();
    page = browser.page;
  }, 2 * TIMEOUTS.hook);

  afterAll(async () => {
    await server?.close();
    // Fails the file when a script of a page threw.
    await browser?.close();
  });

  /** No serious or critical accessibility violation on the page as it is now. */
  async function scan(name: string): Promise<void> {
    const violations = await seriousViolations(page);
    expect(violations, `${name}: ${JSON.stringify(violations, null, 2)}`).toEqual([]);
  }

  /** What the first comment's counter of a network shows, once the page's script has counted. */
  const counted = (network: string) =>
    page.locator(`#firstComment-counts [data-count-for="${network}"] .count`).textContent();

  it('offers the comment with the networks that take one, publishes it on the sandbox after the post, and shows it with its link', async () => {
    await page.goto(`${server.baseUrl}/login?next=/compose`);
    await page.getByLabel('Email').fill(org.email);
    await page.getByLabel('Password').fill(org.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await untilAt(page, '/compose');
    const comment = page.getByLabel('First comment', { exact: true });

    // No channel chosen, or only X, which has no comments: no field.
    expect(await comment.isVisible()).toBe(false);
    await page.getByRole('checkbox', { name: 'Comment X' }).check();
    expect(await comment.isVisible()).toBe(false);
    await scan('composer (X alone)');

    // Instagram takes comments: the field, its counter by Instagram's limit, and Instagram's settings.
    await page.getByRole('checkbox', { name: 'Comment Instagram' }).check();
    expect(await comment.isVisible()).toBe(true);
    const text = 'Menu and prices: https://example.com/menu 🍰';
    await comment.fill(text);
    // Counted as the API counts a comment: UTF-16 code units, the cake two.
    await expect.poll(() => counted('instagram'), PAGE_WAIT).toBe(String(text.length));
    expect(await page.locator('#firstComment-counts [data-count-for="instagram"]').textContent()).toBe(
      `Instagram comment: ${text.length} of 2200 characters`,
    );
    expect(await page.getByRole('radio', { name: /^A reel/ }).isVisible()).toBe(true);
    await scan('composer (Instagram and X)');
    await page.screenshot({ path: artifactPath('first-comment-composer.png'), fullPage: true });

    // The sandbox alone: its own counter, Instagram's and X's gone.
    await page.getByRole('checkbox', { name: 'Comment Instagram' }).uncheck();
    await page.getByRole('checkbox', { name: 'Comment X' }).uncheck();
    await page.getByRole('checkbox', { name: 'Comment sandbox' }).check();
    expect(await comment.isVisible()).toBe(true);
    expect(await page.locator('#firstComment-counts [data-count-for="instagram"]').isHidden()).toBe(true);
    expect(await counted('sandbox')).toBe(String(text.length));
    await page.getByLabel('Text', { exact: true }).fill('Our new menu is out');

    // Two images, uploaded one after the other: each is chosen and numbered after the one before, though
    // the newest is listed first.
    const upload = page.getByLabel('Upload images, videos or PDFs', { exact: true });
    await upload.setInputFiles(PICTURES[0]!);
    await expect
      .poll(() => page.locator('.upload-row').last().textContent(), PAGE_WAIT)
      .toBe('comment-first.png: uploaded');
    await upload.setInputFiles(PICTURES[1]!);
    await expect
      .poll(() => page.locator('.upload-row').last().textContent(), PAGE_WAIT)
      .toBe('comment-second.png: uploaded');
    expect(await page.locator('[data-part="0"] .media-name').allTextContents()).toEqual([
      'comment-second.png',
      'comment-first.png',
    ]);
    expect(await page.getByLabel('Position of comment-first.png', { exact: true }).inputValue()).toBe('1');
    expect(await page.getByLabel('Position of comment-second.png', { exact: true }).inputValue()).toBe('2');
    await scan('composer (the sandbox, two images)');

    await page.getByRole('button', { name: 'Publish now' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent(), PAGE_WAIT).toBe('The post is created.');
    const postId = pathOf(page).split('/')[2]!;
    const post = await eventually(async () => {
      const row = await server.ctx.db
        .selectFrom('posts')
        .selectAll()
        .where('id', '=', postId)
        .executeTakeFirstOrThrow();
      expect(row.status).toBe('published');
      return row;
    });
    expect(post.first_comment).toMatchObject({ content: text, releaseId: stringMatching(/^rel_/) });

    // The post's page shows the comment with its link on the network, and its history says so.
    await page.reload();
    const shown = page.locator('[data-first-comment]');
    expect(await shown.locator('.post-content').textContent()).toBe(text);
    expect(await shown.getByRole('link', { name: 'on the network' }).getAttribute('href')).toBe(
      post.first_comment!.releaseUrl,
    );
    expect(await page.locator('[data-event-type="comment_published"]').textContent()).toMatch(
      /First comment published.*attempt 1$/s,
    );
    await scan('the post’s page with its first comment');
    await page.screenshot({ path: artifactPath('first-comment-post.png'), fullPage: true });

    // On the network: the post, with the comment under it, and the comment's own page.
    await page.locator('.details a[href*="/sandbox/"]').click();
    await page.waitForLoadState();
    expect(await page.locator('.release-content').textContent()).toBe('Our new menu is out');
    // The images in the order of their positions.
    const images = page.locator('.release-media img');
    expect(await images.count()).toBe(2);
    expect([await images.nth(0).getAttribute('alt'), await images.nth(1).getAttribute('alt')]).toEqual([
      'comment-first.png',
      'comment-second.png',
    ]);
    expect(await page.locator('.release-comment').textContent()).toMatch(
      new RegExp(`^${escaped(text)}\\s+the comment$`),
    );
    await scan('the post on the sandbox with its comment');
    await page.locator('.release-comment').getByRole('link', { name: 'the comment' }).click();
    await page.waitForLoadState();
    expect(new URL(page.url()).href).toBe(post.first_comment!.releaseUrl);
    expect(await page.locator('.release-content').textContent()).toBe(text);
    expect(await page.locator('.comment-on').textContent()).toBe('A comment of the channel on its post');
    await scan('the comment on the sandbox');
  });
});

/** A text as a regular expression matching it exactly. */
const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
