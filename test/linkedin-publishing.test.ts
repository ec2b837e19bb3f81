import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addReturnOrigin } from '../src/channels/return-origins.js';
import Service from '../src/sdk/src/index.js';
import { publicApi, type Schemas } from './support/api.js';
import { BrowserSession, inputValue } from './support/browser-session.js';
import { eventually } from './support/eventually.js';
import { startFakeLinkedIn, type FakeLinkedIn } from './support/fake-linkedin.js';
import { createOrganization, insertMedia, type TestOrganization } from './support/fixtures.js';
import { jpeg, mp4WithDuration, pdfDocument, png } from './support/media-samples.js';
import { startTestServer, type TestServer } from './support/server.js';
import { scaled, TIMEOUTS } from './support/timeouts.js';
import { dataOf } from './support/typed-answers.js';
import { stringContaining, stringMatching } from './support/typed-matchers.js';
import { startUpload } from './support/uploads.js';

// LinkedIn end to end against the fake LinkedIn: a member and a company page connected through the Public
// API and the choice page, then, through the Public API and a worker, commentary with every character
// little text reserves, published as written; three images as a multi-image post with their alt text; a
// video in parts, finalized and processed; a first comment; a post whose answer was lost, found among the
// page's posts and published once; the rules at create; and LinkedIn's 426 for a retired version, failing
// the post with the setting named.
const RETURN_URL = 'https://app.example.org/linkedin/done';
const BAKERY = 'urn:li:organization:2414183';
const VERSION = '202607';
let linkedin: FakeLinkedIn;
let server: TestServer;
let org: TestOrganization;
let memberChannel: string;
let pageChannel: string;

type Post = Schemas['Post'];
const api = () => publicApi(server, org.auth);
const byId = (id: string) => ({ params: { path: { id } } });

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
      LINKEDIN_VERSION: VERSION,
      LINKEDIN_API_URL: linkedin.url,
      LINKEDIN_AUTH_URL: linkedin.url,
      PUBLISH_RETRY_BASE_MS: '200',
      RATE_LIMIT_MAX: '100000',
    },
  });
  org = await createOrganization(server.ctx.db, 'Acme');
  await addReturnOrigin(server.ctx.db, org.id, new URL(RETURN_URL).origin);
  const member = `urn:li:person:${linkedin.member.sub}`;
  const channels = await connect([`linkedin:${member}`, `linkedin:${BAKERY}`]);
  memberChannel = channels.find((c) => c.username === null)!.id;
  pageChannel = channels.find((c) => c.username === 'acme-bakery')!.id;
}, TIMEOUTS.hook);
afterAll(async () => {
  await server?.close();
  await linkedin?.close();
});

/** Through the Public API: LinkedIn's consent, then this server's choice page with `accounts` chosen. */
async function connect(accounts: string[]): Promise<Schemas['Channel'][]> {
  const { authorizationUrl } = dataOf(
    await api().POST('/public/v1/channels/connect', { body: { provider: 'linkedin', returnUrl: RETURN_URL } }),
  );
  const consent = await fetch(authorizationUrl, { redirect: 'manual' });
  const back = new URL(consent.headers.get('location')!);
  const browser = new BrowserSession(server);
  const choice = new URL((await browser.get(back.pathname + back.search)).headers.get('location')!);
  const html = await (await browser.get(choice.pathname + choice.search)).text();
  const own = html.slice(html.indexOf('action="/channels/choose/'));
  const form = new URLSearchParams({ csrf_token: inputValue(own, 'csrf_token')!, state: inputValue(own, 'state')! });
  for (const account of accounts) form.append('account', account);
  const chosen = await browser.request('/channels/choose/linkedin', {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: form.toString(),
  });
  expect(chosen.status).toBe(303);
  return dataOf(await api().GET('/public/v1/channels')).data.filter((c) => c.provider === 'linkedin');
}

