import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicApi, type Schemas } from './support/api.js';
import { BrowserSession, decodeEntities, inputValue } from './support/browser-session.js';
import { createChannel, createOrganization, type TestOrganization } from './support/fixtures.js';
import { POSTS_TEST_ENV } from './support/posts.js';
import { startTestServer, type TestServer } from './support/server.js';

let server: TestServer;
let org: TestOrganization;
let browser: BrowserSession;
let sandbox: string;
let other: string;

// A Wednesday, with the clock stopped: every week and month below is known.
const NOW = '2030-03-13T12:00:00.000Z';

beforeAll(async () => {
  server = await startTestServer({ env: POSTS_TEST_ENV });
  server.setNow(NOW);
  org = await createOrganization(server.ctx.db, 'Calendar Studio');
  sandbox = (await createChannel(server.ctx.db, org.id, 'sandbox', 'Studio sandbox')).id;
  other = (await createChannel(server.ctx.db, org.id, 'sandbox', 'Second sandbox')).id;
  browser = new BrowserSession(server);
  await browser.logIn(org.email, org.password);
});
afterAll(() => server?.close());

async function createPost(body: Schemas['CreatePostRequest'], owner = org): Promise<Schemas['Post']> {
  const { data, error, response } = await publicApi(server, owner.auth).POST('/public/v1/posts', { body });
  expect(response.status, JSON.stringify(error)).toBe(201);
  return data!.data[0]!;
}

async function readPost(id: string, owner = org): Promise<Schemas['Post']> {
  const { data, error } = await publicApi(server, owner.auth).GET('/public/v1/posts/{id}', {
    params: { path: { id } },
  });
  expect(error).toBeUndefined();
  return data!;
}

async function page(path: string): Promise<{ status: number; html: string }> {
  const response = await browser.get(path);
  return { status: response.status, html: await response.text() };
}

/** The post ids of the chips in one cell of the calendar: a day (month view), or a day and an hour (week view). */
function chipsIn(html: string, date: string, hour?: string): string[] {
  const cell = new RegExp(
    `<td class="[^"]*" data-date="${date}"${hour ? ` data-hour="${hour}"` : ''}>([\\s\\S]*?)</td>`,
  ).exec(html);
  if (!cell) throw new Error(`no cell for ${date} ${hour ?? ''}`);
  return [...cell[1]!.matchAll(/class="chip-link" href="\/posts\/([^"]+)"/g)].map((m) => m[1]!);
}

describe('landing', () => {
  it('sends a signed-in user to the calendar, and a log-in without a destination there too', async () => {
    const root = await browser.get('/');
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/calendar');
    const visitor = new BrowserSession(server);
    const loggedIn = await visitor.logIn(org.email, org.password);
    expect(loggedIn.headers.get('location')).toBe('/calendar');
  });

  it('puts developer settings under Settings → Developers in the menu', async () => {
    const { html } = await page('/settings/developers/apps');
    const main = /<nav aria-label="Menu"[\s\S]*?<\/nav>/.exec(html)![0];
    expect([...main.matchAll(/<a href="([^"]+)"/g)].map((m) => m[1])).toEqual([
      '/calendar',
      '/posts',
      '/media',
      '/settings',
    ]);
    const settings = /<nav aria-label="Settings"[\s\S]*?<\/nav>/.exec(html)![0];
    expect(settings).toMatch(
      /Developers\s*<ul>\s*<li><a href="\/settings\/developers\/access">API keys<\/a><\/li>\s*<li><a href="\/settings\/developers\/apps" aria-current="page">Apps<\/a>/,
    );
    expect((await browser.get('/settings')).headers.get('location')).toBe('/settings/channels');
    expect((await browser.get('/settings/developers')).headers.get('location')).toBe('/settings/developers/access');
  });
});

