import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodyOf, errorOf, publicApi, type Schemas } from './support/api.js';
import { BrowserSession, decodeEntities, inputValue } from './support/browser-session.js';
import { startFakeMastodon, type FakeMastodon } from './support/fake-mastodon.js';
import {
  createChannel,
  createMastodonChannel,
  createOrganization,
  insertMedia,
  type TestOrganization,
} from './support/fixtures.js';
import { png } from './support/media-samples.js';
import { FakeTikTok, POSTS_TEST_ENV, send } from './support/posts.js';
import { startTestServer, type TestServer } from './support/server.js';

let server: TestServer;
let org: TestOrganization;
let browser: BrowserSession;
let mastodon: FakeMastodon;
const tiktok = new FakeTikTok();
const channels = { sandbox: '', youtube: '', tiktok: '', closed: '' };

// A Wednesday, clock stopped; the browser's zone is Paris (UTC+1 in March).
const NOW = '2030-03-13T12:00:00.000Z';

beforeAll(async () => {
  // An instance whose admin changed Mastodon's limits: its channels are counted by its own.
  mastodon = await startFakeMastodon({ limits: { maxCharacters: 1000, charactersReservedPerUrl: 30 } });
  server = await startTestServer({
    // The fake Mastodon is on loopback: allowed as an operator allows a range of their network.
    env: { ...POSTS_TEST_ENV, MEDIA_FETCH_ALLOW_RANGES: '127.0.0.1/32' },
    providers: { tiktok: { creatorInfo: tiktok } },
  });
  server.setNow(NOW);
  org = await createOrganization(server.ctx.db, 'Composer Studio');
  channels.sandbox = (await createChannel(server.ctx.db, org.id, 'sandbox', 'Studio sandbox')).id;
  channels.youtube = (await createChannel(server.ctx.db, org.id, 'youtube', 'Studio YouTube')).id;
  channels.tiktok = (await createChannel(server.ctx.db, org.id, 'tiktok', 'Studio TikTok')).id;
  channels.closed = (await createChannel(server.ctx.db, org.id, 'tiktok', 'Paused TikTok')).id;
  tiktok.set(channels.tiktok, { privacyLevelOptions: ['FOLLOWER_OF_CREATOR', 'SELF_ONLY'], duetDisabled: true });
  tiktok.set(channels.closed, {
    canPost: false,
    cannotPostReason:
      'the account reached the number of posts TikTok allows it in a day; try again tomorrow (TikTok: spam_risk_too_many_posts)',
  });
  browser = new BrowserSession(server);
  await browser.logIn(org.email, org.password);
  await browser.get('/calendar?tz=Europe/Paris');
});
afterAll(async () => {
  await server?.close();
  await mastodon?.close();
});

/** Loads the composer (or an edit form) and sends it with its own token and key, and the given fields. */
async function compose(fields: Record<string, string | string[]>, path = '/compose', action = path): Promise<Response> {
  const html = await (await browser.get(path)).text();
  const form = new URLSearchParams({ csrf_token: inputValue(html, 'csrf_token')! });
  const key = inputValue(html, 'idempotency_key');
  if (key) form.set('idempotency_key', key);
  for (const [name, value] of Object.entries(fields)) for (const one of [value].flat()) form.append(name, one);
  return browser.request(action, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: form.toString(),
  });
}

async function postOf(response: Response): Promise<Schemas['Post']> {
  expect(response.status, await response.clone().text()).toBe(303);
  const id = /^\/posts\/([^?]+)\?created=1$/.exec(response.headers.get('location')!)![1]!;
  return readPost(id);
}

async function readPost(id: string): Promise<Schemas['Post']> {
  const { data, error } = await publicApi(server, org.auth).GET('/public/v1/posts/{id}', { params: { path: { id } } });
  expect(error).toBeUndefined();
  return data!;
}

/** The posts scheduled at `from`, to the second. */
async function postsAt(from: string): Promise<Schemas['Post'][]> {
  const to = new Date(Date.parse(from) + 1000).toISOString();
  const { data } = await publicApi(server, org.auth).GET('/public/v1/posts', { params: { query: { from, to } } });
  return data!.data;
}

/** The message shown next to the field with this id. */
function fieldError(html: string, id: string): string | undefined {
  const match = new RegExp(`<p class="field-error" id="${id}-error">([^<]*)</p>`).exec(html);
  return match ? decodeEntities(match[1]!) : undefined;
}

