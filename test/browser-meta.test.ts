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
  signUp,
  untilAt,
  type BrowserWithPage,
} from './support/chromium.js';
import { startFakeMeta, type FakeMeta } from './support/fake-meta.js';
import { startFakeThreads, type FakeThreads } from './support/fake-threads.js';
import { jpeg, mp4WithDuration, png } from './support/media-samples.js';
import { startTestServer, type TestServer } from './support/server.js';
import { TIMEOUTS } from './support/timeouts.js';
import { stringMatching } from './support/typed-matchers.js';

const BAKERY = '110000000000001';
const CATERING = '110000000000002';
const SHOP = '110000000000003';
const BAKERY_INSTAGRAM = '17841400000000001';
const CATERING_INSTAGRAM = '17841400000000002';

/** The files the user uploads in the composer, each told apart at Meta by its size. */
const FILES = {
  loaf: { name: 'meta-loaf.png', bytes: png(120, 90, [190, 120, 40, 255]) },
  carousel: [
    { name: 'meta-carousel-one.jpg', bytes: jpeg(3000) },
    { name: 'meta-carousel-two.jpg', bytes: jpeg(4000) },
    { name: 'meta-carousel-three.jpg', bytes: jpeg(5000) },
  ],
  reel: { name: 'meta-reel.mp4', bytes: mp4WithDuration(12, { mdatBytes: 8192 }) },
  wide: { name: 'meta-wide.jpg', bytes: jpeg(6000) },
} as const;
type SampleFile = { name: string; bytes: Buffer };

/**
 * Meta's networks the way a user meets them, in Chromium, on one server against the fake Meta and the
 * fake Threads: Settings → Channels → Connect Facebook, Meta's dialog, then this server's page offering
 * the Pages and the Instagram professional accounts the login reached, where two Pages and one Instagram
 * account are chosen and become three channels. Then, written in the composer and published now by the
 * server's worker: a Page photo post with a first comment (the photo post, then the comment on it); an
 * Instagram carousel of three images with a first comment (an item container for each, the carousel's,
 * `media_publish`, the comment); an Instagram reel whose container is still processed for three polls;
 * Threads, connected through its own consent, and a thread of three parts, each a reply to the one
 * before; and an Instagram post whose container ends in ERROR, failed with Meta's words on its page.
 * The pages are scanned with axe-core on the way.
 */
