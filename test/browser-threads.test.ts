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

const PICTURE = artifactPath('thread-picture.png');

/**
 * A thread written in the composer: three parts, the first with an uploaded image and its alternative
 * text, each part counted as the chosen networks count it while it is typed (X's weighted length for an
 * X channel ticked on the way), a part added and removed, then published now to the sandbox, which
 * publishes every part as a reply to the one before: its pages show the parts in order, the image
 * with its alternative text. Every page is scanned with axe-core on the way.
 */
describeInChromium('a thread written in the composer, in Chromium', () => {
  let server: TestServer;
  let org: TestOrganization;
  let browser: BrowserWithPage;
  let page: Page;
  const channels = { sandbox: '', x: '', youtube: '' };

  beforeAll(async () => {
    fs.writeFileSync(PICTURE, png(120, 80, [200, 40, 40, 255]));
    server = await startTestServer({ worker: true, env: { PUBLISH_RETRY_BASE_MS: '200', ...UNUSED_APPS } });
    // The sandbox network of the server itself, whose pages show each part and what it replies to.
    server.ctx.config.sandbox.networkUrl = server.baseUrl;
    org = await createOrganization(server.ctx.db, 'Thread Studio');
    channels.sandbox = (await createChannel(server.ctx.db, org.id, 'sandbox', 'Thread sandbox')).id;
    channels.x = (await createChannel(server.ctx.db, org.id, 'x', 'Thread X')).id;
    channels.youtube = (await createChannel(server.ctx.db, org.id, 'youtube', 'Thread YouTube')).id;
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

  /** What a part's counter of a network or channel shows, once the page's script has counted. */
  const counted = (part: string, key: string) =>
    page.locator(`#${part}content-counts [data-count-for="${key}"] .count`).textContent();

  it('writes a three-part thread with an image and its alternative text, and publishes it in order', async () => {
    await page.goto(`${server.baseUrl}/login?next=/compose`);
    await page.getByLabel('Email').fill(org.email);
    await page.getByLabel('Password').fill(org.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await untilAt(page, '/compose');
    await scan('composer');

    // The first part: its text, counted for X as X weighs it (a URL is 23) while X is ticked.
    await page.getByRole('checkbox', { name: 'Thread sandbox' }).check();
    await page.getByRole('checkbox', { name: 'Thread X' }).check();
    const first = 'The first of three, https://example.com/a/rather/long/address/of/a/page';
    await page.getByLabel('Text', { exact: true }).fill(first);
    await expect.poll(() => counted('', 'x'), PAGE_WAIT).toBe(String('The first of three, '.length + 23));
    await expect.poll(() => counted('', 'sandbox'), PAGE_WAIT).toBe(String(first.length));
    await page.getByRole('checkbox', { name: 'Thread X' }).uncheck();
    expect(await page.locator('#content-counts [data-count-for="x"]').isHidden()).toBe(true);

    // Its image, uploaded, and what the image shows.
    await page.getByLabel('Upload images, videos or PDFs', { exact: true }).setInputFiles(PICTURE);
    await expect.poll(() => page.locator('.upload-row').textContent(), PAGE_WAIT).toBe('thread-picture.png: uploaded');
    const media = page.locator('input[name="media"]').first();
    expect(await media.isChecked()).toBe(true);
    const mediaId = await media.inputValue();
    const altText = page.getByLabel('Alternative text of thread-picture.png', { exact: true });
    await altText.fill('A red rectangle');
    // YouTube takes no alternative text: with it alone chosen, the field is not offered.
    await page.getByRole('checkbox', { name: 'Thread sandbox' }).uncheck();
    await page.getByRole('checkbox', { name: 'Thread YouTube' }).check();
    expect(await altText.isVisible()).toBe(false);
    await page.getByRole('checkbox', { name: 'Thread YouTube' }).uncheck();
    await page.getByRole('checkbox', { name: 'Thread sandbox' }).check();
    expect(await altText.isVisible()).toBe(true);
    // The image is offered in the other parts too, without its field until it is chosen there.

    // The second and third parts, each its own text, counted on its own.
    await page.getByRole('button', { name: 'Add to thread' }).click();
    const second = page.getByLabel('Text of part 2', { exact: true });
    // The page starts at the new part's text.
    await expect.poll(() => page.evaluate('document.activeElement?.id'), PAGE_WAIT).toBe('thread-0-content');
    await second.fill('The second');
    await expect.poll(() => counted('thread-0-', 'sandbox'), PAGE_WAIT).toBe('10');
    await page.getByRole('button', { name: 'Add to thread' }).click();
    await page.getByLabel('Text of part 3', { exact: true }).fill('The third and last');

    // A fourth part, added by mistake and removed.
    await page.getByRole('button', { name: 'Add to thread' }).click();
    await page.getByLabel('Text of part 4', { exact: true }).fill('Not meant');
    await page.getByRole('button', { name: 'Remove part 4' }).click();
    await expect.poll(() => page.getByLabel('Text of part 4', { exact: true }).count(), PAGE_WAIT).toBe(0);

    // What was written is all there after the round trips.
    expect(await page.getByLabel('Text', { exact: true }).inputValue()).toBe(first);
    expect(await page.getByLabel('Text of part 2', { exact: true }).inputValue()).toBe('The second');
    expect(await page.getByLabel('Text of part 3', { exact: true }).inputValue()).toBe('The third and last');
    expect(await page.getByLabel('Alternative text of thread-picture.png', { exact: true }).inputValue()).toBe(
      'A red rectangle',
    );
    expect(await page.getByLabel('Alternative text of thread-picture.png in part 2').isVisible()).toBe(false);
    await scan('composer (a thread of three)');
    await page.screenshot({ path: artifactPath('thread-composer.png'), fullPage: true });

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
    expect(post).toMatchObject({ content: first, media_ids: [mediaId], alt_texts: { [mediaId]: 'A red rectangle' } });
    expect(post.thread.map((part) => part.content)).toEqual(['The second', 'The third and last']);

    // The post's page lists the thread's parts, each with its link on the network, and their history.
    await page.reload();
    await expect
      .poll(() => page.locator('[data-thread-part]').allTextContents(), PAGE_WAIT)
      .toEqual([
        stringMatching(/^The second\s+no media ·\s+on the network\s*$/),
        stringMatching(/^The third and last/),
      ]);
    const links = page.locator('[data-thread-part] a');
    expect([await links.nth(0).getAttribute('href'), await links.nth(1).getAttribute('href')]).toEqual(
      post.thread.map((part) => part.releaseUrl),
    );
    expect(await page.locator('[data-event-type="part_published"]').allTextContents()).toEqual([
      stringMatching(/Thread part published.*part 1$/s),
      stringMatching(/Thread part published.*part 2$/s),
      stringMatching(/Thread part published.*part 3$/s),
    ]);
    await scan('the post’s page with its thread');

    // On the network, in order: each part a reply to the one before.
    await page.locator('.details a[href*="/sandbox/"]').click();
    await page.waitForLoadState();
    expect(await page.locator('.release-content').textContent()).toBe(first);
    expect(await page.locator('.release-media img').getAttribute('alt')).toBe('A red rectangle');
    expect(await page.locator('.reply-to').count()).toBe(0);
    await scan('the thread’s first part on the sandbox');
    for (const text of ['The second', 'The third and last']) {
      await page.getByRole('link', { name: 'the next post of the thread' }).click();
      await page.waitForLoadState();
      expect(await page.locator('.release-content').textContent()).toBe(text);
      expect(await page.locator('.reply-to').count()).toBe(1);
    }
    expect(await page.getByRole('link', { name: 'the next post of the thread' }).count()).toBe(0);
    expect(new URL(page.url()).href).toBe(post.thread[1]!.releaseUrl);
  });

  it('schedules when Enter is pressed in a field, though the parts’ buttons come before Schedule', async () => {
    await page.goto(`${server.baseUrl}/compose`);
    await page.getByRole('checkbox', { name: 'Thread sandbox' }).check();
    await page.getByLabel('Text', { exact: true }).fill('Entered');
    await page.getByRole('button', { name: 'Add to thread' }).click();
    await page.getByLabel('Text of part 2', { exact: true }).fill('And its reply');
    await page.getByLabel('Time', { exact: true }).fill('23:30');
    await page.getByLabel('Time', { exact: true }).press('Enter');
    await expect.poll(() => page.getByRole('status').first().textContent(), PAGE_WAIT).toBe('The post is created.');
    const post = await server.ctx.db
      .selectFrom('posts')
      .selectAll()
      .where('id', '=', pathOf(page).split('/')[2]!)
      .executeTakeFirstOrThrow();
    expect([post.status, post.content, post.thread.map((part) => part.content)]).toEqual([
      'scheduled',
      'Entered',
      ['And its reply'],
    ]);
  });

  it('fixes a post the sandbox was told to refuse in the editor, and it is published', async () => {
    const response = await server.fetch('/public/v1/posts', {
      method: 'POST',
      headers: { ...org.auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        type: 'now',
        posts: [
          {
            channelId: channels.sandbox,
            content: 'Fails on purpose',
            settings: { __type: 'sandbox', outcome: 'failed' },
          },
        ],
      }),
    });
    expect(response.status).toBe(201);
    const id = ((await response.json()) as { data: { id: string }[] }).data[0]!.id;
    const statusOf = async () =>
      (await server.ctx.db.selectFrom('posts').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status;
    await eventually(async () => expect(await statusOf()).toBe('failed'));
    await page.goto(`${server.baseUrl}/posts/${id}/edit`);
    const outcome = page.getByLabel('How publishing ends');
    expect(await outcome.inputValue()).toBe('failed');
    await outcome.selectOption('published');
    await page.getByRole('button', { name: 'Publish now' }).click();
    await eventually(async () => expect(await statusOf()).toBe('published'));
  });
});