describe('the composer', () => {
  it('offers the organization’s channels, TikTok’s choices from the creator’s live info, and TikTok’s reason when the account cannot post', async () => {
    const html = await (await browser.get('/compose')).text();
    expect(html).toMatch(
      new RegExp(`value="${channels.sandbox}" id="channel-${channels.sandbox}" data-channel data-provider="sandbox">`),
    );
    // Only the privacy levels the creator allows, none chosen for the user.
    const privacy = new RegExp(`<select id="settings-${channels.tiktok}-privacyLevel"[^>]*>([\\s\\S]*?)</select>`).exec(
      html,
    )![1]!;
    expect([...privacy.matchAll(/<option value="([^"]*)"/g)].map((m) => m[1])).toEqual([
      '',
      'FOLLOWER_OF_CREATOR',
      'SELF_ONLY',
    ]);
    // Duets are off in TikTok: the box is disabled and says so.
    expect(html).toMatch(
      new RegExp(
        `id="settings-${channels.tiktok}-allowDuet" name="settings.${channels.tiktok}.allowDuet" disabled> duet <span class="meta">\\(turned off for this account in TikTok\\)`,
      ),
    );
    expect(html).toMatch(
      new RegExp(`id="settings-${channels.tiktok}-allowComment" name="settings.${channels.tiktok}.allowComment">`),
    );
    // canPost false: the channel cannot be ticked, and TikTok's reason is shown.
    expect(html).toMatch(
      new RegExp(`value="${channels.closed}"[^>]* disabled aria-describedby="channel-${channels.closed}-reason"`),
    );
    expect(decodeEntities(html)).toContain(
      'TikTok does not let this account post now: the account reached the number of posts TikTok allows it in a day; try again tomorrow (TikTok: spam_risk_too_many_posts).',
    );
    // No Google app is configured on this server: its posts would fail, so YouTube cannot be ticked.
    expect(html).toMatch(
      new RegExp(`value="${channels.youtube}"[^>]* disabled aria-describedby="channel-${channels.youtube}-reason"`),
    );
    expect(decodeEntities(html)).toContain(
      'YouTube publishing is not configured on this server, so its posts cannot be made; ask its operator.',
    );
    // The networks' own limits, as their rules count them.
    expect(html).toContain('data-count-for="tiktok" data-max="2200" data-unit="characters"');
    expect(html).toContain('data-count-for="youtube" data-max="5000" data-unit="bytes"');
    expect(html).toContain('data-count-for="sandbox" data-max="20000" data-unit="characters"');
  });

  it('schedules a post with media at the time on the reader’s wall clock', async () => {
    const image = await insertMedia(server.ctx.db, org.id, 'image');
    const post = await postOf(
      await compose({
        channel: channels.sandbox,
        content: 'From the composer',
        media: image,
        date: '2030-03-20',
        time: '09:30',
        action: 'schedule',
      }),
    );
    expect(post).toMatchObject({
      channelId: channels.sandbox,
      content: 'From the composer',
      mediaIds: [image],
      status: 'scheduled',
      scheduledAt: '2030-03-20T08:30:00.000Z',
    });
    const page = await (await browser.get(`/posts/${post.id}?created=1`)).text();
    expect(page).toContain('The post is created.');
  });

  it('publishes now, saves a draft, and makes one post per channel', async () => {
    const now = await postOf(
      await compose({ channel: channels.sandbox, content: 'Right away', date: '', time: '', action: 'now' }),
    );
    expect([now.status, now.scheduledAt]).toEqual(['scheduled', NOW]);
    const draft = await postOf(
      await compose({
        channel: channels.sandbox,
        content: 'Later maybe',
        date: '2030-04-01',
        time: '10:00',
        action: 'draft',
      }),
    );
    expect([draft.status, draft.scheduledAt]).toEqual(['draft', '2030-04-01T08:00:00.000Z']);

    const second = (await createChannel(server.ctx.db, org.id, 'sandbox', 'Second sandbox')).id;
    const both = await compose({
      channel: [channels.sandbox, second],
      content: 'Everywhere',
      date: '2030-03-21',
      time: '18:00',
      action: 'schedule',
    });
    expect(both.status).toBe(303);
    expect(both.headers.get('location')).toBe('/calendar?date=2030-03-21&created=2');
    const listed = await postsAt('2030-03-21T17:00:00Z');
    expect(listed.map((p) => p.channelId).sort()).toEqual([channels.sandbox, second].sort());
    expect(new Set(listed.map((p) => p.group)).size).toBe(1);
  });

  it('shows every problem of the form at once, next to its field, in people’s words', async () => {
    const fields = {
      channel: [channels.sandbox, channels.youtube],
      content: 'Two channels',
      date: '2030-03-20',
      time: '10:00',
      action: 'schedule',
      [`settings.${channels.youtube}.title`]: 'A <b>title</b>',
    };
    const refused = await compose(fields);
    expect(refused.status).toBe(400);
    const html = await refused.text();
    // The API says the same of the body in the validator's words, which integrators read.
    const api = await errorOf(
      await send(server, org.auth, 'POST', '/public/v1/posts', {
        type: 'schedule',
        date: '2030-03-20T09:00:00.000Z',
        posts: [
          { channelId: channels.sandbox, content: 'Two channels', mediaIds: [] },
          {
            channelId: channels.youtube,
            content: 'Two channels',
            mediaIds: [],
            settings: { __type: 'youtube', title: 'A <b>title</b>' },
          },
        ],
      }),
    );
    const byPath = Object.fromEntries((api.details ?? []).map((d) => [d.path, d.message]));
    expect(byPath['posts[1].settings.privacyStatus']).toBe("must have required property 'privacyStatus'");
    expect(fieldError(html, `settings-${channels.youtube}-title`)).toBe('Cannot contain < or >.');
    expect(fieldError(html, `settings-${channels.youtube}-privacyStatus`)).toBe('YouTube needs a privacy setting.');
    expect(fieldError(html, `settings-${channels.youtube}-madeForKids`)).toBe(
      'YouTube needs an answer to “Made for kids?”.',
    );
    // The rules past the contract in the same round: YouTube needs one video.
    expect(fieldError(html, 'media')).toMatch(/^Studio YouTube: A YouTube post needs exactly one video/);
    expect(html).toMatch(
      new RegExp(`<a href="#settings-${channels.youtube}-title">Studio YouTube: Title: Cannot contain`),
    );
    expect(html).not.toMatch(/must (have|match|NOT)/);
    // What was typed is kept.
    expect(inputValue(html, `settings.${channels.youtube}.title`)).toBe('A <b>title</b>');
    expect(html).toMatch(/<textarea id="content"[^>]*>Two channels<\/textarea>/);
    expect(await postsAt('2030-03-20T09:00:00Z')).toEqual([]);

    const rules = await compose({
      ...fields,
      [`settings.${channels.youtube}.title`]: 'Fine title',
      [`settings.${channels.youtube}.privacyStatus`]: 'public',
      [`settings.${channels.youtube}.madeForKids`]: 'no',
    });
    expect(rules.status).toBe(422);
    expect(fieldError(await rules.text(), 'media')).toMatch(/^Studio YouTube: A YouTube post needs exactly one video/);
    const noTime = await compose({
      channel: channels.sandbox,
      content: 'When?',
      date: '',
      time: '',
      action: 'schedule',
    });
    expect(fieldError(await noTime.text(), 'date')).toBe('Choose a day and a time to publish at.');
    const noChannel = await compose({ content: 'Where?', date: '2030-03-20', time: '10:00', action: 'schedule' });
    expect(fieldError(await noChannel.text(), 'channels')).toBe('Choose at least one channel.');
    // The time that has passed is said in the reader's zone (Paris, UTC+1 in March).
    const past = await compose({
      channel: channels.sandbox,
      content: 'Too late',
      date: '2030-03-01',
      time: '10:00',
      action: 'schedule',
    });
    expect(past.status).toBe(422);
    expect(fieldError(await past.text(), 'date')).toBe('This time has passed: it is 2030-03-13 13:00 GMT+1 now.');
  });

  it('sends TikTok settings as chosen, and refuses with TikTok’s rules next to the fields', async () => {
    const video = await insertMedia(server.ctx.db, org.id, 'video', 30_000);
    const base = {
      channel: channels.tiktok,
      content: 'Dance',
      media: video,
      date: '2030-03-20',
      time: '10:00',
      action: 'schedule',
      [`settings.${channels.tiktok}.postMode`]: 'direct',
    };
    const unchosen = await compose(base);
    expect(fieldError(await unchosen.text(), `settings-${channels.tiktok}-privacyLevel`)).toBe(
      'TikTok needs a choice of who can see the video.',
    );
    const post = await postOf(
      await compose({
        ...base,
        [`settings.${channels.tiktok}.privacyLevel`]: 'SELF_ONLY',
        [`settings.${channels.tiktok}.allowComment`]: 'on',
      }),
    );
    expect(post.settings).toEqual({
      __type: 'tiktok',
      postMode: 'direct',
      privacyLevel: 'SELF_ONLY',
      disableComment: false,
      disableDuet: true,
      disableStitch: true,
      brandContentToggle: false,
      brandOrganicToggle: false,
      isAiGenerated: false,
    });
    const notAllowed = await compose({ ...base, [`settings.${channels.tiktok}.privacyLevel`]: 'PUBLIC_TO_EVERYONE' });
    expect(notAllowed.status).toBe(422);
    expect(fieldError(await notAllowed.text(), `settings-${channels.tiktok}-privacyLevel`)).toMatch(
      /allows FOLLOWER_OF_CREATOR, SELF_ONLY; not PUBLIC_TO_EVERYONE/,
    );
  });

  it('creates one post when the same form is sent twice, even at once (idempotency key per page load)', async () => {
    const html = await (await browser.get('/compose')).text();
    const form = new URLSearchParams({
      csrf_token: inputValue(html, 'csrf_token')!,
      idempotency_key: inputValue(html, 'idempotency_key')!,
      channel: channels.sandbox,
      content: 'Double click',
      date: '2030-03-22',
      time: '08:00',
      action: 'schedule',
    });
    const sendForm = () =>
      browser.request('/compose', {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: form.toString(),
      });
    const [first, second] = await Promise.all([sendForm(), sendForm()]);
    const third = await sendForm();
    expect([first.status, second.status, third.status]).toEqual([303, 303, 303]);
    expect(new Set([first, second, third].map((r) => r.headers.get('location'))).size).toBe(1);
    const rows = await server.ctx.db
      .selectFrom('posts')
      .select('id')
      .where('organization_id', '=', org.id)
      .where('content', '=', 'Double click')
      .execute();
    expect(rows).toHaveLength(1);
    // Another load of the composer is another post.
    await postOf(
      await compose({
        channel: channels.sandbox,
        content: 'Double click',
        date: '2030-03-22',
        time: '08:00',
        action: 'schedule',
      }),
    );
    expect(
      await server.ctx.db.selectFrom('posts').select('id').where('content', '=', 'Double click').execute(),
    ).toHaveLength(2);
  });

  it('edits a post, reschedules it, and refuses to edit one on the network', async () => {
    const post = await postOf(
      await compose({
        channel: channels.sandbox,
        content: 'First words',
        date: '2030-03-25',
        time: '09:00',
        action: 'schedule',
      }),
    );
    const form = await (await browser.get(`/posts/${post.id}/edit`)).text();
    expect(form).toMatch(/<textarea id="content"[^>]*>First words<\/textarea>/);
    expect(inputValue(form, 'date')).toBe('2030-03-25');
    expect(inputValue(form, 'time')).toBe('09:00');
    const saved = await compose(
      { channel: channels.youtube, content: 'Better words', date: '2030-03-26', time: '11:15', action: 'schedule' },
      `/posts/${post.id}/edit`,
    );
    expect(saved.status).toBe(303);
    expect(saved.headers.get('location')).toBe(`/posts/${post.id}?saved=1`);
    const edited = await readPost(post.id);
    // The channel of a post is not the form's to change.
    expect(edited).toMatchObject({
      channelId: channels.sandbox,
      content: 'Better words',
      status: 'scheduled',
      scheduledAt: '2030-03-26T10:15:00.000Z',
    });

    // An edit and its move are one change: a move refused (a time long past) leaves the edit unsaved.
    const refused = await compose(
      {
        channel: channels.sandbox,
        content: 'Words never saved',
        date: '2020-01-01',
        time: '09:00',
        action: 'schedule',
      },
      `/posts/${post.id}/edit`,
    );
    expect(refused.status).toBe(422);
    expect(await readPost(post.id)).toMatchObject({
      content: 'Better words',
      scheduledAt: '2030-03-26T10:15:00.000Z',
    });

    await compose(
      { channel: channels.sandbox, content: 'Better words', date: '', time: '', action: 'draft' },
      `/posts/${post.id}/edit`,
    );
    expect((await readPost(post.id)).status).toBe('draft');

    await server.ctx.db.updateTable('posts').set({ status: 'published' }).where('id', '=', post.id).execute();
    expect((await browser.get(`/posts/${post.id}/edit`)).status).toBe(409);
    const stranger = await createOrganization(server.ctx.db, 'Stranger');
    const created = await publicApi(server, stranger.auth).POST('/public/v1/posts', {
      body: {
        type: 'draft',
        channelIds: [(await createChannel(server.ctx.db, stranger.id, 'sandbox')).id],
        content: 'Theirs',
      },
    });
    const theirs = created.data!.data[0]!;
    expect((await browser.get(`/posts/${theirs.id}/edit`)).status).toBe(404);
  });
});