describe('the Posts list', () => {
  it('refuses a day that is not in the calendar instead of listing from 1970', async () => {
    for (const query of ['from=2026-02-30', 'to=2026-13-01', 'from=tomorrow']) {
      const { status, html } = await page(`/posts?${query}`);
      expect(status, query).toBe(400);
      expect(html).toContain('must be a date such as 2026-12-01.');
    }
    expect((await page('/posts?from=2028-02-29&to=2028-03-01')).status).toBe(200);
  });
});

describe('the calendar', () => {
  it('explains what to do when nothing is planned, and when there is no channel', async () => {
    const { status, html } = await page('/calendar?date=2031-06-04');
    expect(status).toBe(200);
    expect(html).toContain('Nothing is planned for this week.');
    expect(html).toContain('<a href="/compose">New post</a>');

    const empty = await createOrganization(server.ctx.db, 'No channels');
    const visitor = new BrowserSession(server);
    await visitor.logIn(empty.email, empty.password);
    const bare = await (await visitor.get('/calendar')).text();
    expect(bare).toContain('No channel to publish to yet.');
    expect(bare).toContain('<a href="/settings/channels">Settings → Channels</a>');
  });

  it('shows a week of posts in the reader’s time zone, by day and hour, with their status', async () => {
    // 23:30 UTC on Tuesday is 00:30 on Wednesday in Paris (UTC+1 in March before the change).
    const late = await createPost({
      type: 'schedule',
      date: '2030-03-19T23:30:00.000Z',
      channelIds: [sandbox],
      content: 'Late on Tuesday in UTC',
    });
    const draft = await createPost({
      type: 'draft',
      date: '2030-03-18T09:15:00.000Z',
      channelIds: [other],
      content: 'A draft with a time',
    });

    const utc = (await page('/calendar?date=2030-03-19&tz=UTC')).html;
    expect(utc).toContain('18 – 24 Mar 2030');
    expect(chipsIn(utc, '2030-03-19', '23')).toEqual([late.id]);
    expect(chipsIn(utc, '2030-03-18', '09')).toEqual([draft.id]);
    expect(utc).toMatch(
      new RegExp(
        `<div class="chip status-draft">\\s*<a class="chip-link" href="/posts/${draft.id}"[^>]*draggable="true"`,
      ),
    );

    const paris = (await page('/calendar?date=2030-03-19&tz=Europe/Paris')).html;
    expect(chipsIn(paris, '2030-03-20', '00')).toEqual([late.id]);
    expect(chipsIn(paris, '2030-03-19', '23')).toEqual([]);
    expect(paris).toContain('Times are in <strong>Europe/Paris</strong>');
    // The choice is kept for the next pages.
    expect(chipsIn((await page('/calendar?date=2030-03-19')).html, '2030-03-20', '00')).toEqual([late.id]);
    expect(chipsIn((await page('/calendar?date=2030-03-19&tz=UTC')).html, '2030-03-19', '23')).toEqual([late.id]);
  });

  it('asks the browser for its time zone until one is known', async () => {
    const visitor = new BrowserSession(server);
    await visitor.logIn(org.email, org.password);
    expect(await (await visitor.get('/calendar')).text()).toMatch(/<html lang="en" data-time-zone-unset>/);
    expect(await (await visitor.get('/calendar?tz=Asia/Calcutta')).text()).toMatch(/<html lang="en">/);
    // The browser's old name of the zone is kept by its current one, which the picker offers (and not the old).
    const kept = await (await visitor.get('/calendar')).text();
    expect(kept).toContain('Times are in <strong>Asia/Kolkata</strong>');
    expect(kept).toContain('<option selected>Asia/Kolkata</option>');
    for (const current of ['Europe/Kyiv', 'Asia/Ho_Chi_Minh']) expect(kept).toContain(`<option>${current}</option>`);
    for (const old of ['Asia/Calcutta', 'Europe/Kiev', 'Asia/Saigon']) expect(kept).not.toContain(`>${old}<`);
    // A zone that is not one is not taken.
    expect(await (await visitor.get('/calendar?tz=Mars/Olympus')).text()).toContain(
      'Times are in <strong>Asia/Kolkata</strong>',
    );
  });

  it('shows a month as six weeks from the Monday before the 1st, and filters by channel', async () => {
    const first = await createPost({
      type: 'schedule',
      date: '2030-04-01T08:00:00.000Z',
      channelIds: [sandbox],
      content: 'April fools',
    });
    const second = await createPost({
      type: 'schedule',
      date: '2030-04-01T10:00:00.000Z',
      channelIds: [other],
      content: 'From the other channel',
    });
    const { html } = await page('/calendar?view=month&date=2030-04-10&tz=UTC');
    expect(html).toContain('April 2030');
    expect(html).toMatch(/data-date="2030-04-01"[\s\S]*data-date="2030-05-12"/);
    expect(html).not.toContain('data-date="2030-03-31"');
    expect(chipsIn(html, '2030-04-01')).toEqual([first.id, second.id]);

    const filtered = (await page(`/calendar?view=month&date=2030-04-10&channel=${other}`)).html;
    expect(chipsIn(filtered, '2030-04-01')).toEqual([second.id]);
    expect(filtered).toMatch(new RegExp(`value="${other}" checked`));
    // The steps keep the view and the filter.
    expect(decodeEntities(filtered)).toContain(
      `href="/calendar?view=month&date=2030-05-10&channel=${other}" rel="next"`,
    );

    expect((await page('/calendar?channel=ch_nobody')).status).toBe(400);
    expect((await page('/calendar?view=year')).status).toBe(400);
  });

  it('never shows another organization’s posts', async () => {
    const stranger = await createOrganization(server.ctx.db, 'Stranger');
    const theirs = (await createChannel(server.ctx.db, stranger.id, 'sandbox')).id;
    await createPost(
      { type: 'schedule', date: '2030-03-14T10:00:00.000Z', channelIds: [theirs], content: 'Secret plans' },
      stranger,
    );
    const { html } = await page('/calendar?date=2030-03-14');
    expect(html).not.toContain('Secret plans');
    expect((await page(`/calendar?channel=${theirs}`)).status).toBe(400);
  });
});

