import fs from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
import { startFakeMastodon, type FakeMastodon } from './support/fake-mastodon.js';
import { startFakeX, type FakeX } from './support/fake-x.js';
import { png } from './support/media-samples.js';
import { startPds, type PdsAccount, type PdsRecord, type TestPds } from './support/pds.js';
import { startTestServer, type TestServer } from './support/server.js';
import { TIMEOUTS } from './support/timeouts.js';
import { stringMatching } from './support/typed-matchers.js';

/** Four images of a thread's first part: each of its own size, told apart by it on the network. */
const PICTURES = [
  { name: 'red.png', width: 4, height: 3, rgba: [200, 30, 30, 255], alt: 'A red field, wider than tall' },
  { name: 'green.png', width: 3, height: 4, rgba: [30, 200, 30, 255], alt: 'A green field, taller than wide' },
  { name: 'blue.png', width: 5, height: 5, rgba: [30, 30, 200, 255], alt: 'A blue square' },
  { name: 'grey.png', width: 2, height: 1, rgba: [90, 90, 90, 255], alt: 'A grey strip' },
] as const;
type Picture = (typeof PICTURES)[number];
const pictureBytes = ({ width, height, rgba }: Picture) => png(width, height, [...rgba]);
/** The picture's file as uploaded for `network`: its own name, so its alternative text has its own label. */
const fileName = (network: string, picture: Picture) => `thread-${network}-${picture.name}`;
const pictureFile = (network: string, picture: Picture) => artifactPath(fileName(network, picture));

/**
 * The three text networks the way a user meets them, in Chromium, on one server: Bluesky against the
 * reference PDS (this server's sign-in page with the handle and an app password), Mastodon against the
 * fake instance (the instance typed in, the Continue page, the instance's consent page) and X against
 * the fake X (its consent page). For each: connected in Settings → Channels, a text post written in the
 * composer and published now, its address on the network on the post's page; then the access revoked
 * at the network, the next post failing with channel_needs_reconnect and the channel marked,
 * reconnected, and the failed post scheduled again from the posts page and published. Then a thread of
 * three on Bluesky and on X, its first part with four images uploaded in the composer and their
 * alternative texts: on the network in order, each part a reply to the one before.
 */