describe('threads, media per part and alternative texts for the text networks', () => {
  const text = { x: '', bluesky: '', mastodon: '' };

  beforeAll(async () => {
    text.x = (await createChannel(server.ctx.db, org.id, 'x', 'Studio X')).id;
    text.bluesky = (await createChannel(server.ctx.db, org.id, 'bluesky', 'Studio Bluesky')).id;
    text.mastodon = (
      await createMastodonChannel(server.ctx.db, server.ctx.keyring, org.id, mastodon.url, 'Studio Mastodon')
    ).id;
  });

  /** The token of a composer page, for its script's requests. */
  async function pageToken(): Promise<string> {
    return inputValue(await (await browser.get('/compose')).text(), 'csrf_token')!;
  }

  it('counts every part as its network counts it: Bluesky’s graphemes, X’s weighted length, the Mastodon instance’s own limit', async () => {
    const html = await (await browser.get('/compose')).text();
    expect(html).toContain(`data-count-for="x" data-max="280" data-unit="weighted" data-channels="${text.x}"`);
    expect(html).toContain(
      `data-count-for="bluesky" data-max="300" data-unit="graphemes" data-channels="${text.bluesky}"`,
    );
    // The instance's /api/v2/instance says 1000, not Mastodon's 500.
    expect(html).toContain(
      `data-count-for="mastodon-${text.mastodon}" data-max="1000" data-unit="graphemes" data-channels="${text.mastodon}"`,
    );
    expect(decodeEntities(html)).toContain('Mastodon status on Studio Mastodon: <span class="count">0</span> of 1000');

    // The page's script asks the server, which counts by the same rules as the API's checks.
    const url = 'https://example.com/a/very/long/path/indeed';
    const answer = await browser.request('/compose/counts', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': await pageToken() },
      body: JSON.stringify({ texts: [`Look ${url} 👍🏽`, '日本語'] }),
    });
    expect(answer.status).toBe(200);
    const { counts } = await bodyOf<{ counts: Record<string, number[]> }>(answer);
    // X: a URL weighs 23 whatever its length, an emoji and a CJK character 2.
    expect(counts.x).toEqual([5 + 23 + 1 + 2, 6]);
    // Bluesky: what a reader sees as characters; the thumb with its skin tone is one.
    expect(counts.bluesky).toEqual([5 + url.length + 1 + 1, 3]);
    // This instance counts a URL as 30 characters.
    expect(counts[`mastodon-${text.mastodon}`]).toEqual([5 + 30 + 1 + 1, 3]);
    expect(counts.youtube).toEqual([Buffer.byteLength(`Look ${url} 👍🏽`), 9]);

    const refused = await browser.request('/compose/counts', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': await pageToken() },
      body: JSON.stringify({ texts: 'not a list' }),
    });
    expect(refused.status).toBe(400);
    const forged = await browser.request('/compose/counts', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ texts: [] }),
    });
    expect(forged.status).toBe(403);
  });

  it('adds parts to the thread and removes them without a script, keeping what was typed', async () => {
    const added = await compose({ channel: text.x, content: 'First', action: 'add-part' });
    expect(added.status).toBe(200);
    let html = await added.text();
    expect(html).toMatch(/<textarea id="content"[^>]*>First<\/textarea>/);
    // The new part's text, where the page starts, with its own counts.
    expect(html).toMatch(/<textarea id="thread-0-content" name="thread\.0\.content"[^>]* autofocus[^>]*><\/textarea>/);
    expect(html).toContain('id="thread-0-content-counts"');
    expect(html).toContain(
      '<button type="submit" name="action" value="remove-part-1" class="secondary">Remove part 2</button>',
    );

    const three = await compose({
      channel: text.x,
      content: 'First',
      'thread.0.content': 'Second',
      'thread.1.content': `Third ${'x'.repeat(300)}`,
      action: 'remove-part-1',
    });
    html = await three.text();
    expect(html).toMatch(/<textarea id="thread-0-content"[^>]*>Third x+<\/textarea>/);
    expect(html).not.toContain('id="thread-1-content"');
    // Counted on the server too: the third part, now the second, is over X's 280.
    expect(html).toMatch(
      /id="thread-0-content-counts">\s*<li data-count-for="sandbox"[^>]*>[^<]*<span class="count">306<\/span>/,
    );
    expect(html).toMatch(/<li data-count-for="x" [^>]* class="over">X post: <span class="count">306<\/span>/);
  });

  it('sends the parts as the post’s thread, each with its media and their alternative texts', async () => {
    const [first, second, unchosen] = [
      await insertMedia(server.ctx.db, org.id, 'image'),
      await insertMedia(server.ctx.db, org.id, 'image'),
      await insertMedia(server.ctx.db, org.id, 'image'),
    ];
    const form = await (await browser.get('/compose')).text();
    // Every image of the library can be given an alternative text, in every part.
    expect(form).toContain(`<textarea id="alt-${first}" name="alt.${first}" rows="2"></textarea>`);
    const created = await compose({
      channel: [channels.sandbox, text.mastodon],
      content: 'A thread, part one',
      media: first,
      [`alt.${first}`]: 'A red square on white',
      // Typed for an image that is not chosen: not sent.
      [`alt.${unchosen}`]: 'Never chosen',
      'thread.0.content': 'Part two',
      'thread.0.media': second,
      [`thread.0.alt.${second}`]: 'A blue circle',
      'thread.1.content': 'Part three',
      date: '2030-03-27',
      time: '09:00',
      action: 'schedule',
    });
    expect(created.status).toBe(303);
    const posts = await postsAt('2030-03-27T08:00:00.000Z');
    expect(posts.map((post) => post.channelId).sort()).toEqual([channels.sandbox, text.mastodon].sort());
    for (const post of posts) {
      expect(post).toMatchObject({
        content: 'A thread, part one',
        mediaIds: [first],
        altTexts: { [first]: 'A red square on white' },
        thread: [
          { content: 'Part two', mediaIds: [second], altTexts: { [second]: 'A blue circle' }, releaseId: null },
          { content: 'Part three', mediaIds: [], altTexts: {}, releaseId: null },
        ],
      });
    }
  });

  it('sends no alternative text to a network that takes none (the API would refuse it)', async () => {
    const video = await insertMedia(server.ctx.db, org.id, 'video', 30_000);
    const post = await postOf(
      await compose({
        channel: channels.youtube,
        content: 'A video',
        media: video,
        [`alt.${video}`]: 'What the video shows',
        [`settings.${channels.youtube}.title`]: 'A video',
        [`settings.${channels.youtube}.privacyStatus`]: 'public',
        [`settings.${channels.youtube}.madeForKids`]: 'no',
        date: '2030-03-27',
        time: '10:00',
        action: 'schedule',
      }),
    );
    expect([post.mediaIds, post.altTexts]).toEqual([[video], {}]);
    // Its edit form offers no such field.
    const edit = await (await browser.get(`/posts/${post.id}/edit`)).text();
    expect(edit).not.toContain('name="alt.');
  });

  it('shows the API’s complaints next to the part and the field they name', async () => {
    const image = await insertMedia(server.ctx.db, org.id, 'image');
    const fields = {
      channel: [text.x, channels.youtube],
      content: 'Fine',
      media: image,
      [`alt.${image}`]: 'a'.repeat(1001),
      'thread.0.content': `Far too long ${'y'.repeat(280)}`,
      'thread.1.content': '',
      [`settings.${channels.youtube}.title`]: 'Title',
      [`settings.${channels.youtube}.privacyStatus`]: 'public',
      [`settings.${channels.youtube}.madeForKids`]: 'no',
      date: '2030-03-27',
      time: '11:00',
      action: 'schedule',
    };
    const refused = await compose(fields);
    expect(refused.status).toBe(422);
    const html = await refused.text();
    const thread = [
      { content: `Far too long ${'y'.repeat(280)}`, mediaIds: [] },
      { content: '', mediaIds: [] },
    ];
    const api = await errorOf(
      await send(server, org.auth, 'POST', '/public/v1/posts', {
        type: 'schedule',
        date: '2030-03-27T10:00:00.000Z',
        posts: [
          { channelId: text.x, content: 'Fine', mediaIds: [image], altTexts: { [image]: 'a'.repeat(1001) }, thread },
          {
            channelId: channels.youtube,
            content: 'Fine',
            mediaIds: [image],
            settings: { __type: 'youtube', title: 'Title', privacyStatus: 'public', madeForKids: false },
            thread,
          },
        ],
      }),
    );
    const byPath = Object.fromEntries((api.details ?? []).map((d) => [d.path, d.message]));
    expect(Object.keys(byPath)).toEqual(
      expect.arrayContaining([
        'posts[0].thread[0].content',
        'posts[0].thread[1].content',
        `posts[0].altTexts.${image}`,
        'posts[1].thread',
      ]),
    );
    expect(fieldError(html, 'thread-0-content')).toBe(`Studio X: ${byPath['posts[0].thread[0].content']}`);
    expect(fieldError(html, 'thread-1-content')).toBe(`Studio X: ${byPath['posts[0].thread[1].content']}`);
    expect(fieldError(html, `alt-${image}`)).toBe(`Studio X: ${byPath[`posts[0].altTexts.${image}`]}`);
    expect(fieldError(html, 'thread')).toBe(`Studio YouTube: ${byPath['posts[1].thread']}`);
    expect(decodeEntities(html)).toContain(
      `<a href="#thread-0-content">Part 2: Text: Studio X: ${byPath['posts[0].thread[0].content']}`,
    );
    // What was typed is kept, each part in its place.
    expect(html).toMatch(/<textarea id="thread-0-content"[^>]*>Far too long y+<\/textarea>/);
    expect(html).toContain(
      `name="alt.${image}" rows="2" aria-invalid="true" aria-describedby="alt-${image}-error">aaaa`,
    );
  });

  it('sends each text network’s settings as chosen, shows them again to edit, and refuses with the contract’s words', async () => {
    const html = await (await browser.get('/compose')).text();
    // Every choice starts at the network's default.
    expect(html).toContain('<option value="public" selected>Everyone, in public timelines</option>');
    expect(html).toContain('<option value="everyone" selected>Everyone</option>');
    expect(html).toMatch(new RegExp(`name="settings\\.${text.bluesky}\\.linkCard" value="yes" checked>`));
    const fields = {
      channel: [text.mastodon, text.x, text.bluesky],
      content: 'Settings for every network',
      [`settings.${text.mastodon}.visibility`]: 'unlisted',
      [`settings.${text.mastodon}.spoilerText`]: 'Spoilers',
      [`settings.${text.mastodon}.sensitive`]: 'on',
      [`settings.${text.mastodon}.language`]: 'en',
      [`settings.${text.x}.replySettings`]: 'following',
      [`settings.${text.bluesky}.languages`]: 'en, pt-BR',
      [`settings.${text.bluesky}.linkCard`]: 'no',
      date: '2030-03-27',
      time: '12:00',
      action: 'schedule',
    };
    const created = await compose(fields);
    expect(created.status).toBe(303);
    const posts = await postsAt('2030-03-27T11:00:00.000Z');
    const settingsOf = (channelId: string) => posts.find((post) => post.channelId === channelId)!.settings;
    expect(settingsOf(text.mastodon)).toEqual({
      __type: 'mastodon',
      visibility: 'unlisted',
      spoilerText: 'Spoilers',
      sensitive: true,
      language: 'en',
    });
    expect(settingsOf(text.x)).toEqual({ __type: 'x', replySettings: 'following' });
    expect(settingsOf(text.bluesky)).toEqual({ __type: 'bluesky', languages: ['en', 'pt-BR'], linkCard: false });

    const bluesky = posts.find((post) => post.channelId === text.bluesky)!;
    const edit = await (await browser.get(`/posts/${bluesky.id}/edit`)).text();
    expect(inputValue(edit, `settings.${text.bluesky}.languages`)).toBe('en, pt-BR');
    expect(edit).toMatch(new RegExp(`name="settings\\.${text.bluesky}\\.linkCard" value="no" checked>`));
    const mastodonEdit = await (
      await browser.get(`/posts/${posts.find((post) => post.channelId === text.mastodon)!.id}/edit`)
    ).text();
    expect(mastodonEdit).toContain('<option value="unlisted" selected>');
    expect(inputValue(mastodonEdit, `settings.${text.mastodon}.spoilerText`)).toBe('Spoilers');
    expect(mastodonEdit).toMatch(new RegExp(`id="settings-${text.mastodon}-sensitive" [^>]*checked>`));

    const refused = await compose({ ...fields, [`settings.${text.bluesky}.languages`]: 'English' });
    expect(refused.status).toBe(400);
    expect(fieldError(await refused.text(), `settings-${text.bluesky}-languages`)).toBe(
      'Needs language codes such as en or pt-BR.',
    );
  });

  it('shows every problem of an edit at once: the contract’s, the network’s rules and a time that has passed', async () => {
    const created = await compose({
      channel: text.bluesky,
      content: 'Short enough',
      date: '2030-03-28',
      time: '12:00',
      action: 'schedule',
    });
    const post = await postOf(created);
    const refused = await compose(
      {
        content: 'a'.repeat(301),
        [`settings.${text.bluesky}.languages`]: 'English',
        [`settings.${text.bluesky}.linkCard`]: 'yes',
        date: '2030-03-01',
        time: '10:00',
        action: 'schedule',
      },
      `/posts/${post.id}/edit`,
    );
    expect(refused.status).toBe(400);
    const html = await refused.text();
    expect(fieldError(html, `settings-${text.bluesky}-languages`)).toBe('Needs language codes such as en or pt-BR.');
    expect(fieldError(html, 'content')).toMatch(/300/);
    expect(fieldError(html, 'date')).toBe('This time has passed: it is 2030-03-13 13:00 GMT+1 now.');
    expect(html).not.toMatch(/must (have|match|NOT)/);
    expect(await readPost(post.id)).toMatchObject({ content: 'Short enough', scheduledAt: '2030-03-28T11:00:00.000Z' });

    // Without the contract's problem, the rules' and the time's still come together, as a 422.
    const rules = await compose(
      { content: 'a'.repeat(301), date: '2030-03-01', time: '10:00', action: 'schedule' },
      `/posts/${post.id}/edit`,
    );
    expect(rules.status).toBe(422);
    const again = await rules.text();
    expect(fieldError(again, 'content')).toMatch(/300/);
    expect(fieldError(again, 'date')).toBe('This time has passed: it is 2030-03-13 13:00 GMT+1 now.');
  });

  it('keeps the alternative text of an image older than the media the composer lists', async () => {
    const old = await insertMedia(server.ctx.db, org.id, 'image');
    const created = await publicApi(server, org.auth).POST('/public/v1/posts', {
      body: {
        type: 'draft',
        posts: [{ channelId: channels.sandbox, content: 'Old picture', mediaIds: [old], altTexts: { [old]: 'Old' } }],
      },
    });
    const post = created.data!.data[0]!;
    // The composer lists the newest 60 media: these push the post's image out of the list.
    for (let i = 0; i < 60; i++) await insertMedia(server.ctx.db, org.id, 'image');
    const form = await (await browser.get(`/posts/${post.id}/edit`)).text();
    expect(form).toContain(`<code>${old}</code>`);
    expect(form).toContain(`<textarea id="alt-${old}" name="alt.${old}" rows="2">Old</textarea>`);
    const saved = await compose(
      { content: 'Old picture, new words', media: old, [`alt.${old}`]: 'Old', action: 'draft' },
      `/posts/${post.id}/edit`,
    );
    expect(saved.status).toBe(303);
    expect(await readPost(post.id)).toMatchObject({ content: 'Old picture, new words', altTexts: { [old]: 'Old' } });
  });

  it('edits a thread: its parts are shown, and the parts already published are kept as they went out', async () => {
    const image = await insertMedia(server.ctx.db, org.id, 'image');
    const created = await publicApi(server, org.auth).POST('/public/v1/posts', {
      body: {
        type: 'schedule',
        date: '2030-03-28T09:00:00.000Z',
        posts: [
          {
            channelId: channels.sandbox,
            content: 'One',
            thread: [
              { content: 'Two', mediaIds: [image], altTexts: { [image]: 'A green square' } },
              { content: 'Three' },
            ],
          },
        ],
      },
    });
    const post = created.data!.data[0]!;
    const form = await (await browser.get(`/posts/${post.id}/edit`)).text();
    expect(form).toMatch(/<textarea id="content"[^>]*>One<\/textarea>/);
    expect(form).toMatch(/<textarea id="thread-0-content" name="thread\.0\.content"[^>]*>Two<\/textarea>/);
    expect(form).toMatch(/<textarea id="thread-1-content" name="thread\.1\.content"[^>]*>Three<\/textarea>/);
    expect(form).toMatch(new RegExp(`name="thread\\.0\\.media" value="${image}" checked>`));
    expect(form).toContain(`name="thread.0.alt.${image}" rows="2">A green square</textarea>`);

    // The first two parts went out, then the third failed.
    const stored = await server.ctx.db
      .selectFrom('posts')
      .select('thread')
      .where('id', '=', post.id)
      .executeTakeFirstOrThrow();
    await server.ctx.db
      .updateTable('posts')
      .set({
        status: 'failed',
        release_id: 'one',
        release_url: 'https://sandbox.example/one',
        error_code: 'rejected_by_network',
        error_message: 'Part 3 was refused.',
        thread: JSON.stringify([
          { ...stored.thread[0]!, releaseId: 'two', releaseUrl: 'https://sandbox.example/two' },
          stored.thread[1]!,
        ]),
      })
      .where('id', '=', post.id)
      .execute();
    const failed = await (await browser.get(`/posts/${post.id}/edit`)).text();
    // Published: shown, with no field to change them, and not removable.
    expect(failed).not.toContain('id="content"');
    expect(failed).not.toContain('id="thread-0-content"');
    expect(failed).not.toContain('value="remove-part-1"');
    expect(failed).toContain('<a href="https://sandbox.example/two">see it</a>');
    expect(failed).toMatch(/<textarea id="thread-1-content" name="thread\.1\.content"[^>]*>Three<\/textarea>/);

    // Fields for the published parts, sent anyway, change nothing; the part after them changes.
    const saved = await compose(
      {
        content: 'Changed after the fact',
        'thread.0.content': 'Changed too',
        'thread.1.content': 'Three, better',
        date: '2030-03-29',
        time: '10:00',
        action: 'draft',
      },
      `/posts/${post.id}/edit`,
    );
    expect(saved.status, await saved.clone().text()).toBe(303);
    const edited = await readPost(post.id);
    expect(edited).toMatchObject({
      content: 'One',
      status: 'draft',
      thread: [
        { content: 'Two', mediaIds: [image], altTexts: { [image]: 'A green square' }, releaseId: 'two' },
        { content: 'Three, better', releaseId: null },
      ],
    });
    // Removing a published part is not the form's to do: the thread stays whole.
    const removed = await compose(
      { 'thread.1.content': 'Three, better', action: 'remove-part-1' },
      `/posts/${post.id}/edit`,
    );
    expect(await removed.text()).toMatch(/<textarea id="thread-1-content"[^>]*>Three, better<\/textarea>/);
  });
});