describe('moving a post (drag, or Move to…)', () => {
  async function move(
    postId: string,
    fields: Record<string, string>,
    from = '/calendar?date=2030-03-19&tz=UTC',
  ): Promise<Response> {
    const html = (await page(from)).html;
    return browser.postForm(`/posts/${postId}/move`, {
      csrf_token: inputValue(html, 'csrf_token')!,
      return: from,
      ...fields,
    });
  }

  it('schedules the post at the day and time on the reader’s wall clock, and says so', async () => {
    const post = await createPost({
      type: 'schedule',
      date: '2030-03-20T09:45:00.000Z',
      channelIds: [sandbox],
      content: 'To be moved',
    });
    // 31 March 2030 is the day Paris moves to summer time: 10:45 there is 08:45 UTC.
    const moved = await move(
      post.id,
      { date: '2030-03-31', time: '10:45' },
      '/calendar?date=2030-03-19&tz=Europe/Paris',
    );
    expect(moved.status).toBe(303);
    expect(moved.headers.get('location')).toBe(`/calendar?date=2030-03-19&tz=Europe%2FParis&moved=${post.id}`);
    const answer = await readPost(post.id);
    expect(answer.scheduledAt).toBe('2030-03-31T08:45:00.000Z');
    expect(answer.status).toBe('scheduled');
    const history = await publicApi(server, org.auth).GET('/public/v1/posts/{id}/history', {
      params: { path: { id: post.id } },
    });
    expect(history.data?.data.map((event) => event.type)).toEqual(['created', 'scheduled', 'rescheduled']);
    const notice = (await page(moved.headers.get('location')!)).html;
    expect(notice).toContain('The post is scheduled for Sun 31 Mar 2030, 10:45 (Europe/Paris).');
  });

  it('schedules a draft it moves, as the API’s schedule operation does', async () => {
    const draft = await createPost({ type: 'draft', channelIds: [sandbox], content: 'Draft to place' });
    expect((await move(draft.id, { date: '2030-03-21', time: '08:00' })).status).toBe(303);
    const answer = await readPost(draft.id);
    expect([answer.status, answer.scheduledAt]).toEqual(['scheduled', '2030-03-21T08:00:00.000Z']);
  });

  it('refuses a time in the past with the API’s own words, and changes nothing', async () => {
    const post = await createPost({
      type: 'schedule',
      date: '2030-03-20T10:00:00.000Z',
      channelIds: [sandbox],
      content: 'Stays put',
    });
    const api = await publicApi(server, org.auth).POST('/public/v1/posts/{id}/schedule', {
      params: { path: { id: post.id } },
      body: { scheduledAt: '2030-03-12T10:00:00.000Z' },
    });
    expect(api.response.status).toBe(422);
    const apiMessage = api.error!.error.message;

    const refused = await move(post.id, { date: '2030-03-12', time: '10:00' }, '/calendar?date=2030-03-19&tz=UTC');
    expect(refused.status).toBe(422);
    const html = await refused.text();
    expect(decodeEntities(html)).toContain(`The post could not be moved: ${apiMessage}`);
    // The calendar the move came from is shown again, with the post where it was.
    expect(chipsIn(html, '2030-03-20', '10')).toContain(post.id);
    expect((await readPost(post.id)).scheduledAt).toBe('2030-03-20T10:00:00.000Z');

    const nonsense = await move(post.id, { date: '2030-02-30', time: '25:00' });
    expect(nonsense.status).toBe(400);
    expect(await nonsense.text()).toContain('Choose a day and a time');
  });

  it('refuses to move a published post (409), a post of another organization (404), and a form without its token (403)', async () => {
    const published = await createPost({ type: 'now', channelIds: [sandbox], content: 'Out already' });
    await server.ctx.db
      .updateTable('posts')
      .set({ status: 'published', published_at: new Date(NOW) })
      .where('id', '=', published.id)
      .execute();
    const conflict = await move(published.id, { date: '2030-03-21', time: '08:00' }, `/posts/${published.id}`);
    expect(conflict.status).toBe(409);
    expect(await conflict.text()).toContain('The post could not be moved: The post is published');

    const stranger = await createOrganization(server.ctx.db, 'Another stranger');
    const theirChannel = (await createChannel(server.ctx.db, stranger.id, 'sandbox')).id;
    const theirs = await createPost(
      { type: 'schedule', date: '2030-03-20T10:00:00.000Z', channelIds: [theirChannel], content: 'Theirs' },
      stranger,
    );
    expect((await move(theirs.id, { date: '2030-03-21', time: '08:00' })).status).toBe(404);
    expect((await readPost(theirs.id, stranger)).scheduledAt).toBe('2030-03-20T10:00:00.000Z');

    const post = await createPost({
      type: 'schedule',
      date: '2030-03-20T11:00:00.000Z',
      channelIds: [sandbox],
      content: 'Guarded',
    });
    const forged = await browser.postForm(`/posts/${post.id}/move`, {
      date: '2030-03-21',
      time: '08:00',
      return: '/calendar',
    });
    expect(forged.status).toBe(403);
  });

  it('offers Move only for posts the publisher has not taken', async () => {
    const published = await createPost({
      type: 'schedule',
      date: '2030-03-22T07:00:00.000Z',
      channelIds: [sandbox],
      content: 'Published one',
    });
    await server.ctx.db.updateTable('posts').set({ status: 'published' }).where('id', '=', published.id).execute();
    const html = (await page('/calendar?date=2030-03-22&tz=UTC')).html;
    expect(html).toMatch(new RegExp(`href="/posts/${published.id}"[^>]*draggable="false"`));
    expect(html).not.toContain(`data-move="${published.id}"`);
    const postPage = (await page(`/posts/${published.id}`)).html;
    expect(postPage).not.toContain('Move to…');
  });
});
