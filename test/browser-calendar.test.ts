import fs from 'node:fs';
import { DateTime } from 'luxon';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { registerApp } from '../src/oauth/apps.js';
import { createPosts } from '../src/posts/create.js';
import { seriousViolations } from './support/axe.js';
import {
  artifactPath,
  describeInChromium,
  NEW_USER_PASSWORD,
  openBrowser,
  PAGE_WAIT,
  pathOf,
  signUp,
  untilAt,
  type BrowserWithPage,
} from './support/chromium.js';
import { startFakeNetwork, type FakeNetwork } from './support/fake-network.js';
import { createChannel, createOrganization } from './support/fixtures.js';
import { png } from './support/media-samples.js';
import { testPictures } from './support/oauth.js';
import { startTestServer, type TestServer } from './support/server.js';
import { TIMEOUTS } from './support/timeouts.js';

const PICTURE = artifactPath('calendar-upload.png');

/**
 * A new user's first minutes, at a desktop's width and at a phone's (390 px): sign up, the calendar
 * (empty, saying what to do), a post composed for the sandbox channel with an uploaded image, on the
 * calendar, dragged to tomorrow, another published at once and shown published with its link; every
 * page scanned with axe-core on the way.
 */
describeInChromium('the calendar, the composer and the media library in Chromium', () => {
  let network: FakeNetwork;
  let server: TestServer;
  let browser: BrowserWithPage;
  let page: Page;
  let consentPath: string;
  const scanned = new Map<string, number>();

  beforeAll(async () => {
    fs.writeFileSync(PICTURE, png(120, 80, [220, 60, 40, 255]));
    network = await startFakeNetwork();
    server = await startTestServer({ worker: true, env: { SANDBOX_NETWORK_URL: network.url } });
    const developer = await createOrganization(server.ctx.db, 'App maker');
    const { app } = await registerApp(
      server.ctx.db,
      developer.id,
      { name: 'Planner', description: 'Plans posts.', pictureUrl: '', redirectUri: 'https://planner.example.org/cb' },
      testPictures,
      new Date(),
    );
    consentPath = `/oauth/authorize?client_id=${app.client_id}&response_type=code&state=s`;
    browser = await openBrowser();
    page = browser.page;
  }, 2 * TIMEOUTS.hook);

  afterAll(async () => {
    await server?.close();
    await network?.close();
    // Fails the file when a script of a page threw.
    await browser?.close();
  });

  /** No serious or critical accessibility violation on the page as it is now. */
  async function scan(name: string): Promise<void> {
    const violations = await seriousViolations(page);
    expect(violations, `${name}: ${JSON.stringify(violations, null, 2)}`).toEqual([]);
    // Usable at the phone's width: nothing makes the page scroll sideways.
    const width = page.viewportSize()!.width;
    expect(
      await page.evaluate('document.documentElement.scrollWidth'),
      `${name} is wider than ${width} px`,
    ).toBeLessThanOrEqual(width);
    scanned.set(name, (scanned.get(name) ?? 0) + 1);
  }

  /** What the first status message of the page says, once there is one. */
  const status = () => page.getByRole('status').first().textContent();

  async function walk(width: number, who: string): Promise<void> {
    await page.setViewportSize({ width, height: 900 });
    const shot = (name: string) =>
      page.screenshot({ path: artifactPath(`calendar-${width}-${name}.png`), fullPage: true });
    await page.goto(`${server.baseUrl}/signup`);
    await scan('sign up');
    await signUp(page, { name: who, email: `${who.toLowerCase()}@studio.example`, organization: `${who} Studio` });

    // Signed up: the calendar, which says what to do first.
    expect(pathOf(page)).toBe('/calendar');
    expect(await page.locator('#calendar-empty').textContent()).toMatch(
      /Nothing is planned for this week\.\s+Write a post with New post/,
    );
    // The first-run checklist: nothing done yet; the schedule is the sandbox channel's until another comes.
    const steps = (state: string) =>
      page
        .locator(`#first-run li.${state}`)
        .all()
        .then((items) => Promise.all(items.map((item) => item.getAttribute('data-step'))));
    expect(await steps('todo')).toEqual(['connect', 'schedule', 'post']);
    expect(await page.getByRole('link', { name: 'Set the posting schedule' }).getAttribute('href')).toMatch(
      /^\/settings\/channels\/ch_\w+\/schedule$/,
    );
    expect(await page.getByRole('link', { name: 'Connect a channel' }).getAttribute('href')).toBe('/settings/channels');
    await scan('calendar (week, empty)');
    await shot('empty');
    const zone = (await page.locator('main .meta strong').first().textContent())!;
    const today = DateTime.now().setZone(zone).startOf('day');
    const tomorrow = today.plus({ days: 1 }).toISODate()!;
    const later = today.plus({ days: 2 }).toISODate()!;

    // A free hour of the week opens the composer at that time: a post for the sandbox channel with an
    // uploaded image, the day after tomorrow at 10:00.
    // A time that has passed offers none.
    const yesterday = today.minus({ days: 1 }).toISODate()!;
    await page.goto(`${server.baseUrl}/calendar?date=${yesterday}`);
    expect(await page.locator(`td[data-date="${yesterday}"] a.slot-new`).count()).toBe(0);
    await page.goto(`${server.baseUrl}/calendar?date=${later}`);
    const slot = page.locator(`td[data-date="${later}"][data-hour="10"] a.slot-new`);
    expect(await slot.textContent()).toBe(`+ New post on ${later} at 10:00`);
    await slot.click();
    await untilAt(page, '/compose');
    expect(await page.getByLabel('Day').inputValue()).toBe(later);
    expect(await page.getByLabel('Time', { exact: true }).inputValue()).toBe('10:00');
    await scan('composer');
    await page.getByRole('checkbox', { name: 'Sandbox' }).check();
    await page.getByLabel('Text', { exact: true }).fill(`Hello from ${who}`);
    await page.getByLabel('Upload images, videos or PDFs').setInputFiles(PICTURE);
    await expect.poll(() => page.locator('.upload-row').textContent(), PAGE_WAIT).toBe('calendar-upload.png: uploaded');
    const media = page.locator('input[name="media"]').first();
    expect(await media.isChecked()).toBe(true);
    const mediaId = await media.inputValue();
    await scan('composer (filled)');
    await shot('composer');
    await page.getByRole('button', { name: 'Schedule', exact: true }).click();
    await expect.poll(status, PAGE_WAIT).toBe('The post is created.');
    const postId = pathOf(page).split('/')[2]!;
    await scan('post (scheduled)');

    // On the calendar (a month, which always holds tomorrow and the day after), then dragged to tomorrow.
    await page.getByRole('link', { name: 'Calendar' }).first().click();
    await page.getByRole('link', { name: 'Month' }).click();
    // Loaded with its script, which moves what is dropped.
    await page.waitForURL((url) => url.searchParams.get('view') === 'month');
    const chip = page.locator(`a.chip-link[data-post-id="${postId}"]`);
    expect(await chip.getAttribute('data-date')).toBe(later);
    await scan('calendar (month)');
    // The chip shows the post's image, small.
    const thumbnail = chip.locator('img.chip-thumb');
    await expect
      .poll(() => thumbnail.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth), PAGE_WAIT)
      .toBe(120);
    // The first post ticks its step of the checklist.
    expect(await steps('done')).toEqual(['post']);
    await chip.dragTo(page.locator(`td[data-date="${tomorrow}"]`));
    await expect.poll(status, PAGE_WAIT).toMatch(new RegExp(`The post is scheduled for .* 10:00 \\(${zone}\\)\\.`));
    // The calendar again, loaded with its script, which opens the dialog below.
    await page.waitForLoadState();
    expect(await chip.getAttribute('data-date')).toBe(tomorrow);
    expect(await chip.getAttribute('data-time')).toBe('10:00');
    const moved = await server.ctx.db
      .selectFrom('posts')
      .select(['scheduled_at', 'media_ids'])
      .where('id', '=', postId)
      .executeTakeFirstOrThrow();
    expect(moved.scheduled_at?.toISOString()).toBe(DateTime.fromISO(`${tomorrow}T10:00`, { zone }).toUTC().toISO());
    expect(moved.media_ids).toEqual([mediaId]);
    await shot('month');

    // The keyboard's way: the post's Move link opens a dialog with the same form.
    await page.locator(`a.chip-move[data-move="${postId}"]`).focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('#move-dialog').getAttribute('open'), PAGE_WAIT).toBe('');
    await scan('calendar (move dialog)');
    await page.keyboard.press('Escape');
    await expect.poll(() => page.locator('#move-dialog').getAttribute('open'), PAGE_WAIT).toBeNull();

    // Another post, published now, with the keyboard only.
    await page.goto(`${server.baseUrl}/compose`);
    await page.getByRole('checkbox', { name: 'Sandbox' }).focus();
    await page.keyboard.press('Space');
    await page.keyboard.press('Tab');
    await page.keyboard.type(`Out now from ${who}`);
    await page.getByRole('button', { name: 'Publish now' }).focus();
    await page.keyboard.press('Enter');
    await page.waitForURL((url) => /^\/posts\/post_/.test(url.pathname));
    // The page follows the post until it is published, then shows its link on the network.
    await expect.poll(() => page.locator('dd .status').textContent(), PAGE_WAIT).toBe('published');
    const link = page.locator('dt:text("On the network") + dd a');
    expect(await link.getAttribute('href')).toMatch(new RegExp(`^${network.url}/`));
    await scan('post (published)');
    await shot('published');

    // The status legend filters: only the published posts.
    await page.goto(`${server.baseUrl}/calendar?view=month&date=${tomorrow}`);
    await page.locator('#status-filter').getByRole('checkbox', { name: 'published' }).check();
    await page.locator('#status-filter').getByRole('button', { name: 'Show' }).click();
    await page.waitForURL((url) => url.searchParams.getAll('status').join() === 'published');
    expect(await page.locator(`a.chip-link[data-post-id="${postId}"]`).count()).toBe(0);
    const shown = await Promise.all((await page.locator('.chip').all()).map((chip) => chip.getAttribute('class')));
    expect(shown.length).toBeGreaterThan(0);
    expect(new Set(shown)).toEqual(new Set(['chip status-published']));
    await scan('calendar (published only)');
    expect((await page.goto(`${server.baseUrl}/calendar?status=lost`))?.status()).toBe(400);

    // The other pages.
    await page.goto(`${server.baseUrl}/calendar`);
    await scan('calendar (week)');
    for (const [name, target] of [
      ['posts', '/posts'],
      ['media', '/media'],
      ['channels', '/settings/channels'],
      ['webhooks', '/settings/webhooks'],
      ['approved apps', '/settings/approved-apps'],
      ['API keys', '/settings/developers/access'],
      ['apps', '/settings/developers/apps'],
      ['consent', consentPath],
      ['not found', '/no/such/page'],
    ] as const) {
      await page.goto(`${server.baseUrl}${target}`);
      await scan(name);
    }
    expect(await page.locator('.media-card').count()).toBe(0);
    await page.goto(`${server.baseUrl}/media`);
    expect(await page.locator('.media-card').count()).toBe(1);
    expect(await page.locator('.media-card').textContent()).toMatch(
      /calendar-upload\.png\s+image · image\/png · \d+ B/,
    );
    await shot('media');
    await page.getByRole('button', { name: 'Log out' }).click();
    await untilAt(page, '/login');
    await scan('log in');
  }

  it('walks a new user through their first posts at a desktop’s width', async () => {
    await walk(1280, 'Desk');
  });

  it('walks the same way at a phone’s width (390 px), without scrolling sideways', async () => {
    await walk(390, 'Phone');
    await page.goto(`${server.baseUrl}/login`);
    await page.getByLabel('Email').fill('phone@studio.example');
    await page.getByLabel('Password').fill(NEW_USER_PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await untilAt(page, '/calendar');
    for (const target of ['/calendar?view=month', '/compose', '/media', '/posts', '/settings/channels']) {
      await page.goto(`${server.baseUrl}${target}`);
      await scan(`${target} again`);
    }
  });

  it('moves a post to another hour by dragging it in the week, keeping its minutes', async () => {
    const owner = await createOrganization(server.ctx.db, 'Week Studio');
    const channel = await createChannel(server.ctx.db, owner.id, 'sandbox', 'Week sandbox');
    const created = await createPosts(
      server.ctx,
      { organizationId: owner.id, role: 'owner' },
      { type: 'schedule', date: '2030-06-12T07:45:00.000Z', channelIds: [channel.id], content: 'Mid-week' },
      undefined,
    );
    const postId = created.body.data[0]!.id;
    await page.context().clearCookies();
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${server.baseUrl}/login?next=${encodeURIComponent('/calendar?date=2030-06-12&tz=Europe/Paris')}`);
    await page.getByLabel('Email').fill(owner.email);
    await page.getByLabel('Password').fill(owner.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    // The week, loaded with its script, which moves what is dropped; it opens at the working day.
    await untilAt(page, '/calendar');
    // The hour of the first row below the days' heading, in the week's scrolling box.
    const topHour = () =>
      page.evaluate(`(() => {
        const box = document.querySelector('.week-scroll');
        const head = box.querySelector('thead').offsetHeight;
        const rows = [...box.querySelectorAll('tbody tr')];
        return rows.find((row) => row.offsetTop >= box.scrollTop + head - 1)?.dataset.hour;
      })()`);
    await expect.poll(topHour, PAGE_WAIT).toBe('08');
    const chip = page.locator(`a.chip-link[data-post-id="${postId}"]`);
    // 07:45 UTC is 09:45 in Paris in June.
    expect(await chip.getAttribute('data-time')).toBe('09:45');
    expect(await chip.getAttribute('data-date')).toBe('2030-06-12');
    await chip.dragTo(page.locator('td[data-date="2030-06-14"][data-hour="11"]'));
    await expect.poll(status, PAGE_WAIT).toBe('The post is scheduled for Fri 14 Jun 2030, 11:45 (Europe/Paris).');
    const moved = await server.ctx.db
      .selectFrom('posts')
      .select('scheduled_at')
      .where('id', '=', postId)
      .executeTakeFirstOrThrow();
    expect(moved.scheduled_at?.toISOString()).toBe('2030-06-14T09:45:00.000Z');
    await scan('calendar (week, with a post)');
    await page.screenshot({ path: artifactPath('calendar-week.png') });

    // A channel of a real network connected, then its posting schedule set: nothing is left, and the list goes.
    const steps = () =>
      page
        .locator('#first-run li.todo')
        .all()
        .then((items) => Promise.all(items.map((item) => item.getAttribute('data-step'))));
    expect(await steps()).toEqual(['connect', 'schedule']);
    const x = await createChannel(server.ctx.db, owner.id, 'x', 'Week X');
    await page.reload();
    expect(await steps()).toEqual(['schedule']);
    expect(await page.getByRole('link', { name: 'Set the posting schedule' }).getAttribute('href')).toBe(
      `/settings/channels/${x.id}/schedule`,
    );
    await server.ctx.db.insertInto('channel_slots').values({ channel_id: x.id, weekday: 1, minute: 540 }).execute();
    await page.reload();
    expect(await page.locator('#first-run').count()).toBe(0);
  });

  it('previews the post as each network chosen shows it: cut at its limit, its thread, a link’s card and the first comment', async () => {
    const owner = await createOrganization(server.ctx.db, 'Preview Studio');
    await createChannel(server.ctx.db, owner.id, 'sandbox', 'Preview sandbox');
    const bluesky = await createChannel(server.ctx.db, owner.id, 'bluesky', 'Preview Bluesky');
    await page.context().clearCookies();
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${server.baseUrl}/login?next=/compose`);
    await page.getByLabel('Email').fill(owner.email);
    await page.getByLabel('Password').fill(owner.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await untilAt(page, '/compose');
    const preview = page.locator('#preview');
    expect(await preview.locator('[data-preview-list]').textContent()).toBe(
      'Tick a channel to see how its network shows the post.',
    );
    const post = (network: string) => preview.getByRole('article', { name: network });
    await page.getByRole('checkbox', { name: 'Preview sandbox' }).check();
    await page.getByRole('checkbox', { name: 'Preview Bluesky' }).check();
    // 310 characters: within the sandbox's limit, past Bluesky's 300, where the preview cuts it.
    await page.getByLabel('Text', { exact: true }).fill('a'.repeat(310));
    const text = (network: string) => post(network).locator('.preview-text').first().textContent();
    await expect.poll(() => text('Bluesky: Preview Bluesky'), PAGE_WAIT).toBe(`${'a'.repeat(300)}…`);
    expect(await post('Bluesky: Preview Bluesky').locator('.preview-over').textContent()).toMatch(
      /^Too long for Bluesky: at most 300 characters;/,
    );
    expect(await text('sandbox: Preview sandbox')).toBe('a'.repeat(310));
    expect(await post('sandbox: Preview sandbox').locator('.preview-over').count()).toBe(0);

    // A thread of two, its second part with a link, and a first comment.
    await page.getByRole('button', { name: 'Add to thread' }).click();
    await page.getByLabel('Text of part 2', { exact: true }).fill('More at https://example.org/page.');
    await page.getByLabel('Text', { exact: true }).fill('Short now');
    await page.getByLabel('First comment').fill('Thanks for reading');
    const parts = (network: string) => post(network).locator('.preview-part');
    await expect.poll(() => parts('Bluesky: Preview Bluesky').count(), PAGE_WAIT).toBe(2);
    await expect
      .poll(() => parts('Bluesky: Preview Bluesky').locator('.preview-text').allTextContents(), PAGE_WAIT)
      .toEqual(['Short now', 'More at https://example.org/page.']);
    expect(await parts('Bluesky: Preview Bluesky').locator('.preview-number').allTextContents()).toEqual([
      '1/2',
      '2/2',
    ]);
    expect(await parts('Bluesky: Preview Bluesky').nth(1).locator('.preview-link strong').textContent()).toBe(
      'example.org',
    );
    // The sandbox shows no card, and takes the first comment, which Bluesky does not.
    expect(await post('sandbox: Preview sandbox').locator('.preview-link').count()).toBe(0);
    expect(await post('sandbox: Preview sandbox').locator('.preview-comment').textContent()).toBe(
      'First comment: Thanks for reading',
    );
    expect(await post('Bluesky: Preview Bluesky').locator('.preview-comment').count()).toBe(0);
    // Bluesky's card can be turned off in its settings.
    await page.locator(`input[name="settings.${bluesky.id}.linkCard"][value="no"]`).check();
    await expect.poll(() => post('Bluesky: Preview Bluesky').locator('.preview-link').count(), PAGE_WAIT).toBe(0);
    await scan('composer (preview)');
    await page.screenshot({ path: artifactPath('composer-preview.png'), fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await scan('composer (preview, phone)');
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('adds a post to the queue: the organization’s zone, a channel’s slots and Add to queue', async () => {
    const owner = await createOrganization(server.ctx.db, 'Queue Studio');
    const channel = await createChannel(server.ctx.db, owner.id, 'sandbox', 'Queue sandbox');
    await page.context().clearCookies();
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${server.baseUrl}/login?next=${encodeURIComponent('/settings/organization')}`);
    await page.getByLabel('Email').fill(owner.email);
    await page.getByLabel('Password').fill(owner.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await untilAt(page, '/settings/organization');
    await scan('organization');
    await page.getByLabel('Time zone of Queue Studio').selectOption('Asia/Kolkata');
    await page.getByRole('button', { name: 'Save' }).click();
    await expect.poll(status, PAGE_WAIT).toBe('The time zone was saved.');

    await page.goto(`${server.baseUrl}/settings/channels`);
    await page.getByRole('link', { name: 'Schedule of Queue sandbox' }).click();
    await untilAt(page, `/settings/channels/${channel.id}/schedule`);
    expect(await page.locator('main').textContent()).toContain('Asia/Kolkata');
    // A typo is named with its day, and nothing is saved.
    await page.getByLabel('Monday').fill('9:00, 25:00');
    await page.getByRole('button', { name: 'Save the schedule' }).click();
    expect(await page.locator('#times-monday-error').textContent()).toBe(
      'Monday: “25:00” is no time of day; write times as 09:00 or 17:30, separated by commas.',
    );
    await scan('schedule (a typo)');
    for (const day of ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday']) {
      await page.getByLabel(day).fill('9:00');
    }
    await page.getByRole('button', { name: 'Save the schedule' }).click();
    await expect.poll(status, PAGE_WAIT).toMatch(/^The schedule was saved/);
    expect(await page.getByLabel('Monday').inputValue()).toBe('09:00');
    expect(await page.locator('ol.queue li').count()).toBe(10);
    await scan('schedule');

    await page.goto(`${server.baseUrl}/compose`);
    await page.getByRole('checkbox', { name: 'Queue sandbox' }).check();
    await page.getByLabel('Text', { exact: true }).fill('Whenever there is room');
    await page.getByRole('button', { name: 'Add to queue' }).click();
    await expect.poll(status, PAGE_WAIT).toBe('The post is created.');
    const postId = pathOf(page).split('/')[2]!;
    const post = await server.ctx.db
      .selectFrom('posts')
      .select(['status', 'queued', 'scheduled_at'])
      .where('id', '=', postId)
      .executeTakeFirstOrThrow();
    expect(post).toMatchObject({ status: 'scheduled', queued: true });
    const local = DateTime.fromJSDate(post.scheduled_at!, { zone: 'Asia/Kolkata' });
    expect(local.toFormat('HH:mm')).toBe('09:00');
    expect(local.diffNow().as('hours')).toBeLessThanOrEqual(24);

    // The schedule's page lists the post in its slot; at a phone's width too.
    await page.goto(`${server.baseUrl}/settings/channels/${channel.id}/schedule`);
    expect(await page.locator(`ol.queue a[href="/posts/${postId}"]`).textContent()).toBe('Whenever there is room');
    await page.setViewportSize({ width: 390, height: 900 });
    await scan('schedule (390 px)');
    await page.goto(`${server.baseUrl}/settings/organization`);
    await scan('organization (390 px)');
  });

  it('serves a favicon', async () => {
    const icon = await page.request.get(`${server.baseUrl}/favicon.ico`);
    expect(icon.status()).toBe(200);
    expect(icon.headers()['content-type']).toBe('image/x-icon');
    expect((await icon.body()).subarray(0, 4)).toEqual(Buffer.from([0, 0, 1, 0]));
    expect(scanned.size).toBeGreaterThanOrEqual(18);
  });
});
