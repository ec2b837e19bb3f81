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
import { startTestServer, type TestServer } from './support/server.js';
import { TIMEOUTS } from './support/timeouts.js';

describeInChromium('Members in a real browser (Chromium): invite, accept, change the role', () => {
  let server: TestServer;
  let ownerProfile: ChromiumProfile;
  let inviteeProfile: ChromiumProfile;

  beforeAll(async () => {
    server = await startTestServer();
    ownerProfile = await launchChromium();
    inviteeProfile = await launchChromium();
  }, 2 * TIMEOUTS.hook);

  afterAll(async () => {
    await ownerProfile?.close();
    await inviteeProfile?.close();
    await server?.close();
    expect([...(ownerProfile?.pageErrors ?? []), ...(inviteeProfile?.pageErrors ?? [])]).toEqual([]);
  });

  it('invites a contributor by link, who signs up, joins and sees only the settings of their role, then is made editor', async () => {
    const owner = await ownerProfile.context.newPage();
    await owner.goto(`${server.baseUrl}/signup`);
    await signUp(owner, { name: 'Olga', email: 'olga@team.example', organization: 'Team Studio' });
    await owner.getByRole('link', { name: 'Settings' }).click();
    await owner.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Members' }).click();
    await untilAt(owner, '/settings/members');
    await owner.getByLabel('Email').fill('cleo@team.example');
    await owner.getByLabel('Role', { exact: true }).selectOption('contributor');
    await owner.getByRole('button', { name: 'Invite' }).click();
    const link = await owner.locator('#new-secret').inputValue();
    expect(link).toContain('/invitations/accept?token=inv_');
    for (const width of [1280, 390]) {
      await owner.setViewportSize({ width, height: 900 });
      expect(await seriousViolations(owner)).toEqual([]);
    }

    const invitee = await inviteeProfile.context.newPage();
    await invitee.goto(link);
    await invitee.getByRole('link', { name: 'Sign up to join' }).click();
    await signUp(invitee, { name: 'Cleo', email: 'cleo@team.example', organization: 'Cleo Solo' });
    expect(pathOf(invitee)).toBe('/invitations/accept');
    await invitee.getByRole('button', { name: 'Join Team Studio' }).click();
    await untilAt(invitee, '/calendar');
    await expect.poll(() => invitee.getByLabel('Organization').inputValue(), PAGE_WAIT).not.toBe('');
    expect(await invitee.locator('#organization-switch option:checked').textContent()).toBe('Team Studio');
    await invitee.getByRole('link', { name: 'Settings' }).click();
    const menu = invitee.getByRole('navigation', { name: 'Settings' });
    await expect.poll(() => menu.getByRole('link').allTextContents(), PAGE_WAIT).toEqual(['Channels', 'Members']);

    await owner.goto(`${server.baseUrl}/settings/members`);
    await owner.getByLabel('Role of cleo@team.example', { exact: true }).selectOption('editor');
    await owner.getByRole('button', { name: 'Change the role of cleo@team.example' }).click();
    await untilAt(owner, '/settings/members');
    expect(await owner.getByLabel('Role of cleo@team.example', { exact: true }).inputValue()).toBe('editor');
  });
});