describeInChromium(
  'Facebook Pages, Instagram and Threads from Settings → Channels to published posts, in Chromium',
  () => {
    let meta: FakeMeta;
    let threads: FakeThreads;
    let server: TestServer;
    let browser: BrowserWithPage;
    let page: Page;

    beforeAll(async () => {
      [meta, threads] = await Promise.all([
        startFakeMeta({
          pages: [
            {
              id: BAKERY,
              name: 'Acme Bakery',
              username: 'acmebakery',
              category: 'Bakery',
              tasks: ['ADVERTISE', 'ANALYZE', 'CREATE_CONTENT', 'MESSAGING', 'MODERATE', 'MANAGE'],
              pictureUrl: 'https://scontent.xx.fbcdn.net/v/t39.30808-1/acme-bakery.jpg',
              instagram: {
                id: BAKERY_INSTAGRAM,
                username: 'acme.bakery',
                name: 'Acme Bakery',
                profilePictureUrl: 'https://scontent.cdninstagram.com/v/t51.2885-19/acme-bakery.jpg',
                followersCount: 1_250,
              },
            },
            {
              id: CATERING,
              name: 'Acme Catering',
              username: 'acmecatering',
              category: 'Caterer',
              tasks: ['ANALYZE', 'CREATE_CONTENT', 'MODERATE'],
              pictureUrl: 'https://scontent.xx.fbcdn.net/v/t39.30808-1/acme-catering.jpg',
              instagram: {
                id: CATERING_INSTAGRAM,
                username: 'acme.catering',
                name: 'Acme Catering',
                profilePictureUrl: 'https://scontent.cdninstagram.com/v/t51.2885-19/acme-catering.jpg',
                followersCount: 310,
              },
            },
            {
              id: SHOP,
              name: 'Acme Shop',
              username: 'acmeshop',
              category: 'Shopping',
              tasks: ['ADVERTISE', 'ANALYZE', 'CREATE_CONTENT', 'MODERATE', 'MANAGE'],
              pictureUrl: 'https://scontent.xx.fbcdn.net/v/t39.30808-1/acme-shop.jpg',
              instagram: null,
            },
          ],
        }),
        startFakeThreads(),
      ]);
      server = await startTestServer({
        worker: true,
        env: {
          META_APP_ID: meta.appId,
          META_APP_SECRET: meta.appSecret,
          META_GRAPH_URL: meta.url,
          META_DIALOG_URL: meta.wwwUrl,
          THREADS_APP_ID: threads.appId,
          THREADS_APP_SECRET: threads.appSecret,
          THREADS_API_URL: threads.url,
          THREADS_AUTHORIZE_URL: threads.authorizeUrl,
          PUBLISH_RETRY_BASE_MS: '200',
        },
      });
      for (const file of [FILES.loaf, ...FILES.carousel, FILES.reel, FILES.wide])
        fs.writeFileSync(artifactPath(file.name), file.bytes);
      browser = await openBrowser();
      page = browser.page;
      // The profile pictures are on Meta's CDN: the browser gets a picture of its own from there, offline.
      await browser.context.route(/^https:\/\/scontent\./, (route) =>
        route.fulfill({ status: 200, contentType: 'image/png', body: png(40, 40, [60, 90, 160, 255]) }),
      );
    }, 2 * TIMEOUTS.hook);

    afterAll(async () => {
      await server?.close();
      await Promise.all([meta?.close(), threads?.close()]);
      // Fails the file when a script of a page threw.
      await browser?.close();
    });

    /** No serious or critical accessibility violation on the page as it is now. */
    async function scan(name: string): Promise<void> {
      const violations = await seriousViolations(page);
      expect(violations, `${name}: ${JSON.stringify(violations, null, 2)}`).toEqual([]);
    }

    /** What the first status message of the page says, once there is one. */
    const status = () => page.getByRole('status').first().textContent();
    /** The post's status on its page; the page shows itself again when it changes (post.js). */
    const postStatus = () => page.locator('dd .status').textContent();
    /** The channel's row on Settings → Channels, by its network and username as the row names them. */
    const channelRow = (provider: string, username: string) =>
      page.locator('li.channel', { hasText: `${provider} · ${username}` });
    /**
     * A post's way to the network: the worker's turn, Meta's calls, then the page's next look at the
     * status, two seconds apart.
     */
    const UNTIL_SETTLED = { timeout: 2 * TIMEOUTS.browser, interval: 200 } as const;

    /**
     * Opens the composer with the channel ticked (named as its checkbox is: `Acme Bakery (Instagram)`),
     * writes the text and uploads the files one after the other, so that their positions are the order
     * of the list.
     */
    async function compose(channel: string, text: string, files: readonly SampleFile[] = []): Promise<void> {
      await page.goto(`${server.baseUrl}/compose`);
      await page.getByRole('checkbox', { name: channel, exact: true }).check();
      await page.getByLabel('Text', { exact: true }).fill(text);
      const upload = page.getByLabel('Upload images, videos or PDFs', { exact: true });
      for (const [index, file] of files.entries()) {
        await upload.setInputFiles(artifactPath(file.name));
        await expect
          .poll(() => page.locator('[data-part="0"] .upload-row').nth(index).textContent(), PAGE_WAIT)
          .toBe(`${file.name}: uploaded`);
      }
      for (const [index, file] of files.entries())
        expect(await page.getByLabel(`Position of ${file.name}`, { exact: true }).inputValue()).toBe(String(index + 1));
    }

    /** Publishes what the composer holds now: the post's id, once its page is shown. */
    async function publishNow(): Promise<string> {
      await page.getByRole('button', { name: 'Publish now' }).click();
      await expect.poll(status, PAGE_WAIT).toBe('The post is created.');
      return pathOf(page).split('/')[2]!;
    }

    /**
     * The post's page once it shows the post `published` (or `failed`). An Instagram container still
     * processed is asked about again as a job of the queue seconds on: with `moveClock`, the server's
     * clock (and its queue's) is moved a minute on at each look instead of waiting for it.
     */
    async function settledAs(expected: 'published' | 'failed', options: { moveClock?: boolean } = {}): Promise<void> {
      await expect
        .poll(async () => {
          if (options.moveClock) await server.clock.advance(60_000);
          return postStatus();
        }, UNTIL_SETTLED)
        .toBe(expected);
    }

    /** The link of the post's page to the post on the network, and to its first comment if it has one. */
    async function linksShown(): Promise<{ post: string; comment: string | null }> {
      const post = (await page.locator('dd a').getAttribute('href'))!;
      const comment = page.locator('[data-first-comment] a');
      return { post, comment: (await comment.count()) > 0 ? await comment.getAttribute('href') : null };
    }

    it('signs the user up', async () => {
      await page.goto(`${server.baseUrl}/signup`);
      await signUp(page, { name: 'Ada', email: 'ada@acme.example', organization: 'Acme Food' });
      await untilAt(page, '/calendar');
    });

    it('connects two Pages and one Instagram account chosen on the page Meta’s dialog leads to', async () => {
      await page.goto(`${server.baseUrl}/settings/channels`);
      await page.getByRole('button', { name: 'Connect Facebook' }).click();
      // Meta's dialog gives consent and sends the browser back; this server shows what the login reached.
      await untilAt(page, '/channels/choose/facebook');
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Choose what to connect from Facebook');
      const offered = page.getByRole('checkbox');
      expect(await offered.count()).toBe(5);
      const accounts = await Promise.all(
        (await page.locator('li.channel').all()).map((item) => item.getAttribute('data-account')),
      );
      expect(accounts.toSorted()).toEqual(
        [
          `facebook:${BAKERY}`,
          `facebook:${CATERING}`,
          `facebook:${SHOP}`,
          `instagram:${BAKERY_INSTAGRAM}`,
          `instagram:${CATERING_INSTAGRAM}`,
        ].toSorted(),
      );
      for (const checkbox of await offered.all()) expect(await checkbox.isChecked()).toBe(false);
      await scan('the choice of the accounts Facebook reached');
      await page.screenshot({ path: artifactPath('meta-choice.png'), fullPage: true });

      const choose = (account: string) => page.locator(`li.channel[data-account="${account}"] input[type="checkbox"]`);
      await choose(`facebook:${BAKERY}`).check();
      await choose(`facebook:${CATERING}`).check();
      await choose(`instagram:${BAKERY_INSTAGRAM}`).check();
      await page.getByRole('button', { name: 'Connect the chosen accounts' }).click();

      await expect.poll(status, PAGE_WAIT).toBe('The accounts you chose are connected.');
      expect(pathOf(page)).toBe('/settings/channels');
      for (const [provider, username] of [
        ['facebook', 'acmebakery'],
        ['facebook', 'acmecatering'],
        ['instagram', 'acme.bakery'],
      ] as const)
        expect(await channelRow(provider, username).locator('.status').first().textContent()).toBe('Active');
      // What was not chosen is not connected: the shop's Page, the catering's Instagram account.
      expect(await channelRow('facebook', 'acmeshop').count()).toBe(0);
      expect(await channelRow('instagram', 'acme.catering').count()).toBe(0);
      const listed = await page.locator('li.channel .meta').allTextContents();
      expect(listed.filter((text) => /^(facebook|instagram) · /.test(text))).toHaveLength(3);
      await scan('channels (Facebook and Instagram connected)');
    });

    it('publishes a Page photo post with its first comment: the photo post, then the comment on it', async () => {
      await compose('Acme Bakery (Facebook)', 'Our sourdough, fresh today', [FILES.loaf]);
      await page.getByLabel('First comment', { exact: true }).fill('Order at acme.example');
      await scan('composer (a Facebook Page)');
      const sentFrom = meta.requests.length;
      await publishNow();
      await settledAs('published');

      const [made] = meta.posts.filter((p) => p.message === 'Our sourdough, fresh today');
      expect(made).toMatchObject({ kind: 'photo', pageId: BAKERY });
      expect(meta.posts.filter((p) => p.message === 'Our sourdough, fresh today')).toHaveLength(1);
      const [comment] = meta.comments.filter((c) => c.objectId === made!.id);
      expect(comment).toMatchObject({ message: 'Order at acme.example', from: { id: BAKERY } });
      expect(meta.comments.filter((c) => c.objectId === made!.id)).toHaveLength(1);
      // The photo went up first, the comment after it.
      const sent = meta.requests.slice(sentFrom).map((r) => r.operation);
      expect(sent.filter((operation) => operation === 'pagePhotos' || operation === 'comments')).toEqual([
        'pagePhotos',
        'comments',
      ]);
      // The photo Meta took is the one uploaded in the composer.
      expect(meta.photos.find((photo) => photo.postId === made!.id)?.bytes).toEqual(FILES.loaf.bytes);

      const links = await linksShown();
      expect(links.post).toBe(made!.permalinkUrl);
      const commentUrl = new URL(made!.permalinkUrl);
      commentUrl.searchParams.set('comment_id', comment!.id.split('_').at(-1)!);
      expect(links.comment).toBe(commentUrl.href);
      expect(await page.locator('[data-first-comment] .post-content').textContent()).toBe('Order at acme.example');
      // Its history tells the post, then its comment, then the end: no thread to speak of.
      const published = page.locator(
        '.history li:is([data-event-type="part_published"], [data-event-type="comment_published"], [data-event-type="published"])',
      );
      expect(await published.allTextContents()).toEqual(
        [
          /^Post published, before its first comment.*attempt 1$/s,
          /^First comment published.*attempt 1$/s,
          /^Published.*attempt 1$/s,
        ].map((pattern) => stringMatching(pattern)),
      );
      await scan('post (published on a Facebook Page, with its first comment)');
      await page.screenshot({ path: artifactPath('meta-facebook-post.png'), fullPage: true });
    });

    it('publishes an Instagram carousel of three with its first comment: items, carousel, media_publish, comment', async () => {
      await compose('Acme Bakery (Instagram)', 'Three loaves #bread', FILES.carousel);
      expect(await page.getByRole('radio', { name: /^In the feed/ }).isChecked()).toBe(true);
      await page.getByLabel('First comment', { exact: true }).fill('Recipe in bio');
      await scan('composer (an Instagram carousel)');
      const sentFrom = meta.requests.length;
      const containersFrom = meta.containers.length;
      await publishNow();
      await settledAs('published', { moveClock: true });

      const containers = meta.containers.slice(containersFrom);
      const items = containers.filter((c) => c.isCarouselItem);
      const [carousel] = containers.filter((c) => c.mediaType === 'CAROUSEL');
      expect(containers).toHaveLength(4);
      // An item container for each image, in the composer's order, then the carousel's of them.
      expect(items.map((item) => item.bytes)).toEqual(FILES.carousel.map((file) => file.bytes));
      expect(carousel).toMatchObject({ caption: 'Three loaves #bread', children: items.map((item) => item.id) });
      const album = meta.instagramMedia.find((m) => m.containerId === carousel!.id)!;
      expect(album).toMatchObject({ mediaType: 'CAROUSEL_ALBUM', igUserId: BAKERY_INSTAGRAM });
      const [comment] = meta.comments.filter((c) => c.objectId === album.id);
      expect(comment).toMatchObject({ message: 'Recipe in bio' });
      const sent = meta.requests
        .slice(sentFrom)
        .map((r) => r.operation)
        .filter((operation) => operation === 'igMedia' || operation === 'igMediaPublish' || operation === 'comments');
      expect(sent).toEqual(['igMedia', 'igMedia', 'igMedia', 'igMedia', 'igMediaPublish', 'comments']);

      const links = await linksShown();
      expect(links.post).toBe(album.permalink);
      expect(links.comment).not.toBeNull();
      expect(await page.locator('[data-first-comment] .post-content').textContent()).toBe('Recipe in bio');
      await scan('post (an Instagram carousel, with its first comment)');
    });

    it('publishes an Instagram reel whose container is still processed for three polls', async () => {
      meta.processingPolls(3);
      await compose('Acme Bakery (Instagram)', 'Shaping the loaves', [FILES.reel]);
      await page.getByRole('radio', { name: /^A reel/ }).check();
      await scan('composer (an Instagram reel)');
      const containersFrom = meta.containers.length;
      await publishNow();
      await settledAs('published', { moveClock: true });
      meta.processingPolls(1);

      const [container] = meta.containers.slice(containersFrom);
      expect(container).toMatchObject({ mediaType: 'REELS', statusCode: 'PUBLISHED', bytes: FILES.reel.bytes });
      // Three answers of IN_PROGRESS, then FINISHED: four reads at least before it was published.
      expect(container!.polls).toBeGreaterThanOrEqual(4);
      const reel = meta.instagramMedia.find((m) => m.containerId === container!.id)!;
      expect(reel).toMatchObject({ productType: 'REELS', caption: 'Shaping the loaves' });
      expect((await linksShown()).post).toBe(reel.permalink);
    });

    it('connects Threads through its own consent and publishes a thread of three, each part a reply to the one before', async () => {
      await page.goto(`${server.baseUrl}/settings/channels`);
      await page.getByRole('button', { name: 'Connect Threads' }).click();
      await expect.poll(status, PAGE_WAIT).toBe('The account is connected.');
      expect(pathOf(page)).toBe('/settings/channels');
      expect(await channelRow('threads', threads.account.username).locator('.status').first().textContent()).toBe(
        'Active',
      );
      await scan('channels (Threads connected)');

      const texts = ['Bread week, 1/3', 'Monday is rye, 2/3', 'Friday is brioche, 3/3'] as const;
      await compose(`${threads.account.name} (Threads)`, texts[0]);
      for (const [index, text] of texts.slice(1).entries()) {
        await page.getByRole('button', { name: 'Add to thread' }).click();
        await page.getByLabel(`Text of part ${index + 2}`, { exact: true }).fill(text);
      }
      await scan('composer (a thread of three on Threads)');
      await publishNow();
      await settledAs('published');

      const parts = texts.map((text) => threads.posts.filter((post) => post.text === text));
      expect(parts.map((sent) => sent.length)).toEqual([1, 1, 1]);
      const [first, second, third] = parts.map((sent) => sent[0]!);
      // Published in order, each reply's container naming the part before it as `reply_to_id`.
      expect(threads.posts.filter((post) => texts.includes(post.text as never)).map((post) => post.text)).toEqual([
        ...texts,
      ]);
      const containerOf = (post: typeof first) => threads.containers.find((c) => c.id === post!.containerId)!;
      expect([first, second, third].map((post) => containerOf(post).params.reply_to_id)).toEqual([
        undefined,
        first!.id,
        second!.id,
      ]);
      expect([first, second, third].map((post) => [post!.repliedTo, post!.rootPost])).toEqual([
        [null, first!.id],
        [first!.id, first!.id],
        [second!.id, first!.id],
      ]);
      expect((await linksShown()).post).toBe(first!.permalink);
      const partLinks = page.locator('[data-thread-part] a');
      expect([await partLinks.nth(0).getAttribute('href'), await partLinks.nth(1).getAttribute('href')]).toEqual([
        second!.permalink,
        third!.permalink,
      ]);
      expect(await partLinks.count()).toBe(2);
      await scan('post (a thread published on Threads)');
    });

    it('fails an Instagram post whose container ends in ERROR, with Meta’s words on its page', async () => {
      const words = 'Error: Media upload has failed with error code 2207026';
      meta.failNextContainer({ statusCode: 'ERROR', status: words });
      await compose('Acme Bakery (Instagram)', 'A wide view of the bakery', [FILES.wide]);
      await publishNow();
      await settledAs('failed', { moveClock: true });

      expect(await page.locator('dd.post-error code').textContent()).toBe('rejected_by_network');
      expect(await page.locator('dd.post-error').textContent()).toBe(
        `rejected_by_network Instagram could not publish the media: ${words}`,
      );
      // Nothing was published of it.
      expect(meta.instagramMedia.some((m) => m.caption === 'A wide view of the bakery')).toBe(false);
      await scan('post (failed at Instagram)');
      await page.screenshot({ path: artifactPath('meta-instagram-failed.png'), fullPage: true });
    });
  },
);
