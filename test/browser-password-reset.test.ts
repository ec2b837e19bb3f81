import { afterAll, beforeAll, expect, it } from 'vitest';
import { createOrganizationWithOwner } from '../src/accounts/organizations.js';
import { seriousViolations } from './support/axe.js';
import {
  describeInChromium,
  openBrowser,
  PAGE_WAIT,
  pathOf,
  untilAt,
  type BrowserWithPage,
} from './support/chromium.js';
import { startSmtpSink, type SmtpSink } from './support/smtp-sink.js';
import { startTestServer, type TestServer } from './support/server.js';
import { TIMEOUTS } from './support/timeouts.js';

// A person who forgot their password, in Chromium: "Forgot password?" on the log-in page, the link of the
// mail the SMTP server on loopback received, a new password, and signing in with it.
describeInChromium('a forgotten password in a real browser (Chromium)', () => {
  let server: TestServer;
  let smtp: SmtpSink;
  let browser: BrowserWithPage;

  beforeAll(async () => {
    smtp = await startSmtpSink();
    server = await startTestServer({ worker: true, env: { SMTP_URL: smtp.url } });
    await createOrganizationWithOwner(server.ctx.db, {
      organizationName: 'Noether’s',
      email: 'emmy@example.test',
      password: 'the password she forgot',
    });
    browser = await openBrowser();
  }, 2 * TIMEOUTS.hook);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await smtp?.close();
  });

  it('asks for a link, follows it from the mail, sets a new password and logs in with it', async () => {
    const { page } = browser;
    await page.goto(`${server.baseUrl}/login`);
    await page.getByRole('link', { name: 'Forgot password?' }).click();
    await untilAt(page, '/password/forgot');
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByLabel('Email').fill('emmy@example.test');
    await page.getByRole('button', { name: 'Send the link' }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent(), PAGE_WAIT).toBe('Check your mail');

    const mail = await smtp.next('emmy@example.test');
    const link = mail.links.find((one) => one.includes('/password/reset/'))!;
    await page.goto(link);
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByLabel('New password').fill('a better password now');
    await page.getByRole('button', { name: 'Change password' }).click();
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent(), PAGE_WAIT).toBe('Password changed');

    await page.getByRole('link', { name: 'Log in with the new password' }).click();
    await untilAt(page, '/login');
    await page.getByLabel('Email').fill('emmy@example.test');
    await page.getByLabel('Password').fill('a better password now');
    await page.getByRole('button', { name: 'Log in' }).click();
    await untilAt(page, '/calendar');
    expect(pathOf(page)).toBe('/calendar');
  });
});
