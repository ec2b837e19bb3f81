import fs from 'node:fs';
import type { Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, skipBrowserTests, type ChromiumProfile } from './support/chromium.js';
import { startTestServer, type TestServer } from './support/server.js';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.js';

const ARTIFACTS = new URL('../test-artifacts/', import.meta.url);

/**
 * Settings → Webhooks as a user works it, in Chromium: an endpoint added with its secret shown once,
 * a test event delivered and verified with that secret, a failed delivery sent again with Retry, the
 * secret rotated, the endpoint deleted.
 */
describe.skipIf(skipBrowserTests)('Settings → Webhooks, in Chromium', () => {
  let server: TestServer;
  let receiver: WebhookReceiver;
  let profile: ChromiumProfile;
  let page: Page;

  beforeAll(async () => {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    receiver = await startWebhookReceiver();
    server = await startTestServer({
      worker: true,
      env: { WEBHOOK_ALLOW_RANGES: '127.0.0.1/32', WEBHOOK_RETRY_SCHEDULE: '0.2' },
    });
    profile = await launchChromium();
    page = await profile.context.newPage();
  }, 120_000);

  afterAll(async () => {
    await profile?.close();
    await server?.close();
    await receiver?.close();
  });

  /** Reloads the endpoint's page until its newest delivery shows `outcome`. */
  async function untilNewest(outcome: string) {
    await expect
      .poll(
        async () => {
          await page.reload();
          return page.locator('tr.delivery .outcome').first().textContent();
        },
        { timeout: 15_000, interval: 300 },
      )
      .toBe(outcome);
  }

  it('adds an endpoint, sends a test event, retries a failed delivery, rotates the secret and deletes the endpoint', async () => {
    await page.goto(`${server.baseUrl}/signup`);
    await page.getByLabel('Your name').fill('Nora');
    await page.getByLabel('Email').fill('nora@hooks.example');
    await page.getByLabel('Password').fill('a long and good password');
    await page.getByLabel('Organization name').fill('Nora Hooks');
    await page.getByRole('button', { name: 'Create account' }).click();
    await expect.poll(() => new URL(page.url()).pathname).not.toBe('/signup');

    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Webhooks' }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Webhooks');
    // A receiver on an address the operator did not allow is refused, with the reason.
    await page.getByLabel('URL').fill('http://10.1.2.3/hooks');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toMatch(/cannot be used: 10\.1\.2\.3 is a private address/);

    await page.getByLabel('URL').fill(receiver.url);
    await page.getByLabel('Description').fill('My receiver');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const secret = await page.getByLabel('The endpoint’s signing secret').inputValue();
    expect(secret).toMatch(/^whsec_/);
    await page.screenshot({ path: new URL('webhooks.png', ARTIFACTS).pathname, fullPage: true });

    await page.getByRole('link', { name: receiver.url }).click();
    await page.getByRole('button', { name: 'Send a test event' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toMatch(/test event is on its way/);
    const [test] = await receiver.untilReceived(1);
    expect(new Webhook(secret).verify(test!.body, test!.headers)).toMatchObject({ type: 'webhook.test' });
    await untilNewest('Delivered');

    receiver.answerNext(500, 500);
    await page.getByRole('button', { name: 'Send a test event' }).click();
    await untilNewest('Failed');
    await page
      .getByRole('button', { name: /^Retry the webhook.test delivery/ })
      .first()
      .click();
    await expect.poll(() => page.getByRole('status').textContent()).toMatch(/on its way again/);
    await untilNewest('Delivered');
    expect(receiver.received.at(-1)!.headers['webhook-id']).toBe(receiver.received.at(-2)!.headers['webhook-id']);

    await page.getByRole('button', { name: 'Rotate the secret' }).click();
    const rotated = await page.getByLabel('The new signing secret').inputValue();
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(secret);

    await page.getByRole('button', { name: 'Delete the endpoint' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toBe('The endpoint is deleted.');
    expect(await page.getByText('No endpoints yet.').count()).toBe(1);
  });
});
