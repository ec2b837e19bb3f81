import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { seriousViolations } from './support/axe.js';
import {
  describeInChromium,
  launchChromium,
  PAGE_WAIT,
  pathOf,
  signUp,
  untilAt,
  type ChromiumProfile,
} from './support/chromium.js';
import { startSmtpSink, type SmtpSink } from './support/smtp-sink.js';
import { startTestServer, type TestServer } from './support/server.js';
import { TIMEOUTS } from './support/timeouts.js';

// A team in Chromium, with mail through a real SMTP server on loopback: the owner signs up and confirms
// the address from the mail, invites a contributor by mail, who accepts from the mail; the contributor's
// post waits for approval, the owner (told by mail) approves it, it is published on the sandbox, and the
// contributor is told by mail; then the owner makes them an editor.
describeInChromium('Members in a real browser (Chromium): invite, accept, approve, change the role', () => {
  let server: TestServer;
  let smtp: SmtpSink;
  let ownerProfile: ChromiumProfile;
  let inviteeProfile: ChromiumProfile;

  beforeAll(async () => {
    smtp = await startSmtpSink();
    server = await startTestServer({ worker: true, env: { SMTP_URL: smtp.url } });
    // The sandbox network of the server itself, where the approved post is published.
    server.ctx.config.sandbox.networkUrl = server.baseUrl;
    ownerProfile = await launchChromium();
    inviteeProfile = await launchChromium();
  }, 2 * TIMEOUTS.hook);

  afterAll(async () => {
    await ownerProfile?.close();
    await inviteeProfile?.close();
    await server?.close();
    await smtp?.close();
    expect([...(ownerProfile?.pageErrors ?? []), ...(inviteeProfile?.pageErrors ?? [])]).toEqual([]);
  });

  /** Follows the link of the next mail to `to` that contains `part`, in `page`. */
  async function followMail(page: Page, to: string, part: string, subject?: string): Promise<string> {
    for (;;) {
      const mail = await smtp.next(to);
      if (subject && mail.subject !== subject) continue;
      const link = mail.links.find((one) => one.includes(part));
      if (!link) continue;
      await page.goto(link);
      return mail.text;
    }
  }

  it('invites a contributor by mail, who joins; their post waits, the owner approves it, it is published, both told by mail; then they are made editor', async () => {
    const owner = await ownerProfile.context.newPage();
    await owner.goto(`${server.baseUrl}/signup`);
    await signUp(owner, { name: 'Olga', email: 'olga@team.example', organization: 'Team Studio' });
    await followMail(owner, 'olga@team.example', '/email/verify/');
    await expect.poll(() => owner.getByRole('heading', { level: 1 }).textContent(), PAGE_WAIT).toContain('confirmed');
    await owner.getByRole('link', { name: 'Settings' }).click();
    await owner.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Members' }).click();
    await untilAt(owner, '/settings/members');
    await owner.getByLabel('Email').fill('cleo@team.example');
    await owner.getByLabel('Role', { exact: true }).selectOption('contributor');
    await owner.getByRole('button', { name: 'Invite' }).click();
    expect(await owner.locator('#new-secret').inputValue()).toContain('/invitations/accept?token=inv_');
    for (const width of [1280, 390]) {
      await owner.setViewportSize({ width, height: 900 });
      expect(await seriousViolations(owner)).toEqual([]);
    }

    const invitee = await inviteeProfile.context.newPage();
    const invitation = await followMail(invitee, 'cleo@team.example', '/invitations/accept?token=inv_');
    expect(invitation).toContain('Team Studio');
    await invitee.getByRole('link', { name: 'Sign up to join' }).click();
    await signUp(invitee, { name: 'Cleo', email: 'cleo@team.example', organization: 'Cleo Solo' });
    expect(pathOf(invitee)).toBe('/invitations/accept');
    await invitee.getByRole('button', { name: 'Join Team Studio' }).click();
    await untilAt(invitee, '/calendar');
    await expect.poll(() => invitee.getByLabel('Organization').inputValue(), PAGE_WAIT).not.toBe('');
    expect(await invitee.locator('#organization-switch option:checked').textContent()).toBe('Team Studio');
    await invitee.getByRole('link', { name: 'Settings' }).click();
    const menu = invitee.getByRole('navigation', { name: 'Settings' });
    await expect
      .poll(() => menu.getByRole('link').allTextContents(), PAGE_WAIT)
      .toEqual(['Channels', 'Members', 'Organization']);
    // Cleo confirms her address (mail goes to confirmed addresses only) and keeps every notification on.
    await followMail(invitee, 'cleo@team.example', '/email/verify/');
    await invitee.goto(`${server.baseUrl}/account`);
    expect(await invitee.getByRole('checkbox', { name: 'Your post was approved or rejected' }).isChecked()).toBe(true);

    // Cleo writes a post: she may not schedule or publish it, only submit it for approval.
    await invitee.goto(`${server.baseUrl}/compose`);
    expect(await invitee.getByRole('button', { name: 'Publish now' }).count()).toBe(0);
    await invitee.getByRole('checkbox', { name: 'Sandbox' }).check();
    await invitee.getByLabel('Text', { exact: true }).fill('Our winter menu is out');
    await invitee.getByLabel('Day', { exact: true }).fill('2031-01-05');
    await invitee.getByLabel('Time', { exact: true }).fill('09:30');
    await invitee.getByRole('button', { name: 'Submit for approval' }).click();
    await expect
      .poll(() => invitee.getByRole('status').first().textContent(), PAGE_WAIT)
      .toBe('The post is submitted for approval: an editor approves or rejects it.');
    const postPath = pathOf(invitee);
    expect(await invitee.locator('[data-post-status]').textContent()).toBe('pending_approval');
    for (const width of [1280, 390]) {
      await invitee.setViewportSize({ width, height: 900 });
      expect(await seriousViolations(invitee)).toEqual([]);
    }

    // Olga is told by mail, opens the post from it, and approves it to be published now.
    const waiting = await followMail(
      owner,
      'olga@team.example',
      postPath,
      'A post awaits your approval · Post Scheduler',
    );
    expect(waiting).toContain('“Our winter menu is out” on sandbox');
    await untilAt(owner, postPath);
    for (const width of [1280, 390]) {
      await owner.setViewportSize({ width, height: 900 });
      expect(await seriousViolations(owner)).toEqual([]);
    }
    await owner.getByRole('button', { name: 'Approve and publish now' }).click();
    await expect
      .poll(() => owner.getByRole('status').first().textContent(), PAGE_WAIT)
      .toBe('The post is approved and scheduled.');
    await expect
      .poll(async () => {
        await owner.reload();
        return owner.locator('[data-post-status]').textContent();
      }, PAGE_WAIT)
      .toBe('published');
    const history = owner.locator('li[data-event-type]');
    const types = await Promise.all((await history.all()).map((item) => item.getAttribute('data-event-type')));
    expect(types).toEqual(expect.arrayContaining(['pending_approval', 'approved', 'scheduled', 'published']));

    // Cleo is told by mail, and her post's page says it is published.
    const approved = await followMail(
      invitee,
      'cleo@team.example',
      postPath,
      'Your post was approved · Post Scheduler',
    );
    expect(approved).toContain('was approved');
    await expect.poll(() => invitee.locator('[data-post-status]').textContent(), PAGE_WAIT).toBe('published');

    await owner.goto(`${server.baseUrl}/settings/members`);
    await owner.getByLabel('Role of cleo@team.example', { exact: true }).selectOption('editor');
    await owner.getByRole('button', { name: 'Change the role of cleo@team.example' }).click();
    await untilAt(owner, '/settings/members');
    expect(await owner.getByLabel('Role of cleo@team.example', { exact: true }).inputValue()).toBe('editor');
  });
});