describe('first comments and the settings of Meta’s networks', () => {
  const meta = { facebook: '', instagram: '', threads: '' };

  beforeAll(async () => {
    meta.facebook = (await createChannel(server.ctx.db, org.id, 'facebook', 'Studio Page')).id;
    meta.instagram = (await createChannel(server.ctx.db, org.id, 'instagram', 'Studio Instagram')).id;
    meta.threads = (await createChannel(server.ctx.db, org.id, 'threads', 'Studio Threads')).id;
  });

  /** The counter of a network under the field whose counts list has this id. */
  const counter = (html: string, list: string, key: string) =>
    new RegExp(`<ul class="counts" id="${list}">[\\s\\S]*?<li data-count-for="${key}" ([^>]*)>([^<]*)<span`).exec(html);

  it('offers a first comment for the networks that take comments, counted by each one’s limit, and each network’s settings', async () => {
    const html = decodeEntities(await (await browser.get('/compose')).text());
    // The sandbox, Facebook and Instagram take comments; X, Threads, YouTube, TikTok do not.
    expect(html).toContain('data-first-comment data-networks="sandbox facebook instagram"');
    expect(html).toMatch(/<label for="firstComment">First comment<\/label>/);
    expect(counter(html, 'firstComment-counts', 'instagram')).toMatchObject({
      1: `data-max="2200" data-unit="characters" data-channels="${meta.instagram}"`,
      2: 'Instagram comment: ',
    });
    expect(counter(html, 'firstComment-counts', 'facebook')![1]).toContain('data-max="8000"');
    expect(counter(html, 'firstComment-counts', 'sandbox')![1]).toContain('data-max="8000"');
    expect(counter(html, 'firstComment-counts', 'x')).toBeNull();
    // The post's text, counted for each of the three by its own limit.
    expect(counter(html, 'content-counts', 'instagram')).toMatchObject({ 2: 'Instagram caption: ' });
    expect(counter(html, 'content-counts', 'instagram')![1]).toContain('data-max="2200"');
    expect(counter(html, 'content-counts', 'facebook')![1]).toContain('data-max="63206"');
    expect(counter(html, 'content-counts', 'threads')![1]).toContain('data-max="500"');
    // Each network's settings: Facebook's link, Instagram's kind of post (feed by default, a reel shared
    // to the feed), its collaborators, and who may reply on Threads.
    expect(html).toContain(`id="settings-${meta.facebook}-link" name="settings.${meta.facebook}.link"`);
    expect(html).toMatch(new RegExp(`name="settings\\.${meta.instagram}\\.postType" value="feed" checked>`));
    expect(html).toMatch(new RegExp(`name="settings\\.${meta.instagram}\\.postType" value="reel">`));
    expect(html).toContain(
      `id="settings-${meta.instagram}-shareToFeed" name="settings.${meta.instagram}.shareToFeed" checked>`,
    );
    expect(html).toContain(`id="settings-${meta.instagram}-collaborators"`);
    const reply = new RegExp(`<select id="settings-${meta.threads}-replyControl"[^>]*>([\\s\\S]*?)</select>`).exec(
      html,
    )![1]!;
    expect([...reply.matchAll(/<option value="([^"]*)"/g)].map((m) => m[1])).toEqual([
      'everyone',
      'accounts_you_follow',
      'mentioned_only',
    ]);
  });

  it('counts a first comment live by each network’s limit', async () => {
    const token = inputValue(await (await browser.get('/compose')).text(), 'csrf_token')!;
    const response = await browser.request('/compose/counts', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': token },
      body: JSON.stringify({ texts: ['Caption'], comment: 'Link in bio 🍰\r\nsee you' }),
    });
    expect(response.status).toBe(200);
    const { comment } = (await response.json()) as { comment: Record<string, number> };
    // Counted as the API's check counts it: UTF-16 code units, a line break one.
    expect(comment).toEqual({ sandbox: 22, facebook: 22, instagram: 22 });
  });

  it('sends the first comment to the networks that take comments only, and each network’s settings as chosen', async () => {
    const [image, video] = await Promise.all([
      insertMedia(server.ctx.db, org.id, 'image'),
      insertMedia(server.ctx.db, org.id, 'video', 20_000),
    ]);
    const response = await compose({
      channel: [channels.sandbox, meta.facebook, meta.instagram, meta.threads],
      content: 'Our new shop',
      media: video,
      firstComment: 'Open from 9 to 5\r\nwww.example.com',
      [`settings.${meta.facebook}.link`]: '',
      [`settings.${meta.instagram}.postType`]: 'reel',
      [`settings.${meta.instagram}.collaborators`]: '@ada, grace.h',
      [`settings.${meta.threads}.replyControl`]: 'mentioned_only',
      date: '2030-04-02',
      time: '10:00',
      action: 'draft',
    });
    expect(response.status, await response.clone().text()).toBe(303);
    const posts = await postsAt('2030-04-02T08:00:00.000Z');
    const of = (channelId: string) => posts.find((post) => post.channelId === channelId)!;
    const comment = { content: 'Open from 9 to 5\nwww.example.com', releaseId: null, releaseUrl: null };
    expect(of(channels.sandbox).firstComment).toEqual(comment);
    expect(of(meta.facebook)).toMatchObject({ firstComment: comment, settings: { __type: 'facebook' } });
    expect(of(meta.instagram)).toMatchObject({
      firstComment: comment,
      settings: { __type: 'instagram', postType: 'reel', shareToFeed: false, collaborators: ['ada', 'grace.h'] },
    });
    // Threads has no comments: the post goes without it (a thread is its way).
    expect(of(meta.threads)).toMatchObject({
      firstComment: null,
      settings: { __type: 'threads', replyControl: 'mentioned_only' },
    });

    // An Instagram post, edited: its comment and settings are shown again, its user tags in its image's field.
    await publicApi(server, org.auth).PATCH('/public/v1/posts/{id}', {
      params: { path: { id: of(meta.instagram).id } },
      body: {
        mediaIds: [image],
        settings: {
          __type: 'instagram',
          postType: 'feed',
          collaborators: ['ada'],
          userTags: [{ mediaId: image, username: 'grace.h', x: 0.25, y: 0.75 }],
        },
      },
    });
    const path = `/posts/${of(meta.instagram).id}/edit`;
    const raw = await (await browser.get(path)).text();
    const form = decodeEntities(raw);
    expect(form).toMatch(
      /<textarea id="firstComment" name="firstComment"[^>]*>Open from 9 to 5\nwww\.example\.com<\/textarea>/,
    );
    expect(form).toMatch(new RegExp(`name="settings\\.${meta.instagram}\\.postType" value="feed" checked>`));
    // The edit through the API left out shareToFeed: its default (true) again.
    expect(form).toContain(`name="settings.${meta.instagram}.shareToFeed" checked>`);
    expect(form).toContain(`name="settings.${meta.instagram}.collaborators" value="ada"`);
    const tagField = `settings.${meta.instagram}.userTags.${image}`;
    expect(inputValue(raw, tagField)).toBe('@grace.h 25 75');
    expect(form).toMatch(new RegExp(`<details id="settings-${meta.instagram}-userTags" class="user-tags" open>`));
    const saved = await compose(
      {
        content: 'Our new shop, in pictures',
        media: image,
        firstComment: '',
        [`settings.${meta.instagram}.postType`]: 'feed',
        [`settings.${meta.instagram}.collaborators`]: 'ada',
        // Another account tagged, without a position: in the image's middle.
        [tagField]: `${inputValue(raw, tagField)!}, ada`,
        date: '2030-04-02',
        time: '10:00',
        action: 'draft',
      },
      path,
    );
    expect(saved.status, await saved.clone().text()).toBe(303);
    // An emptied field is no comment.
    expect(await readPost(of(meta.instagram).id)).toMatchObject({
      content: 'Our new shop, in pictures',
      firstComment: null,
      settings: {
        postType: 'feed',
        userTags: [
          { mediaId: image, username: 'grace.h', x: 0.25, y: 0.75 },
          { mediaId: image, username: 'ada', x: 0.5, y: 0.5 },
        ],
      },
    });
  });

  it('tags people on each image of an Instagram post, with what is wrong next to the image’s field', async () => {
    const [first, second] = await Promise.all([
      insertMedia(server.ctx.db, org.id, 'image'),
      insertMedia(server.ctx.db, org.id, 'image'),
    ]);
    const html = decodeEntities(await (await browser.get('/compose')).text());
    // A field for each image, closed until something is typed, and no JavaScript needed to use it.
    expect(html).toMatch(new RegExp(`<details id="settings-${meta.instagram}-userTags" class="user-tags">`));
    expect(html).toContain(`<label for="settings-${meta.instagram}-userTags-${second}">Tagged on photo.jpg</label>`);
    const fields = {
      channel: meta.instagram,
      content: 'Two tables',
      media: [first, second],
      [`position.${first}`]: '1',
      [`position.${second}`]: '2',
      [`settings.${meta.instagram}.postType`]: 'feed',
      date: '2030-04-06',
      time: '10:00',
      action: 'draft',
    };
    // Unreadable on the first image; on the second, a username Instagram does not allow and a place
    // beyond the image's edge, which the contract's check refuses.
    const refused = await compose({
      ...fields,
      [`settings.${meta.instagram}.userTags.${first}`]: '@ada 30',
      [`settings.${meta.instagram}.userTags.${second}`]: '@grace.h 10 20, bad/name 50 50, @linus 120 50',
    });
    expect(refused.status).toBe(400);
    const raw = await refused.text();
    const page = decodeEntities(raw);
    expect(fieldError(raw, `settings-${meta.instagram}-userTags-${first}`)).toBe(
      '“@ada 30” is not a username followed by where on the image, as @ada 30 70 (percent from the left, then from the top).',
    );
    // The contract's refusals of the second and third tags of the field, in people's words.
    expect(fieldError(raw, `settings-${meta.instagram}-userTags-${second}`)).toBe(
      'A username may hold only letters, digits, full stops and underscores. ' +
        'A tag is placed within the image: from 0 to 100 percent from its left and from its top.',
    );
    expect(page).toMatch(new RegExp(`<details id="settings-${meta.instagram}-userTags" class="user-tags" open>`));
    expect(page).toContain(
      `name="settings.${meta.instagram}.userTags.${second}" value="@grace.h 10 20, bad/name 50 50, @linus 120 50"`,
    );

    // A tag on a reel: Instagram's rule, shown next to the image it was typed for.
    const reel = await compose({
      ...fields,
      media: first,
      [`settings.${meta.instagram}.postType`]: 'reel',
      [`settings.${meta.instagram}.userTags.${first}`]: '@ada',
    });
    expect(reel.status).toBe(422);
    expect(fieldError(await reel.text(), `settings-${meta.instagram}-userTags-${first}`)).toContain(
      'Tags are placed on images, not on a reel.',
    );

    const post = await postOf(
      await compose({
        ...fields,
        [`settings.${meta.instagram}.userTags.${first}`]: '@ada 30 70',
        [`settings.${meta.instagram}.userTags.${second}`]: 'grace.h 10% 20%, @linus',
      }),
    );
    expect(post.settings).toMatchObject({
      __type: 'instagram',
      userTags: [
        { mediaId: first, username: 'ada', x: 0.3, y: 0.7 },
        { mediaId: second, username: 'grace.h', x: 0.1, y: 0.2 },
        { mediaId: second, username: 'linus', x: 0.5, y: 0.5 },
      ],
    });
  });

  it('sends a carousel’s media in the order of the positions typed next to them, and shows them again', async () => {
    const [a, b, c] = await Promise.all([1, 2, 3].map(() => insertMedia(server.ctx.db, org.id, 'image')));
    // Chosen a, b, c as the page lists them; c put first, a second, b left without a position.
    const response = await compose({
      channel: meta.instagram,
      content: 'Three dishes',
      media: [a!, b!, c!],
      [`position.${c}`]: '1',
      [`position.${a}`]: '2',
      [`position.${b}`]: '',
      date: '2030-04-05',
      time: '10:00',
      action: 'draft',
    });
    const post = await postOf(response);
    expect(post.mediaIds).toEqual([c, a, b]);
    const form = await (await browser.get(`/posts/${post.id}/edit`)).text();
    const position = (id: string) => inputValue(form, `position.${id}`);
    expect([position(c!), position(a!), position(b!)]).toEqual(['1', '2', '3']);
    expect(form).toContain(`<label for="position-${c}">Position<span class="visually-hidden"> of photo.jpg</span>`);
  });

  it('shows the API’s refusals of a comment and of each network’s media next to their fields', async () => {
    const image = await insertMedia(server.ctx.db, org.id, 'image');
    const fields = {
      channel: [meta.instagram, meta.facebook],
      content: 'Spring',
      media: image,
      firstComment: 'a'.repeat(2201),
      [`settings.${meta.instagram}.postType`]: 'reel',
      [`settings.${meta.facebook}.link`]: 'https://example.com/spring',
      date: '2030-04-03',
      time: '10:00',
      action: 'schedule',
    };
    const refused = await compose(fields);
    expect(refused.status).toBe(422);
    const html = await refused.text();
    const api = await errorOf(
      await send(server, org.auth, 'POST', '/public/v1/posts', {
        type: 'schedule',
        date: '2030-04-03T08:00:00.000Z',
        posts: [
          {
            channelId: meta.instagram,
            content: 'Spring',
            mediaIds: [image],
            firstComment: { content: 'a'.repeat(2201) },
            settings: { __type: 'instagram', postType: 'reel' },
          },
          {
            channelId: meta.facebook,
            content: 'Spring',
            mediaIds: [image],
            firstComment: { content: 'a'.repeat(2201) },
            settings: { __type: 'facebook', link: 'https://example.com/spring' },
          },
        ],
      }),
    );
    const byPath = Object.fromEntries((api.details ?? []).map((d) => [d.path, d.message]));
    expect(Object.keys(byPath).sort()).toEqual([
      'posts[0].firstComment.content',
      'posts[0].mediaIds',
      'posts[1].settings.link',
    ]);
    expect(fieldError(html, 'firstComment')).toBe(`Studio Instagram: ${byPath['posts[0].firstComment.content']}`);
    expect(fieldError(html, 'media')).toBe(`Studio Instagram: ${byPath['posts[0].mediaIds']}`);
    expect(fieldError(html, `settings-${meta.facebook}-link`)).toBe(byPath['posts[1].settings.link']);
    expect(decodeEntities(html)).toContain(
      `<a href="#firstComment">First comment: Studio Instagram: ${byPath['posts[0].firstComment.content']}`,
    );
    // What was typed is kept.
    expect(html).toMatch(
      /<textarea id="firstComment" name="firstComment" rows="3" data-comment-text aria-invalid="true" aria-describedby="firstComment-hint firstComment-counts firstComment-error">a{2201}<\/textarea>/,
    );
    expect(counter(html, 'firstComment-counts', 'instagram')![1]).toContain('class="over"');
  });

  it('shows a published comment without a field and keeps it as it went out', async () => {
    const created = await publicApi(server, org.auth).POST('/public/v1/posts', {
      body: {
        type: 'draft',
        posts: [{ channelId: meta.facebook, content: 'Menu', firstComment: { content: 'Prices inside' } }],
      },
    });
    const post = created.data!.data[0]!;
    // The post and its comment went out; the post failed after them (as a network may leave it).
    await server.ctx.db
      .updateTable('posts')
      .set({
        status: 'failed',
        release_id: 'p1',
        release_url: 'https://facebook.example/p1',
        error_code: 'outcome_unknown',
        error_message: 'Lost.',
        first_comment: JSON.stringify({
          content: 'Prices inside',
          releaseId: 'c1',
          releaseUrl: 'https://facebook.example/p1?comment_id=c1',
          reference: null,
        }),
      })
      .where('id', '=', post.id)
      .execute();
    const form = await (await browser.get(`/posts/${post.id}/edit`)).text();
    expect(form).not.toContain('id="firstComment" name="firstComment"');
    expect(decodeEntities(form)).toContain('<a href="https://facebook.example/p1?comment_id=c1">see it</a>');
    expect(form).toContain('<blockquote class="published-part">Prices inside</blockquote>');
    // A field sent all the same changes nothing: the comment is not sent (the API would answer 409).
    const saved = await compose(
      { firstComment: 'Prices changed', date: '2030-04-04', time: '10:00', action: 'draft' },
      `/posts/${post.id}/edit`,
    );
    expect(saved.status, await saved.clone().text()).toBe(303);
    expect((await readPost(post.id)).firstComment).toMatchObject({ content: 'Prices inside', releaseId: 'c1' });

    // The post's page shows it with its link.
    const page = decodeEntities(await (await browser.get(`/posts/${post.id}`)).text());
    expect(page).toMatch(
      /<div class="first-comment" data-first-comment><div class="post-content">Prices inside<\/div>\s*<span class="meta">\s*<a href="https:\/\/facebook\.example\/p1\?comment_id=c1">on the network<\/a>/,
    );
  });
});

