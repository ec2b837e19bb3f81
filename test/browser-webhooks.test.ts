import type { Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  artifactPath,
  describeInChromium,
  openBrowser,
  pageWidth,
  PAGE_WAIT,
  signUp,
  type BrowserWithPage,
} from './support/chromium.js';
import { seriousViolations } from './support/axe.js';
import { eventually } from './support/eventually.js';
import { startTestServer, type TestServer } from './support/server.js';
import { TIMEOUTS } from './support/timeouts.js';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.js';

/**
 * Settings → Webhooks as a user works it, in Chromium: an endpoint added with its secret shown once,
 * a test event delivered and verified with that secret, a failed delivery sent again with Retry, the
 * secret rotated, the endpoint deleted.
 */
describeInChromium('Settings → Webhooks, in Chromium', () => {
  let server: TestServer;
  let receiver: WebhookReceiver;
  let browser: BrowserWithPage;
  let page: Page;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    server = await startTestServer({
      worker: true,
      env: { WEBHOOK_ALLOW_RANGES: '127.0.0.1/32', WEBHOOK_RETRY_SCHEDULE: '0.2' },
    });
    browser = await openBrowser();
    page = browser.page;
  }, 2 * TIMEOUTS.hook);

  afterAll(async () => {
    await server?.close();
    await receiver?.close();
    await browser?.close();
  });

  /** The page as it is now, loaded again at a phone's width (390 px), does not scroll sideways. */
  async function fitsAPhone(name: string) {
    const desktop = page.viewportSize()!;
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await page.reload();
      const { scrollWidth, wider } = await pageWidth(page);
      expect(scrollWidth, `${name} is wider than 390 px: ${wider.join(', ')}`).toBeLessThanOrEqual(390);
    } finally {
      await page.setViewportSize(desktop);
    }
  }

  /** Reloads the endpoint's page until its newest delivery shows `outcome`. */
  async function untilNewest(outcome: string) {
    await eventually(
      async () => {
        await page.reload();
        expect(await page.locator('tr.delivery .outcome').first().textContent()).toBe(outcome);
      },
      { timeout: TIMEOUTS.browser, interval: 200 },
    );
  }

  it('adds an endpoint, sends a test event, retries a failed delivery, rotates the secret and deletes the endpoint', async () => {
    await page.goto(`${server.baseUrl}/signup`);
    await signUp(page, { name: 'Nora', email: 'nora@hooks.example', organization: 'Nora Hooks' });

    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Webhooks' }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent(), PAGE_WAIT).toBe('Webhooks');
    // A receiver on an address the operator did not allow is refused, with the reason.
    await page.getByLabel('URL').fill('http://10.1.2.3/hooks');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await expect
      .poll(() => page.getByRole('alert').textContent(), PAGE_WAIT)
      .toMatch(/cannot be used: 10\.1\.2\.3 is a private address\. The operator .* WEBHOOK_ALLOW_RANGES/);

    await page.getByLabel('URL').fill(receiver.url);
    await page.getByLabel('Description').fill('My receiver');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const secret = await page.getByLabel('The endpoint’s signing secret').inputValue();
    expect(secret).toMatch(/^whsec_/);
    await page.screenshot({ path: artifactPath('webhooks.png'), fullPage: true });

    await page.getByRole('link', { name: receiver.url }).click();
    await page.getByRole('button', { name: 'Send a test event' }).click();
    await expect.poll(() => page.getByRole('status').textContent(), PAGE_WAIT).toMatch(/test event is on its way/);
    const [test] = await receiver.untilReceived(1);
    expect(new Webhook(secret).verify(test!.body, test!.headers)).toMatchObject({ type: 'webhook.test' });
    await untilNewest('Delivered');
    expect(await seriousViolations(page)).toEqual([]);

    // A delivery made while the page is open shows on it without a reload, and is told to screen readers.
    await page.evaluate("document.body.setAttribute('data-loaded-once', 'yes')");
    receiver.answerNext(500, 500);
    const sent = await page.request.post(`${server.baseUrl}${new URL(page.url()).pathname}/test`, {
      form: { csrf_token: await page.locator('input[name="csrf_token"]').first().inputValue() },
      maxRedirects: 0,
    });
    expect(sent.status()).toBe(303);
    const newest = () => page.locator('tr.delivery .outcome').first().textContent();
    await expect.poll(newest, { timeout: TIMEOUTS.browser }).toBe('Failed');
    expect(await page.locator('tr.delivery').count()).toBe(2);
    expect(await page.locator('#deliveries-updated').textContent()).toMatch(/^Deliveries updated: 1 delivered, /);
    expect(await page.locator('body').getAttribute('data-loaded-once')).toBe('yes');
    // The list alone is the endpoint's: another id is not found.
    expect((await page.request.get(`${server.baseUrl}/settings/webhooks/whk_none/deliveries`)).status()).toBe(404);
    await page
      .getByRole('button', { name: /^Retry the webhook.test delivery/ })
      .first()
      .click();
    await expect.poll(() => page.getByRole('status').textContent(), PAGE_WAIT).toMatch(/on its way again/);
    await untilNewest('Delivered');
    await fitsAPhone('the webhook’s page');
    expect(receiver.received.at(-1)!.headers['webhook-id']).toBe(receiver.received.at(-2)!.headers['webhook-id']);

    await page.getByRole('button', { name: 'Rotate the secret' }).click();
    const rotated = await page.getByLabel('The new signing secret').inputValue();
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(secret);

    await page.getByRole('button', { name: 'Delete the endpoint' }).click();
    await expect.poll(() => page.getByRole('status').textContent(), PAGE_WAIT).toBe('The endpoint is deleted.');
    expect(await page.getByText('No endpoints yet.').count()).toBe(1);

    // Settings → Developers → Access with a key fits a phone too.
    await page.goto(`${server.baseUrl}/settings/developers/access`);
    await page.getByLabel('Name').fill('Publishing server with a long name');
    await page.getByRole('button', { name: /Create/ }).click();
    await expect.poll(() => page.locator('tr').count(), PAGE_WAIT).toBeGreaterThan(1);
    await page.goto(`${server.baseUrl}/settings/developers/access`);
    await fitsAPhone('the API keys');
  });
});