async function upload(name: string, bytes: Buffer, contentType: string): Promise<string> {
  const started = await startUpload(server, org, name, contentType, bytes.length);
  expect((await fetch(started.uploadUrl, { method: 'PUT', headers: started.headers, body: bytes })).status).toBe(200);
  const completed = await api().POST('/public/v1/media/uploads/{uploadId}/complete', {
    params: { path: { uploadId: started.uploadId } },
  });
  return dataOf(completed).id;
}

async function publishNow(
  item: Omit<Schemas['CreatePostPerChannel']['posts'][number], 'channelId'>,
  channelId = memberChannel,
) {
  const created = await api().POST('/public/v1/posts', { body: { type: 'now', posts: [{ channelId, ...item }] } });
  return dataOf(created, 201).data[0]!.id;
}

/**
 * The post once it is published or failed (its first comment too, when it has one); with `passing`, the
 * server's clock (and LinkedIn's) moves 5 seconds on at each look, so that a check asked for later (a
 * video's processing) comes without waiting for it.
 */
function settled(id: string, passing = false): Promise<Post> {
  return eventually(
    async () => {
      if (passing) {
        await server.clock.advance(5000);
        // LinkedIn's clock moves with it: a later search reads the posts' times from LinkedIn's.
        linkedin.advanceClock(5);
      }
      const post = dataOf(await api().GET('/public/v1/posts/{id}', byId(id)));
      expect(['published', 'failed'], `post ${id} is ${post.status}`).toContain(post.status);
      if (post.firstComment && post.status === 'published') expect(post.firstComment.releaseId).toBeTruthy();
      return post;
    },
    { timeout: scaled(30_000), interval: 200 },
  );
}

const sent = (shown: string) => linkedin.posts.filter((post) => linkedin.shownText(post) === shown);