describe('LinkedIn in the composer', () => {
  let linkedin = '';

  beforeAll(async () => {
    linkedin = (await createChannel(server.ctx.db, org.id, 'linkedin', 'Studio LinkedIn')).id;
  });

  it('counts by LinkedIn’s limits, offers its first comment and settings, and sends them as chosen', async () => {
    const html = decodeEntities(await (await browser.get('/compose')).text());
    expect(html).toMatch(/data-first-comment data-networks="[^"]*\blinkedin\b/);
    const count = (list: string) =>
      new RegExp(`<ul class="counts" id="${list}">[\\s\\S]*?<li data-count-for="linkedin" ([^>]*)>`).exec(html)![1]!;
    expect(count('content-counts')).toContain('data-max="3000"');
    expect(count('firstComment-counts')).toContain('data-max="1250"');
    const visibility = new RegExp(`<select id="settings-${linkedin}-visibility"[^>]*>([\\s\\S]*?)</select>`).exec(
      html,
    )![1]!;
    expect([...visibility.matchAll(/<option value="([^"]*)"/g)].map((m) => m[1])).toEqual([
      'PUBLIC',
      'CONNECTIONS',
      'LOGGED_IN',
    ]);

    const response = await compose({
      channel: [linkedin],
      content: 'Hiring (two) bakers',
      firstComment: 'Apply at acme.example',
      [`settings.${linkedin}.visibility`]: 'LOGGED_IN',
      [`settings.${linkedin}.disableReshare`]: 'on',
      date: '2030-05-02',
      time: '10:00',
      action: 'draft',
    });
    expect(response.status, await response.clone().text()).toBe(303);
    const [post] = await postsAt('2030-05-02T08:00:00.000Z');
    expect(post).toMatchObject({
      channelId: linkedin,
      content: 'Hiring (two) bakers',
      firstComment: { content: 'Apply at acme.example' },
      settings: { __type: 'linkedin', visibility: 'LOGGED_IN', disableReshare: true },
    });
    const form = decodeEntities(await (await browser.get(`/posts/${post!.id}/edit`)).text());
    expect(form).toContain('<option value="LOGGED_IN" selected>');
    expect(form).toContain(`name="settings.${linkedin}.disableReshare" checked>`);
  });
});