describeInChromium('Bluesky, Mastodon and X from Settings → Channels to published posts, in Chromium', () => {
  let pds: TestPds;
  let mastodon: FakeMastodon;
  let x: FakeX;
  let server: TestServer;
  let browser: BrowserWithPage;
  let page: Page;
  let bluesky: PdsAccount;

  beforeAll(async () => {
    [pds, mastodon, x] = await Promise.all([
      startPds(),
      startFakeMastodon({ account: { username: 'nora', displayName: 'Nora on Mastodon' } }),
      startFakeX({ account: { username: 'nora_writes', name: 'Nora on X' } }),
    ]);
    // The user gives consent on the instance's own page, with its Authorize button.
    mastodon.consentPage(true);
    server = await startTestServer({
      worker: true,
      env: {
        BLUESKY_ENTRYWAY_URL: pds.url,
        BLUESKY_PLC_URL: pds.plcUrl,
        // The PDS, its directory and the fake instance are on loopback: allowed as an operator allows
        // a range of their network.
        MEDIA_FETCH_ALLOW_RANGES: '127.0.0.1/32,::1/128',
        X_CLIENT_ID: x.clientId,
        X_CLIENT_SECRET: x.clientSecret,
        X_API_URL: x.url,
        X_AUTHORIZE_URL: x.authorizeUrl,
        PUBLISH_RETRY_BASE_MS: '200',
      },
    });
    bluesky = await pds.createAccount();
    for (const network of ['bluesky', 'x'])
      for (const picture of PICTURES) fs.writeFileSync(pictureFile(network, picture), pictureBytes(picture));
    browser = await openBrowser();
    page = browser.page;
  }, 2 * TIMEOUTS.hook);

  afterAll(async () => {
    await server?.close();
    await Promise.all([pds?.close(), mastodon?.close(), x?.close()]);
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
  const channelRow = (name: string) => page.locator('li.channel', { hasText: name });
  /** The post's status on its page; the page shows itself again when it changes (post.js). */
  const postStatus = () => page.locator('dd .status').textContent();
  const CONNECTED = 'The account is connected.';
  const RECONNECTED = 'The account is connected again; its channel is active.';
  /**
   * A post's way to the network: the worker's turn, then the network's calls (a session at the PDS
   * first for Bluesky), then the page's next look at the status, two seconds apart.
   */
  const UNTIL_SETTLED = { timeout: 2 * TIMEOUTS.browser, interval: 200 } as const;

  /**
   * Back on Settings → Channels, told so, with the channel listed as active. Only the page a connection
   * comes back to has the notice.
   */
  async function connected(name: string, notice: string): Promise<void> {
    await expect.poll(status, PAGE_WAIT).toBe(notice);
    expect(pathOf(page)).toBe('/settings/channels');
    expect(await channelRow(name).locator('.status').textContent()).toBe('Active');
  }

  /** Writes a text post for the channel in the composer and publishes it now: the post's id. */
  async function publishNow(channel: string, text: string): Promise<string> {
    await page.goto(`${server.baseUrl}/compose`);
    await page.getByRole('checkbox', { name: channel }).check();
    await page.getByLabel('Text', { exact: true }).fill(text);
    await page.getByRole('button', { name: 'Publish now' }).click();
    await expect.poll(status, PAGE_WAIT).toBe('The post is created.');
    return pathOf(page).split('/')[2]!;
  }

  /** The post's page once it shows the post published: the address on the network it links to. */
  async function published(): Promise<string> {
    await expect.poll(postStatus, UNTIL_SETTLED).toBe('published');
    return (await page.locator('dd a').getAttribute('href'))!;
  }

  /** The post's page once it shows the post failed because the channel must be connected again. */
  async function failedForReconnect(): Promise<void> {
    await expect.poll(postStatus, UNTIL_SETTLED).toBe('failed');
    expect(await page.locator('dd.post-error code').textContent()).toBe('channel_needs_reconnect');
    await scan('post (failed)');
  }

  /** Settings → Channels marks the channel; its Reconnect button sends the browser to the network. */
  async function reconnect(name: string): Promise<void> {
    await page.goto(`${server.baseUrl}/settings/channels`);
    expect(await channelRow(name).locator('.status').textContent()).toBe('Needs reconnecting');
    await scan('channels (needs reconnecting)');
    await page.getByRole('button', { name: `Reconnect ${name}` }).click();
  }

  /** Schedule again on the posts page's row of the failed post; answers once the post's page shows it published. */
  async function scheduleAgain(postId: string): Promise<void> {
    await page.goto(`${server.baseUrl}/posts`);
    const row = page.locator(`tr[data-post-id="${postId}"]`);
    expect(await row.locator('.status').textContent()).toBe('failed');
    await row.getByRole('button', { name: 'Schedule again' }).click();
    await expect.poll(status, PAGE_WAIT).toBe('The post is scheduled again.');
    await untilAt(page, `/posts/${postId}`);
    await published();
  }

  /**
   * Writes a thread of three parts for the channel in the composer, the first with the four pictures
   * uploaded there (the files of `network`) and their alternative texts, and publishes it now. Answers
   * the pictures in the order of their positions in the composer once the parts are added: the post's order.
   */
  async function publishThread(
    channel: string,
    network: string,
    texts: readonly [string, string, string],
  ): Promise<Picture[]> {
    await page.goto(`${server.baseUrl}/compose`);
    await page.getByRole('checkbox', { name: channel }).check();
    await page.getByLabel('Text', { exact: true }).fill(texts[0]);
    const files = PICTURES.map((picture) => pictureFile(network, picture));
    await page.getByLabel('Upload images, videos or PDFs', { exact: true }).setInputFiles(files);
    await expect
      .poll(() => page.locator('[data-part="0"] .upload-row').allTextContents(), PAGE_WAIT)
      .toEqual(PICTURES.map((picture) => `${fileName(network, picture)}: uploaded`));
    for (const picture of PICTURES)
      await page.getByLabel(`Alternative text of ${fileName(network, picture)}`, { exact: true }).fill(picture.alt);
    for (const [index, text] of texts.slice(1).entries()) {
      await page.getByRole('button', { name: 'Add to thread' }).click();
      await page.getByLabel(`Text of part ${index + 2}`, { exact: true }).fill(text);
    }
    // The page came back twice: the first part keeps its four pictures and what each shows.
    const chosen = await page
      .locator('[data-part="0"] .media-item:has(input[name="media"]:checked) .media-name')
      .allTextContents();
    expect(chosen.toSorted()).toEqual(PICTURES.map((picture) => fileName(network, picture)).toSorted());
    // The post's order is the pictures' positions, numbered as they were uploaded.
    const positions = new Map<Picture, number>();
    for (const picture of PICTURES) {
      const field = page.getByLabel(`Position of ${fileName(network, picture)}`, { exact: true });
      positions.set(picture, Number(await field.inputValue()));
    }
    expect([...positions.values()].toSorted()).toEqual([1, 2, 3, 4]);
    const order = PICTURES.toSorted((a, b) => positions.get(a)! - positions.get(b)!);
    for (const picture of PICTURES)
      expect(
        await page.getByLabel(`Alternative text of ${fileName(network, picture)}`, { exact: true }).inputValue(),
      ).toBe(picture.alt);
    await scan(`composer (a thread of three for ${channel})`);
    await page.getByRole('button', { name: 'Publish now' }).click();
    await expect.poll(status, PAGE_WAIT).toBe('The post is created.');
    return order;
  }

  /**
   * The post's page, once the post is published, lists its second and third parts with their texts,
   * each linked to its place on the network: the two links.
   */
  async function partsListed(texts: readonly [string, string, string]): Promise<string[]> {
    await published();
    expect(await page.locator('[data-thread-part]').allTextContents()).toEqual(
      texts.slice(1).map((text) => stringMatching(new RegExp(`^${text}\\s+no media ·\\s+on the network\\s*$`))),
    );
    const links = page.locator('[data-thread-part] a');
    return [(await links.nth(0).getAttribute('href'))!, (await links.nth(1).getAttribute('href'))!];
  }

  it('signs the user up', async () => {
    await page.goto(`${server.baseUrl}/signup`);
    await signUp(page, { name: 'Nora', email: 'nora@words.example', organization: 'Nora Words' });
    await untilAt(page, '/calendar');
  });

  describe('Bluesky', () => {
    it('connects on this server’s sign-in page, after a wrong app password said so on the page', async () => {
      await page.goto(`${server.baseUrl}/settings/channels`);
      await page.getByRole('button', { name: 'Connect Bluesky' }).click();
      await untilAt(page, '/channels/sign-in/bluesky');
      await scan('Bluesky sign-in');
      await page.getByLabel('Handle').fill(bluesky.handle);
      await page.getByLabel('App password').fill('abcd-efgh-ijkl-mnop');
      await page.getByRole('button', { name: 'Connect Bluesky' }).click();
      await expect
        .poll(() => page.getByRole('alert').textContent(), PAGE_WAIT)
        .toContain(`Bluesky did not sign in ${bluesky.handle} with this app password`);
      // The password field is marked, and described by the refusal; the handle is not to mend.
      expect(await page.getByLabel('App password').getAttribute('aria-invalid')).toBe('true');
      const describedBy = await page.getByLabel('App password').getAttribute('aria-describedby');
      expect(await page.locator(`#${describedBy}`).textContent()).toContain('with this app password');
      expect(await page.getByLabel('Handle').getAttribute('aria-invalid')).toBeNull();
      // The handle stays; the password is typed again.
      expect(await page.getByLabel('Handle').inputValue()).toBe(bluesky.handle);
      expect(await page.getByLabel('App password').inputValue()).toBe('');
      await scan('Bluesky sign-in (refused)');
      await page.screenshot({ path: artifactPath('bluesky-sign-in-refused.png'), fullPage: true });

      await page.getByLabel('App password').fill(bluesky.appPassword);
      await page.getByRole('button', { name: 'Connect Bluesky' }).click();
      await connected(bluesky.handle, CONNECTED);
      await scan('channels (Bluesky connected)');
    });

    it('publishes a text post written in the composer, linked to its place on Bluesky', async () => {
      await publishNow(bluesky.handle, 'Hello from the composer to Bluesky');
      const url = await published();
      const [record] = (await pds.listRecords(bluesky.did, 'app.bsky.feed.post')).filter(
        (r) => r.value.text === 'Hello from the composer to Bluesky',
      );
      expect(url).toBe(`https://bsky.app/profile/${bluesky.did}/post/${record!.uri.split('/').at(-1)}`);
      await scan('post (published on Bluesky)');
    });

    it('fails a post once the app password is revoked, and publishes it after signing in again', async () => {
      await pds.revokeAppPassword(bluesky, bluesky.appPasswordName);
      const failedId = await publishNow(bluesky.handle, 'After the app password was revoked');
      await failedForReconnect();

      await reconnect(bluesky.handle);
      await untilAt(page, '/channels/sign-in/bluesky');
      // Reconnecting names the account already: a new app password is all it takes.
      expect(await page.getByLabel('Handle').inputValue()).toBe(bluesky.handle);
      await page.getByLabel('App password').fill(await pds.createAppPassword(bluesky, 'post-scheduler-2'));
      await page.getByRole('button', { name: 'Connect Bluesky' }).click();
      await connected(bluesky.handle, RECONNECTED);

      await scheduleAgain(failedId);
      const texts = (await pds.listRecords(bluesky.did, 'app.bsky.feed.post')).map((r) => r.value.text);
      expect(texts.filter((text) => text === 'After the app password was revoked')).toHaveLength(1);
    });

    it('publishes a thread of three written in the composer, four images and their alt texts in its first part', async () => {
      const texts = ['Four pictures to start a thread', 'The thread goes on', 'And ends here'] as const;
      const order = await publishThread(bluesky.handle, 'bluesky', texts);
      const links = await partsListed(texts);
      const url = (await page.locator('dd a').getAttribute('href'))!;

      const records = await pds.listRecords(bluesky.did, 'app.bsky.feed.post');
      const [first, second, third] = texts.map((text) => records.find((record) => record.value.text === text)!);
      const address = (record: PdsRecord) =>
        `https://bsky.app/profile/${bluesky.did}/post/${record.uri.split('/').at(-1)}`;
      expect([url, ...links]).toEqual([first, second, third].map((record) => address(record!)));
      // The first part embeds the images in the composer's order, each with what it shows.
      const embed = first!.value.embed as {
        $type: string;
        images: { alt: string; image: { ref: { toString(): string } }; aspectRatio: unknown }[];
      };
      expect(embed.$type).toBe('app.bsky.embed.images');
      expect(embed.images.map(({ alt, aspectRatio }) => [alt, aspectRatio])).toEqual(
        order.map(({ alt, width, height }) => [alt, { width, height }]),
      );
      for (const [index, { image }] of embed.images.entries())
        expect(await pds.getBlob(bluesky.did, image.ref.toString())).toEqual(pictureBytes(order[index]!));
      // Each later part replies to the one before, in the thread of the first.
      const ref = (record: PdsRecord) => ({ uri: record.uri, cid: record.cid });
      expect(first!.value.reply).toBeUndefined();
      expect(second!.value.reply).toEqual({ root: ref(first!), parent: ref(first!) });
      expect(third!.value.reply).toEqual({ root: ref(first!), parent: ref(second!) });
      await scan('post (a thread published on Bluesky)');
    });
  });

  describe('Mastodon', () => {
    it('connects with the instance typed in, through the Continue page and the instance’s consent', async () => {
      await page.goto(`${server.baseUrl}/settings/channels`);
      await page.getByLabel('Your Mastodon instance').fill(mastodon.url);
      await page.getByRole('button', { name: 'Connect Mastodon' }).click();
      const host = new URL(mastodon.url).host;
      await expect
        .poll(() => page.getByRole('heading', { level: 1 }).textContent(), PAGE_WAIT)
        .toBe(`Continue to ${host}`);
      await scan('Mastodon Continue');
      await page.getByRole('link', { name: `Continue to ${host}` }).click();
      await page.waitForURL((url) => url.origin === new URL(mastodon.url).origin);
      await page.getByRole('button', { name: 'Authorize' }).click();
      await connected('Nora on Mastodon', CONNECTED);
    });

    it('publishes a text post written in the composer, linked to its status on the instance', async () => {
      await publishNow('Nora on Mastodon', 'Hello from the composer to Mastodon');
      const url = await published();
      const status = mastodon.statuses.find((s) => s.text === 'Hello from the composer to Mastodon')!;
      expect(url).toBe(`${mastodon.url}/@nora/${status.id}`);
    });

    it('fails a post once the user revoked the app, and publishes it after consenting again', async () => {
      mastodon.revokeAll();
      const failedId = await publishNow('Nora on Mastodon', 'After the app was revoked on Mastodon');
      await failedForReconnect();

      await reconnect('Nora on Mastodon');
      // The channel's instance is known: straight to the page that sends the user on to it.
      await page.getByRole('link', { name: `Continue to ${new URL(mastodon.url).host}` }).click();
      await page.getByRole('button', { name: 'Authorize' }).click();
      await connected('Nora on Mastodon', RECONNECTED);

      await scheduleAgain(failedId);
      expect(mastodon.statuses.filter((s) => s.text === 'After the app was revoked on Mastodon')).toHaveLength(1);
    });
  });

  describe('X', () => {
    it('connects through X’s consent page', async () => {
      await page.goto(`${server.baseUrl}/settings/channels`);
      await page.getByRole('button', { name: 'Connect X' }).click();
      await connected('Nora on X', CONNECTED);
      // Each network's way to connect stands apart from the next: no button on the next one's field.
      const forms = await Promise.all(
        ['Connect Bluesky', 'Connect Mastodon', 'Connect X', 'Add sandbox channel'].map((name) =>
          page.getByRole('button', { name, exact: true }).locator('xpath=ancestor::form[1]').boundingBox(),
        ),
      );
      for (const [above, below] of forms.slice(0, -1).map((form, i) => [form!, forms[i + 1]!] as const))
        expect(below.y - (above.y + above.height)).toBeGreaterThanOrEqual(8);
      await page.screenshot({ path: artifactPath('channels-text-networks.png'), fullPage: true });
    });

    it('publishes a text post written in the composer, linked to its post on X', async () => {
      await publishNow('Nora on X', 'Hello from the composer to X');
      const url = await published();
      const tweet = x.tweets.find((t) => t.sentText === 'Hello from the composer to X')!;
      expect(url).toBe(`https://x.com/nora_writes/status/${tweet.id}`);
    });

    it('fails a post once the user removed the app at X, and publishes it after consenting again', async () => {
      x.revokeAll();
      const failedId = await publishNow('Nora on X', 'After the app was removed at X');
      await failedForReconnect();

      await reconnect('Nora on X');
      await connected('Nora on X', RECONNECTED);

      await scheduleAgain(failedId);
      expect(x.tweets.filter((t) => t.sentText === 'After the app was removed at X')).toHaveLength(1);
      await page.screenshot({ path: artifactPath('post-text-network-published.png'), fullPage: true });
    });

    it('publishes a thread of three written in the composer, four images and their alt texts in its first part', async () => {
      const texts = ['Four pictures to start a thread on X', 'The thread on X goes on', 'And ends here on X'] as const;
      const order = await publishThread('Nora on X', 'x', texts);
      const links = await partsListed(texts);
      const url = (await page.locator('dd a').getAttribute('href'))!;

      const [first, second, third] = texts.map((text) => x.tweets.find((tweet) => tweet.sentText === text)!);
      expect([url, ...links]).toEqual(
        [first, second, third].map((tweet) => `https://x.com/nora_writes/status/${tweet!.id}`),
      );
      // The first post carries the images in the composer's order, each with its alt text at X.
      const media = first!.mediaIds.map((id) => x.media.find((upload) => upload.id === id)!);
      expect(media.map(({ altText, width, height }) => [altText, width, height])).toEqual(
        order.map(({ alt, width, height }) => [alt, width, height]),
      );
      for (const [index, upload] of media.entries())
        expect(x.mediaBytes(upload.id)).toEqual(pictureBytes(order[index]!));
      // Each later post replies to the one before, in the conversation of the first.
      expect([first, second, third].map((tweet) => [tweet!.inReplyToTweetId, tweet!.conversationId])).toEqual([
        [null, first!.id],
        [first!.id, first!.id],
        [second!.id, first!.id],
      ]);
      expect([second, third].map((tweet) => tweet!.mediaIds)).toEqual([[], []]);
      await scan('post (a thread published on X)');
    });
  });
});
