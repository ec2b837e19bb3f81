import fs from 'node:fs';
import { DateTime } from 'luxon';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { seriousViolations } from './support/axe.js';
import {
  describeInChromium,
  openBrowser,
  PAGE_WAIT,
  pathOf,
  untilAt,
  type BrowserWithPage,
} from './support/chromium.js';
import { startFakeNetwork, type FakeNetwork } from './support/fake-network.js';
import { createChannel, createOrganization, insertPost, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';
import { scaled, TIMEOUTS } from './support/timeouts.js';

const HOUR = 3_600_000;
const ZONE = 'Europe/Berlin';

/**
 * Planning the week in Chromium: a post that repeats, made in the composer, its series' page, an
 * occurrence skipped, the series changed from an occurrence on and ended, and the server down for days
 * (no burst after it); a spreadsheet imported after a check, imported again, exported; a post
 * duplicated and deleted; posts changed in bulk. Every page on the way is scanned with axe-core at a
 * desktop's width and at a phone's (390 px).
 */
describeInChromium('planning in Chromium: recurring posts, import, export and bulk changes', () => {
  let network: FakeNetwork;
  let server: TestServer;
  let browser: BrowserWithPage;
  let page: Page;
  let owner: TestOrganization;
  let channelId: string;

  beforeAll(async () => {
    network = await startFakeNetwork();
    server = await startTestServer({
      worker: true,
      env: { SANDBOX_NETWORK_URL: network.url, RECURRING_HORIZON_DAYS: '14', RECURRING_GRACE_MINUTES: '30' },
    });
    owner = await createOrganization(server.ctx.db, 'Planning Studio');
    channelId = (await createChannel(server.ctx.db, owner.id, 'sandbox', 'Weekly sandbox')).id;
    browser = await openBrowser();
    page = browser.page;
    await page.goto(`${server.baseUrl}/login?next=${encodeURIComponent(`/calendar?tz=${ZONE}`)}`);
    await page.getByLabel('Email').fill(owner.email);
    await page.getByLabel('Password').fill(owner.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await untilAt(page, '/calendar');
  }, 2 * TIMEOUTS.hook);

  afterAll(async () => {
    await server?.close();
    await network?.close();
    // Fails the file when a script of a page threw.
    await browser?.close();
  });

  /** No serious or critical accessibility violation, and nothing wider than the window, at 1280 and 390 px. */
  async function scan(name: string): Promise<void> {
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      const violations = await seriousViolations(page);
      expect(violations, `${name} at ${width} px: ${JSON.stringify(violations, null, 2)}`).toEqual([]);
      expect(
        await page.evaluate('document.documentElement.scrollWidth'),
        `${name} is wider than ${width} px`,
      ).toBeLessThanOrEqual(width);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  }

  const status = () => page.getByRole('status').first().textContent();
  /** The server's time: the downtime test moves its clock days ahead of the machine's. */
  const serverNow = () => DateTime.fromJSDate(server.clock.now());
  const statusOf = async (postId: string) =>
    (await server.ctx.db.selectFrom('posts').select('status').where('id', '=', postId).executeTakeFirstOrThrow())
      .status;

  it('makes a post repeat every day from the composer, skips one, changes the series from an occurrence on and ends it', async () => {
    server.setNow(undefined);
    const start = server.clock.now();
    server.setNow(start);
    const first = DateTime.fromMillis(start.getTime() + 2 * HOUR, { zone: ZONE }).startOf('minute');

    await page.goto(`${server.baseUrl}/compose`);
    await page.getByRole('checkbox', { name: 'Weekly sandbox' }).check();
    await page.getByLabel('Text', { exact: true }).fill('Good morning, every day');
    await page.getByLabel('Day').fill(first.toISODate()!);
    await page.getByLabel('Time', { exact: true }).fill(first.toFormat('HH:mm'));
    // A post that repeats is scheduled: Publish now is refused next to Repeat, with nothing created.
    await page.getByLabel('Repeat', { exact: true }).selectOption('daily');
    await page.getByRole('button', { name: 'Publish now' }).click();
    await expect
      .poll(() => page.locator('#repeat-error').textContent(), PAGE_WAIT)
      .toMatch(/^A post that repeats is scheduled: choose Schedule/);
    expect(await page.getByLabel('Repeat', { exact: true }).inputValue()).toBe('daily');
    // A rule typed by hand that is none is named in the same place.
    await page.getByLabel('Repeat', { exact: true }).selectOption('custom');
    await page.getByLabel('Rule', { exact: true }).fill('FREQ=SOMETIMES');
    await page.getByRole('button', { name: 'Schedule', exact: true }).click();
    await expect
      .poll(() => page.locator('#repeat-error').textContent(), PAGE_WAIT)
      .toMatch(/FREQ must be YEARLY, MONTHLY, WEEKLY, DAILY or HOURLY/);
    await scan('composer (a rule refused)');
    expect(await server.ctx.db.selectFrom('post_series').select('id').execute()).toEqual([]);

    await page.getByLabel('Repeat', { exact: true }).selectOption('daily');
    await page.getByRole('button', { name: 'Schedule', exact: true }).click();
    await expect.poll(status, PAGE_WAIT).toMatch(/^The series is created/);
    const seriesId = pathOf(page).split('/')[2]!;
    expect(seriesId).toMatch(/^ser_/);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Series: every day');
    // Two weeks of occurrences, one post each, at the time of day chosen in Berlin.
    const rows = page.locator('tr[data-occurrence]');
    expect(await rows.count()).toBe(14);
    expect(await rows.first().locator('td').first().textContent()).toContain(first.toFormat('HH:mm'));
    await scan('series');

    // The second occurrence, skipped from its page.
    await rows.nth(1).getByRole('link').click();
    await page.waitForURL((url) => url.pathname.startsWith('/posts/'));
    const secondId = pathOf(page).split('/')[2]!;
    expect(await page.locator('[data-series]').textContent()).toContain('every day');
    await scan('post (an occurrence)');
    await page.getByRole('button', { name: 'Skip this occurrence' }).click();
    await expect.poll(status, PAGE_WAIT).toMatch(/^This occurrence is skipped/);
    expect(await statusOf(secondId)).toBe('skipped');
    expect(await page.locator('li[data-event-type="skipped"] strong').textContent()).toBe('Skipped');
    expect(await page.getByRole('button', { name: 'Skip this occurrence' }).count()).toBe(0);

    // From the fourth occurrence on: every week, with another text.
    await page.locator('[data-series] a').click();
    await untilAt(page, `/series/${seriesId}`);
    const fourth = await page.locator('#from option').nth(3).getAttribute('value');
    await page.getByLabel('From', { exact: true }).selectOption(fourth);
    await page.getByLabel('Repeat', { exact: true }).selectOption('weekly');
    await page.getByLabel('Text', { exact: true }).fill('Good morning, every week');
    await page.getByRole('button', { name: 'Change the series' }).click();
    await expect.poll(status, PAGE_WAIT).toMatch(/^The series is changed/);
    const nextId = pathOf(page).split('/')[2]!;
    expect(nextId).not.toBe(seriesId);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toMatch(/^Series: every week on /);
    const posts = await server.ctx.db
      .selectFrom('posts')
      .select(['series_id', 'content', 'status'])
      .where('series_id', 'in', [seriesId, nextId])
      .orderBy('occurrence_at')
      .execute();
    // Three of the old series (one skipped), then one a week of the new one within the two weeks.
    expect(posts.map((post) => [post.series_id, post.status])).toEqual([
      [seriesId, 'scheduled'],
      [seriesId, 'skipped'],
      [seriesId, 'scheduled'],
      [nextId, 'scheduled'],
      [nextId, 'scheduled'],
    ]);
    expect(posts.at(-1)!.content).toBe('Good morning, every week');
    expect(await page.getByRole('link', { name: 'the series it was changed from' }).getAttribute('href')).toBe(
      `/series/${seriesId}`,
    );
    await scan('series (changed)');

    // Ended, after a confirmation: the occurrences ahead go.
    await page.getByRole('button', { name: 'End the series' }).click();
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('End this series?');
    await scan('series (end?)');
    await page.getByRole('button', { name: 'End the series' }).click();
    await expect.poll(status, PAGE_WAIT).toMatch(/^The series is ended/);
    expect(await page.locator('[data-series-end]').textContent()).toMatch(/^ended /);
    expect(await page.getByRole('button', { name: 'End the series' }).count()).toBe(0);
    expect(await server.ctx.db.selectFrom('posts').select('id').where('series_id', '=', nextId).execute()).toEqual([]);
    await page.goto(`${server.baseUrl}/series/${seriesId}`);
    await page.getByRole('button', { name: 'End the series' }).click();
    await page.getByRole('button', { name: 'End the series' }).click();
    await expect.poll(status, PAGE_WAIT).toMatch(/^The series is ended/);
  });

  it('publishes no burst after the server was down for days: the missed occurrences are skipped, saying why', async () => {
    server.setNow(undefined);
    const start = server.clock.now();
    server.setNow(start);
    const first = DateTime.fromMillis(start.getTime() + HOUR, { zone: ZONE }).startOf('minute');
    await page.goto(`${server.baseUrl}/compose`);
    await page.getByRole('checkbox', { name: 'Weekly sandbox' }).check();
    await page.getByLabel('Text', { exact: true }).fill('Daily, through downtime');
    await page.getByLabel('Day').fill(first.toISODate()!);
    await page.getByLabel('Time', { exact: true }).fill(first.toFormat('HH:mm'));
    await page.getByLabel('Repeat', { exact: true }).selectOption('daily');
    await page.getByRole('button', { name: 'Schedule', exact: true }).click();
    await expect.poll(status, PAGE_WAIT).toMatch(/^The series is created/);
    const seriesId = pathOf(page).split('/')[2]!;
    const occurrences = await server.ctx.db
      .selectFrom('posts')
      .select('id')
      .where('series_id', '=', seriesId)
      .orderBy('occurrence_at')
      .execute();

    // Down from before the first occurrence until 10 minutes after the fifth's time (four days on in
    // Berlin, whatever a change of summer time between): the five jobs fall due at once; four are past
    // the grace period of 30 minutes.
    const fifthAt = (
      await server.ctx.db
        .selectFrom('posts')
        .select('occurrence_at')
        .where('id', '=', occurrences[4]!.id)
        .executeTakeFirstOrThrow()
    ).occurrence_at!;
    await server.clock.advance(fifthAt.getTime() + 10 * 60_000 - server.clock.now().getTime());
    const five = occurrences.slice(0, 5).map((post) => post.id);
    await expect
      .poll(async () => Promise.all(five.map(statusOf)), { timeout: scaled(20_000), interval: 200 })
      .toEqual(['skipped', 'skipped', 'skipped', 'skipped', 'published']);
    expect(five.map((id) => network.publicationsOf(id))).toEqual([0, 0, 0, 0, 1]);

    await page.reload();
    expect((await page.locator('tr[data-occurrence] .status').allTextContents()).slice(0, 6)).toEqual([
      'skipped',
      'skipped',
      'skipped',
      'skipped',
      'published',
      'scheduled',
    ]);
    await page.locator(`tr[data-occurrence="${five[0]}"] a`).click();
    await untilAt(page, `/posts/${five[0]}`);
    expect(await page.locator('li[data-event-type="skipped"]').textContent()).toMatch(
      /Skipped.*missed: due at .* more than 30 minutes before/s,
    );
    await scan('post (skipped after downtime)');
    await page.goto(`${server.baseUrl}/series/${seriesId}`);
    await page.getByRole('button', { name: 'End the series' }).click();
    await page.getByRole('button', { name: 'End the series' }).click();
    await expect.poll(status, PAGE_WAIT).toMatch(/^The series is ended/);
    server.setNow(undefined);
  });

  it('imports a spreadsheet after checking it row by row, imports it again creating nothing, and exports it', async () => {
    const tomorrow = serverNow().setZone(ZONE).plus({ days: 1 }).set({ hour: 10, minute: 0 }).startOf('minute');
    const csv = [
      'key,channels,text,time',
      `launch-1,${channelId},Launch day,${tomorrow.toISO()}`,
      'launch-2,ch_nowhere,Wrong channel,',
      `launch-3,${channelId},Into the queue later,`,
    ].join('\n');
    await page.goto(`${server.baseUrl}/posts`);
    await page.getByRole('link', { name: 'Import' }).click();
    await untilAt(page, '/posts/import');
    await scan('import');
    await page.getByLabel(/^The CSV file/).fill(csv);
    await page.getByRole('button', { name: 'Check the rows' }).click();
    await expect
      .poll(() => page.locator('[data-import-summary]').textContent(), PAGE_WAIT)
      .toBe('2 ready to import, 1 with problems, 0 imported before. Nothing was created yet.');
    expect(await page.locator('tr[data-import-row="2"]').textContent()).toContain('There is no channel ch_nowhere');
    expect(await page.getByRole('button', { name: /^Import \d+ rows$/ }).count()).toBe(0);
    await scan('import (checked, one problem)');

    await page.getByLabel(/^The CSV file/).fill(csv.replace(`ch_nowhere,Wrong channel`, `${channelId},Right channel`));
    await page.getByRole('button', { name: 'Check the rows' }).click();
    await page.getByRole('button', { name: 'Import 3 rows' }).click();
    await expect
      .poll(() => page.locator('[data-import-summary]').textContent(), PAGE_WAIT)
      .toBe('3 created, 0 imported before.');
    const links = await page.locator('tr[data-import-row] a').all();
    const imported = await Promise.all(links.map(async (link) => (await link.getAttribute('href'))!.split('/')[2]!));
    expect(imported).toHaveLength(3);
    // The same file again: every row was imported before, nothing is created twice.
    await page.getByRole('button', { name: 'Check the rows' }).click();
    await expect
      .poll(() => page.locator('[data-import-summary]').textContent(), PAGE_WAIT)
      .toBe('0 ready to import, 0 with problems, 3 imported before. Nothing was created yet.');
    const count = await server.ctx.db
      .selectFrom('posts')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('organization_id', '=', owner.id)
      .where('content', 'in', ['Launch day', 'Right channel', 'Into the queue later'])
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(3);

    // The Posts page's CSV link downloads the list as a file that names the imported posts.
    await page.goto(`${server.baseUrl}/posts`);
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'CSV', exact: true }).click(),
    ]);
    expect(download.suggestedFilename()).toBe('posts.csv');
    const exported = fs.readFileSync(await download.path(), 'utf8');
    for (const id of imported) expect(exported).toContain(id);
    expect(exported).toContain('Launch day');
  });

  it('duplicates a post as a draft and deletes the copy after a confirmation', async () => {
    const postId = await insertPost(server.ctx.db, {
      organizationId: owner.id,
      channelId,
      status: 'scheduled',
      scheduledAt: serverNow().plus({ days: 3 }).toISO(),
      content: 'Worth saying twice',
    });
    await page.goto(`${server.baseUrl}/posts/${postId}`);
    await page.getByRole('button', { name: 'Duplicate as a draft' }).click();
    await expect.poll(status, PAGE_WAIT).toMatch(/^This is a copy of the post, saved as a draft/);
    const copyId = pathOf(page).split('/')[2]!;
    expect(copyId).not.toBe(postId);
    expect(await page.locator('.post-content').first().textContent()).toBe('Worth saying twice');
    expect(await statusOf(copyId)).toBe('draft');
    await scan('post (a copy)');

    await page.getByRole('button', { name: 'Delete the post' }).click();
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Delete this post?');
    await scan('post (delete?)');
    // Cancel keeps it; confirming deletes it.
    await page.getByRole('link', { name: 'Cancel' }).click();
    await untilAt(page, `/posts/${copyId}`);
    await page.getByRole('button', { name: 'Delete the post' }).click();
    await page.getByRole('button', { name: 'Delete the post' }).click();
    await untilAt(page, '/posts');
    expect(await status()).toBe('The post is deleted.');
    expect(await server.ctx.db.selectFrom('posts').select('id').where('id', '=', copyId).execute()).toEqual([]);
    expect(await statusOf(postId)).toBe('scheduled');
  });

  it('changes the ticked posts of the Posts page at once, saying what became of each', async () => {
    const later = serverNow().plus({ days: 5 }).toISO();
    const ticked = await Promise.all(
      ['Bulk one', 'Bulk two'].map((content) =>
        insertPost(server.ctx.db, {
          organizationId: owner.id,
          channelId,
          status: 'scheduled',
          scheduledAt: later,
          content,
        }),
      ),
    );
    const published = await insertPost(server.ctx.db, {
      organizationId: owner.id,
      channelId,
      status: 'published',
      scheduledAt: serverNow().minus({ days: 1 }).toISO(),
      content: 'Bulk published',
    });
    await page.goto(`${server.baseUrl}/posts`);
    for (const id of [...ticked, published])
      await page.locator(`tr[data-post-id="${id}"] input[type="checkbox"]`).check();
    await page.getByLabel('With the ticked posts').selectOption('draft');
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(() => page.locator('[data-bulk-result]').count(), PAGE_WAIT).toBe(3);
    for (const id of ticked)
      expect(await page.locator(`[data-bulk-result="${id}"]`).getAttribute('data-done')).toBe('true');
    expect(await page.locator(`[data-bulk-result="${published}"]`).getAttribute('data-done')).toBe('false');
    expect(await Promise.all([...ticked, published].map(statusOf))).toEqual(['draft', 'draft', 'published']);
    await scan('posts (after a bulk change)');

    // Deleting in bulk asks first, then deletes the ticked posts only.
    for (const id of ticked) await page.locator(`tr[data-post-id="${id}"] input[type="checkbox"]`).check();
    await page.getByLabel('With the ticked posts').selectOption('delete');
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect
      .poll(() => page.getByRole('heading', { level: 1 }).textContent(), PAGE_WAIT)
      .toMatch(/^Delete 2 posts\?/);
    await page.getByRole('button', { name: /^Delete/ }).click();
    await expect.poll(() => page.locator('[data-bulk-result][data-done="true"]').count(), PAGE_WAIT).toBe(2);
    expect(await server.ctx.db.selectFrom('posts').select('id').where('id', 'in', ticked).execute()).toEqual([]);
    expect(await statusOf(published)).toBe('published');
  });

  it('shows the audit log, the organization and a channel’s schedule without a serious accessibility problem', async () => {
    for (const path of ['/settings/audit-log', '/settings/organization', `/settings/channels/${channelId}/schedule`]) {
      await page.goto(`${server.baseUrl}${path}`);
      expect(pathOf(page)).toBe(path);
      await scan(path);
    }
    // The audit log records the deletions made above from the pages: the copy and the two of the bulk change.
    await page.goto(`${server.baseUrl}/settings/audit-log`);
    expect(await page.locator('tr.audit-entry[data-action="post.deleted"]').count()).toBe(3);
  });
});