describe('the signed upload from the pages', () => {
  const uploadBody = (size: number) => ({ fileName: 'red.png', contentType: 'image/png', size });

  async function token(): Promise<string> {
    return inputValue(await (await browser.get('/media')).text(), 'csrf_token')!;
  }

  it('runs the API’s three steps with the session and its CSRF token', async () => {
    const bytes = png(8, 8, [200, 0, 0, 255]);
    const csrf = await token();
    const created = await browser.request('/media/uploads', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrf },
      body: JSON.stringify(uploadBody(bytes.length)),
    });
    expect(created.status).toBe(201);
    const upload = await bodyOf<Schemas['Upload']>(created);
    const put = await fetch(upload.uploadUrl, { method: 'PUT', headers: upload.headers, body: bytes });
    expect(put.status).toBe(200);
    const completed = await browser.request(`/media/uploads/${upload.uploadId}/complete`, {
      method: 'POST',
      headers: { 'X-CSRF-Token': csrf },
    });
    expect(completed.status).toBe(200);
    const media = await bodyOf<Schemas['Media']>(completed);
    expect(media).toMatchObject({ fileName: 'red.png', contentType: 'image/png', kind: 'image', size: bytes.length });
    const { data: library } = await publicApi(server, org.auth).GET('/public/v1/media');
    expect(library?.data.map((m) => m.id)).toContain(media.id);
  });

  it('answers the API’s envelope and details for a bad declaration, and refuses without the token', async () => {
    const zip = await browser.request('/media/uploads', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': await token() },
      body: JSON.stringify({ fileName: 'photos.zip', contentType: 'application/zip', size: 10 }),
    });
    expect(zip.status).toBe(415);
    expect((await errorOf(zip)).message).toBe(
      'This kind of file (application/zip) is not accepted. ' +
        'Accepted: JPEG, PNG, GIF, WebP images; MP4, QuickTime (MOV), WebM videos; PDF documents.',
    );
    const refused = await browser.request('/media/uploads', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': await token() },
      body: JSON.stringify(uploadBody(0)),
    });
    expect(refused.status).toBe(400);
    expect(await errorOf(refused)).toMatchObject({
      code: 'validation_failed',
      details: [{ path: 'size', message: 'must be >= 1' }],
    });
    const unsupported = await browser.request('/media/uploads', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': await token() },
      body: JSON.stringify({ ...uploadBody(10), contentType: 'application/zip' }),
    });
    expect(unsupported.status).toBe(415);
    const forged = await browser.request('/media/uploads', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(uploadBody(10)),
    });
    expect(forged.status).toBe(403);
    expect((await new BrowserSession(server).request('/media/uploads', { method: 'POST' })).status).toBe(303);
  });
});