describe('publishing to LinkedIn', () => {
  it('publishes commentary with every reserved character as written, each call with the version headers', async () => {
    const text = 'Launch (v2) [beta] {draft} <now> @team | ~50% off_today *bold* #news \\o/ done';
    const post = await settled(await publishNow({ content: text }));
    const [made] = sent(text);
    expect(made).toBeDefined();
    expect(made).toMatchObject({
      author: `urn:li:person:${linkedin.member.sub}`,
      visibility: 'PUBLIC',
      lifecycleState: 'PUBLISHED',
      isReshareDisabledByAuthor: false,
    });
    expect(post).toMatchObject({
      status: 'published',
      releaseId: made!.id,
      releaseUrl: `https://www.linkedin.com/feed/update/${made!.id}/`,
    });
    const versioned = linkedin.requests.filter((r) => r.path.startsWith('/rest/'));
    expect(versioned.length).toBeGreaterThan(0);
    expect(versioned.every((r) => r.version === VERSION && r.restli === '2.0.0')).toBe(true);
  });

  it('publishes three images as a multi-image post, in their order, with their alt text', async () => {
    const images = [
      await upload('one.jpg', jpeg(4096), 'image/jpeg'),
      await upload('two.png', png(3, 2), 'image/png'),
      await upload('three.jpg', jpeg(8192), 'image/jpeg'),
    ];
    const post = await settled(
      await publishNow({
        content: 'Three loaves',
        mediaIds: images,
        altTexts: { [images[1]!]: 'A rye loaf' },
        settings: { __type: 'linkedin', visibility: 'LOGGED_IN', disableReshare: true },
      }),
    );
    expect(post.status).toBe('published');
    const [made] = sent('Three loaves');
    expect(made).toMatchObject({ visibility: 'LOGGED_IN', isReshareDisabledByAuthor: true });
    const shown = made!.content.multiImage!.images;
    expect(shown.map((image) => image.altText)).toEqual([undefined, 'A rye loaf', undefined]);
    const bytes = shown.map((image) => linkedin.images.find((i) => i.urn === image.id)!.bytes!.length);
    expect(bytes).toEqual([4096, png(3, 2).length, 8192]);
    expect(post.settings).toEqual({ __type: 'linkedin', visibility: 'LOGGED_IN', disableReshare: true });
  });

  it('uploads a video in LinkedIn’s parts, finalizes it and waits for its processing before the post', async () => {
    linkedin.partSize(40_000);
    linkedin.processingChecks(2);
    try {
      const bytes = mp4WithDuration(5, { mdatBytes: 100_000 });
      const video = await upload('clip.mp4', bytes, 'video/mp4');
      const post = await settled(await publishNow({ content: 'Kneading', mediaIds: [video] }), true);
      expect(post.status).toBe('published');
      const [made] = sent('Kneading');
      const uploaded = linkedin.videos.find((v) => v.urn === made!.content.media!.id)!;
      expect(uploaded.status).toBe('AVAILABLE');
      expect(uploaded.parts).toHaveLength(Math.ceil(bytes.length / 40_000));
      expect(Buffer.concat(uploaded.parts.map((part) => part.bytes!))).toEqual(bytes);
    } finally {
      linkedin.partSize(4 * 1024 * 1024);
      linkedin.processingChecks(1);
    }
  });

  it('publishes a PDF as a document post through the SDK, titled by its file name or by documentTitle', async () => {
    const bytes = await pdfDocument(4);
    const sdk = new Service(org.apiKey, server.baseUrl);
    const media = await sdk.upload(bytes, 'Spring menu.pdf');
    expect(media).toMatchObject({ kind: 'document', contentType: 'application/pdf', pageCount: 4 });
    linkedin.processingChecks(2);
    try {
      const created = await sdk.createPost({
        type: 'now',
        posts: [{ channelId: pageChannel, content: 'Our spring menu', mediaIds: [media.id] }],
      });
      const post = await settled(created.data[0]!.id, true);
      expect(post.status, JSON.stringify(post.error)).toBe('published');
      const [made] = sent('Our spring menu');
      expect(made!.content.media).toEqual({ id: stringMatching(/^urn:li:document:/), title: 'Spring menu' });
      const document = linkedin.documents.find((d) => d.urn === made!.content.media!.id)!;
      expect(document).toMatchObject({ owner: BAKERY, status: 'AVAILABLE' });
      expect(document.bytes).toEqual(bytes);
    } finally {
      linkedin.processingChecks(1);
    }

    const titled = await settled(
      await publishNow({
        content: 'The menu, titled',
        mediaIds: [media.id],
        settings: { __type: 'linkedin', documentTitle: 'Spring menu 2027' },
      }),
      true,
    );
    expect(titled.status).toBe('published');
    expect(titled.settings).toMatchObject({ __type: 'linkedin', documentTitle: 'Spring menu 2027' });
    expect(sent('The menu, titled')[0]!.content.media!.title).toBe('Spring menu 2027');
  });

  it('fails a document whose processing failed at LinkedIn, and posts nothing', async () => {
    const document = await upload('menu.pdf', await pdfDocument(2), 'application/pdf');
    linkedin.failNextProcessing();
    const failed = await settled(await publishNow({ content: 'Broken menu', mediaIds: [document] }), true);
    expect(failed).toMatchObject({
      status: 'failed',
      error: {
        code: 'rejected_by_network',
        message: stringContaining('LinkedIn could not process the document'),
      },
    });
    expect(sent('Broken menu')).toHaveLength(0);
  });

  it('refuses at create a document with other media, two documents, too many pages or bytes, and a title without one', async () => {
    const document = await upload('deck.pdf', await pdfDocument(1), 'application/pdf');
    const image = await upload('photo.png', png(), 'image/png');
    const long = await insertMedia(server.ctx.db, org.id, 'document', null, { pageCount: 301 });
    const big = await insertMedia(server.ctx.db, org.id, 'document', null, { size: 100 * 1024 * 1024 + 1 });
    const answer = await api().POST('/public/v1/posts', {
      body: {
        type: 'now',
        posts: [
          { channelId: memberChannel, content: 'With a photo', mediaIds: [document, image] },
          { channelId: memberChannel, content: 'Two decks', mediaIds: [document, long] },
          { channelId: memberChannel, content: 'Long', mediaIds: [long] },
          { channelId: memberChannel, content: 'Big', mediaIds: [big] },
          { channelId: memberChannel, content: 'No deck', settings: { __type: 'linkedin', documentTitle: 'Deck' } },
          { channelId: memberChannel, content: 'Described', mediaIds: [document], altTexts: { [document]: 'A deck' } },
        ],
      },
    });
    expect(answer.response.status).toBe(422);
    const details = (answer.error as { error: { details: { path: string; message: string }[] } }).error.details;
    expect(details).toEqual([
      {
        path: 'posts[0].mediaIds',
        message: stringContaining('LinkedIn takes a document (PDF) alone in a post, without other media'),
      },
      { path: 'posts[1].mediaIds', message: stringContaining('this post has 2 media') },
      { path: 'posts[1].mediaIds[1]', message: stringContaining('LinkedIn takes documents of up to 300 pages') },
      { path: 'posts[2].mediaIds[0]', message: stringContaining('this one has 301') },
      {
        path: 'posts[3].mediaIds[0]',
        message: stringContaining('LinkedIn takes documents of up to 100 MB (104,857,600 bytes)'),
      },
      { path: 'posts[4].settings.documentTitle', message: stringContaining('A document title is for a post') },
      {
        path: `posts[5].altTexts.${document}`,
        message: 'A document (PDF) has no alternative text on LinkedIn: its pages are shown.',
      },
    ]);
  });

  it('publishes a first comment as the page, on the page’s post', async () => {
    const post = await settled(
      await publishNow({ content: 'Fresh today', firstComment: { content: 'Order at acme.example' } }, pageChannel),
    );
    const [made] = sent('Fresh today');
    expect(made!.author).toBe(BAKERY);
    const comments = linkedin.comments.filter((c) => c.object === made!.id);
    expect(comments).toHaveLength(1);
    expect(comments[0]).toMatchObject({ actor: BAKERY, text: 'Order at acme.example' });
    expect(post.firstComment).toMatchObject({ content: 'Order at acme.example', releaseId: comments[0]!.commentUrn });
  });

  it('finds a page’s post whose answer was lost among the page’s posts, and publishes it once', async () => {
    linkedin.loseNextAnswer('createPost');
    const id = await publishNow({ content: 'Lost on the way back' }, pageChannel);
    const post = await settled(id);
    const made = sent('Lost on the way back');
    expect(made).toHaveLength(1);
    expect(post).toMatchObject({ status: 'published', releaseId: made[0]!.id });
    expect(linkedin.requests.some((r) => r.operation === 'findPosts')).toBe(true);
  });

  it('does not take another post of the page with the same text for one whose answer was lost', async () => {
    const first = await settled(await publishNow({ content: 'Said twice by the page' }, pageChannel));
    expect(first.status).toBe('published');
    linkedin.loseNextAnswer('createPost');
    const second = await settled(await publishNow({ content: 'Said twice by the page' }, pageChannel));
    const made = sent('Said twice by the page');
    expect(made).toHaveLength(2);
    expect(second).toMatchObject({ status: 'published', releaseId: made[1]!.id });
    expect(second.releaseId).not.toBe(first.releaseId);
  });

  it('cannot tell which post is the one whose answer was lost when the page has another with its text', async () => {
    // Written at LinkedIn by someone of the page, with the same text, as the last post was made.
    const last = linkedin.posts.at(-1)!;
    linkedin.posts.push({
      ...last,
      id: 'urn:li:share:7000000000000000001',
      author: BAKERY,
      commentary: 'Written twice',
    });
    linkedin.loseNextAnswer('createPost');
    const post = await settled(await publishNow({ content: 'Written twice' }, pageChannel));
    expect(post).toMatchObject({ status: 'failed', error: { code: 'outcome_unknown' } });
    expect(sent('Written twice')).toHaveLength(2);
  });

  it('leaves a member’s post whose answer was lost unknown, as their posts cannot be read without r_member_social', async () => {
    linkedin.loseNextAnswer('createPost');
    const post = await settled(await publishNow({ content: 'Lost, as a member' }));
    expect(post).toMatchObject({ status: 'failed', error: { code: 'outcome_unknown' } });
    expect(post.error?.message).toContain('r_member_social');
    // Sent once, never again on a guess.
    expect(sent('Lost, as a member')).toHaveLength(1);
  });

  it('tries again after LinkedIn’s 429, and fails a video whose processing failed with LinkedIn’s reason', async () => {
    linkedin.throttleNext('createPost');
    const throttled = await settled(await publishNow({ content: 'After the throttle' }));
    expect(throttled.status, JSON.stringify(throttled.error)).toBe('published');
    expect(sent('After the throttle')).toHaveLength(1);

    linkedin.failNextProcessing();
    const video = await upload('broken.mp4', mp4WithDuration(5, { mdatBytes: 80_000 }), 'video/mp4');
    const failed = await settled(await publishNow({ content: 'Broken clip', mediaIds: [video] }), true);
    expect(failed).toMatchObject({
      status: 'failed',
      error: {
        code: 'rejected_by_network',
        message: 'LinkedIn could not process the video: The video could not be transcoded',
      },
    });
    expect(sent('Broken clip')).toHaveLength(0);
  });

  it('refuses at create what LinkedIn would not publish', async () => {
    const answer = await api().POST('/public/v1/posts', {
      body: {
        type: 'now',
        posts: [
          { channelId: memberChannel, content: 'x'.repeat(3001) },
          {
            channelId: pageChannel,
            content: 'To my connections',
            settings: { __type: 'linkedin', visibility: 'CONNECTIONS' },
          },
        ],
      },
    });
    expect(answer.response.status).toBe(422);
    const details = (answer.error as { error: { details: { path: string }[] } }).error.details.map((d) => d.path);
    expect(details).toEqual(expect.arrayContaining(['posts[0].content', 'posts[1].settings.visibility']));
  });

  it('refreshes a token past its 60 days where LinkedIn gave a refresh token; without one, asks for the channel again', async () => {
    const DAY_S = 86_400;
    await server.clock.advance(61 * DAY_S * 1000);
    linkedin.advanceClock(61 * DAY_S);
    const ended = await settled(await publishNow({ content: 'After sixty days' }));
    expect(ended).toMatchObject({ status: 'failed', error: { code: 'channel_needs_reconnect' } });
    const channel = dataOf(await api().GET('/public/v1/channels')).data.find((c) => c.id === memberChannel)!;
    expect(channel.status).toBe('needs_reconnect');
    expect(sent('After sixty days')).toHaveLength(0);

    linkedin.refreshTokens(true);
    try {
      await connect([`linkedin:urn:li:person:${linkedin.member.sub}`]);
      const issued = linkedin.tokens.length;
      await server.clock.advance(61 * DAY_S * 1000);
      linkedin.advanceClock(61 * DAY_S);
      const post = await settled(await publishNow({ content: 'Refreshed' }));
      expect(post.status).toBe('published');
      // One new access token, from the refresh token; the refresh token itself is the same.
      expect(linkedin.tokens.slice(issued).map((t) => t.kind)).toEqual(['access']);
    } finally {
      linkedin.refreshTokens(false);
    }
  });

  // Last: LinkedIn retires the version this server sends.
  it('fails the post with the setting to change when LinkedIn answers 426 for a retired version', async () => {
    linkedin.retireVersion(VERSION);
    const post = await settled(await publishNow({ content: 'Too old a version' }));
    expect(post.status).toBe('failed');
    expect(post.error?.message).toContain('LINKEDIN_VERSION');
    expect(post.error?.message).toContain(VERSION);
    expect(sent('Too old a version')).toHaveLength(0);
  });
});
