import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markNeedsReconnect } from '../src/channels/channels.js';
import { createLogger } from '../src/core/logger.js';
import { sendDigests } from '../src/mail/digest.js';
import { BrowserSession } from './support/browser-session.js';
import { eventually } from './support/eventually.js';
import { startSmtpSink, type SmtpSink } from './support/smtp-sink.js';
import { startTestServer, type TestServer } from './support/server.js';
import { TIMEOUTS } from './support/timeouts.js';

// Mail through a real SMTP server on loopback, sent by the worker from the job queue: the sign-up's
// confirmation, the forgotten password, the change of address (and the notice to the old one); and,
// without SMTP, the log instead.
let smtp: SmtpSink;
let server: TestServer;
const PASSWORD = 'correct horse battery';

beforeAll(async () => {
  smtp = await startSmtpSink();
  server = await startTestServer({
    worker: true,
    env: { SMTP_URL: smtp.url, MAIL_FROM: 'Scheduler <robot@example.test>', INSTALLATION_NAME: 'Acme Scheduler' },
  });
});
afterAll(async () => {
  await server?.close();
  await smtp?.close();
});

async function signUp(email: string): Promise<BrowserSession> {
  const browser = new BrowserSession(server);
  const response = await browser.submit('/signup', '/signup', {
    name: 'Ada',
    email,
    password: PASSWORD,
    organizationName: 'Ada’s studio',
  });
  expect(response.status).toBe(303);
  return browser;
}

const pathOf = (link: string) => new URL(link).pathname;

/** The states of the mail queue's jobs, as pg-boss keeps them. */
async function mailJobStates(): Promise<string[]> {
  const { rows } = await sql<{ state: string }>`select state from pgboss.job where name = 'send-mail'`.execute(
    server.ctx.db,
  );
  return rows.map((row) => row.state);
}

/** Every planned mail was handled (sent, or found not needed). */
const mailQueueIdle = () =>
  eventually(async () => expect((await mailJobStates()).every((state) => state === 'completed')).toBe(true));

// Each test signs a user up (scrypt) and waits for the worker's mail: on a busy machine that takes a while.
describe('mail', { timeout: 2 * TIMEOUTS.test }, () => {
  it('asks a new user to confirm the address, with a banner until the mailed link is followed', async () => {
    const browser = await signUp('ada@example.test');
    const mail = await smtp.next('ada@example.test');
    expect(mail.from).toBe('robot@example.test');
    expect(mail.subject).toBe('Confirm your email address for Acme Scheduler');
    expect(mail.text).toContain('Welcome to Acme Scheduler');
    expect(mail.html).toContain('Confirm my address');
    const [link] = mail.links.filter((one) => one.includes('/email/verify/'));
    expect(link!.startsWith(`${server.baseUrl}/email/verify/`)).toBe(true);

    expect(await (await browser.get('/calendar')).text()).toContain('Please confirm your email address');
    const confirmed = await browser.get(pathOf(link!));
    expect(confirmed.status).toBe(200);
    expect(await confirmed.text()).toContain('ada@example.test is confirmed');
    expect(await (await browser.get('/calendar')).text()).not.toContain('Please confirm your email address');
    // The link works once.
    expect((await browser.get(pathOf(link!))).status).toBe(410);
  });

  it('resets a forgotten password with a single-use link, answering alike for unknown addresses', async () => {
    const signedIn = await signUp('grace@example.test');
    await smtp.next('grace@example.test');

    const visitor = new BrowserSession(server);
    const known = await visitor.submit('/password/forgot', '/password/forgot', { email: 'Grace@Example.test' });
    const unknown = await visitor.submit('/password/forgot', '/password/forgot', { email: 'nobody@example.test' });
    expect([known.status, unknown.status]).toEqual([200, 200]);
    const strip = (html: string) => html.replace(/grace@example\.test|nobody@example\.test/g, 'ADDRESS');
    expect(strip(await known.text())).toBe(strip(await unknown.text()));

    const mail = await smtp.next('grace@example.test');
    expect(mail.subject).toBe('Reset your Acme Scheduler password');
    const link = mail.links.find((one) => one.includes('/password/reset/'))!;
    const form = await visitor.get(pathOf(link));
    expect(form.status).toBe(200);

    const tooShort = await visitor.submit(pathOf(link), pathOf(link), { password: 'short' });
    expect(tooShort.status).toBe(400);
    expect(await tooShort.text()).toContain('Password must be at least 8 characters');

    const changed = await visitor.submit(pathOf(link), pathOf(link), { password: 'a brand new password' });
    expect(changed.status).toBe(200);
    expect(await changed.text()).toContain('Your password was changed');
    // Every session of the user ended; the old password no longer works, the new one does.
    expect((await signedIn.get('/calendar')).status).toBe(302);
    await expect(new BrowserSession(server).logIn('grace@example.test', PASSWORD)).rejects.toThrow(/401/);
    await new BrowserSession(server).logIn('grace@example.test', 'a brand new password');
    // Spent.
    expect((await visitor.get(pathOf(link))).status).toBe(410);

    // No mail went to the unknown address: its job is done, and sent nothing.
    await mailQueueIdle();
    expect(smtp.received.some((one) => one.to.includes('nobody@example.test'))).toBe(false);
  });

  it('mails an invitation with its link, which leads to the invitation', async () => {
    const owner = await signUp('lin@example.test');
    await smtp.next('lin@example.test');
    const answer = await owner.submit('/settings/members', '/settings/members/invitations', {
      email: 'Colleague@Example.test',
      role: 'editor',
    });
    expect(answer.status).toBe(201);
    const mail = await smtp.next('colleague@example.test');
    expect(mail.subject).toBe('Join Ada’s studio on Acme Scheduler');
    expect(mail.text).toContain('Ada invites you to join Ada’s studio on Acme Scheduler as editor.');
    const link = mail.links.find((one) => one.includes('/invitations/accept?token=inv_'))!;
    expect(link.startsWith(server.baseUrl)).toBe(true);
    // The same link as the page showed once.
    expect(await answer.text()).toContain(link.replace(/&/g, '&amp;'));
    const landing = await new BrowserSession(server).get(new URL(link).pathname + new URL(link).search);
    expect(landing.status).toBe(200);
    expect(await landing.text()).toContain('invited to <strong>Ada’s studio</strong> as <strong>editor</strong>');
  });

  it('lets a reset link expire after 30 minutes', async () => {
    await signUp('hedy@example.test');
    await smtp.next('hedy@example.test');
    const visitor = new BrowserSession(server);
    await visitor.submit('/password/forgot', '/password/forgot', { email: 'hedy@example.test' });
    const link = (await smtp.next('hedy@example.test')).links.find((one) => one.includes('/password/reset/'))!;
    await server.clock.advance(31 * 60_000);
    expect((await visitor.get(pathOf(link))).status).toBe(410);
    const late = await visitor.request(pathOf(link), {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'password=whatever+long',
    });
    expect(late.status).toBe(403);
  });

  it('throttles reset requests per address', async () => {
    const visitor = new BrowserSession(server);
    const statuses = [];
    for (let i = 0; i < 4; i++)
      statuses.push(
        (await visitor.submit('/password/forgot', '/password/forgot', { email: 'lots@example.test' })).status,
      );
    expect(statuses).toEqual([200, 200, 200, 429]);
  });

  it('changes the address only once the link mailed to the new one is followed', async () => {
    const browser = await signUp('alan@example.test');
    await smtp.next('alan@example.test');

    const wrong = await browser.submit('/account', '/account/email', {
      email: 'turing@example.test',
      password: 'nope nope',
    });
    expect(wrong.status).toBe(422);
    expect(await wrong.text()).toContain('Your password is not right');

    const asked = await browser.submit('/account', '/account/email', {
      email: 'Turing@example.test',
      password: PASSWORD,
    });
    expect(asked.status).toBe(200);
    expect(await asked.text()).toContain('We sent a link to turing@example.test');
    const mail = await smtp.next('turing@example.test');
    expect(mail.text).toContain('Until you confirm it, you keep signing in with your old one');
    // Until then the old address signs in.
    await new BrowserSession(server).logIn('alan@example.test', PASSWORD);

    const link = mail.links.find((one) => one.includes('/email/verify/'))!;
    expect((await new BrowserSession(server).get(pathOf(link))).status).toBe(200);
    await new BrowserSession(server).logIn('turing@example.test', PASSWORD);
    await expect(new BrowserSession(server).logIn('alan@example.test', PASSWORD)).rejects.toThrow(/401/);
    expect(await (await browser.get('/account')).text()).toContain(
      'You sign in with <strong>turing@example.test</strong> (confirmed)',
    );
    // The old address hears of the change, with where to turn if it was not its owner who made it.
    const notice = await smtp.next('alan@example.test');
    expect(notice.subject).toBe('Your Acme Scheduler address was changed');
    expect(notice.text).toContain('was changed from this one to turing@example.test');
    expect(notice.text).toContain("If this wasn't you");
    expect(notice.html).toContain('<strong>turing@example.test</strong>');
  });

  it('tries again later when the SMTP server refuses for now', async () => {
    smtp.refuseNext(1);
    await signUp('barbara@example.test');
    await eventually(async () => expect(await mailJobStates()).toContain('retry'));
    await server.clock.advance(5 * 60_000);
    const mail = await smtp.next('barbara@example.test');
    expect(mail.subject).toContain('Confirm your email address');
  });
});

describe('notifications by mail', { timeout: 2 * TIMEOUTS.test }, () => {
  it('tell members of a channel that needs reconnecting, with an unsubscribe link that works signed out', async () => {
    const browser = await signUp('mary@example.test');
    const welcome = await smtp.next('mary@example.test');
    await browser.get(pathOf(welcome.links.find((one) => one.includes('/email/verify/'))!));
    const channel = await server.ctx.db
      .selectFrom('channels')
      .innerJoin('memberships', 'memberships.organization_id', 'channels.organization_id')
      .innerJoin('users', 'users.id', 'memberships.user_id')
      .select('channels.id')
      .where('users.email', '=', 'mary@example.test')
      .executeTakeFirstOrThrow();

    await markNeedsReconnect(server.ctx.db, channel.id, server.clock.now());
    const mail = await smtp.next('mary@example.test');
    expect(mail.subject).toBe('Sandbox needs to be connected again · Acme Scheduler');
    expect(mail.links).toContain(`${server.baseUrl}/settings/channels`);
    const unsubscribe = mail.links.find((one) => one.includes('/mail/unsubscribe/'))!;

    const stranger = new BrowserSession(server);
    const tampered = pathOf(unsubscribe).replace(/.$/, (last) => (last === 'A' ? 'B' : 'A'));
    expect((await stranger.get(tampered)).status).toBe(404);
    const done = await stranger.submit(pathOf(unsubscribe), pathOf(unsubscribe), {});
    expect(done.status).toBe(200);
    expect(await done.text()).toContain('You get no more mail about this');
    expect(await (await browser.get('/account')).text()).not.toMatch(/name="channel-needs-reconnect" checked/);

    // The next time, nothing: the event is dispatched, its mail planned for nobody.
    await server.ctx.db.updateTable('channels').set({ status: 'active' }).where('id', '=', channel.id).execute();
    await markNeedsReconnect(server.ctx.db, channel.id, server.clock.now());
    await eventually(async () => {
      const waiting = await server.ctx.db
        .selectFrom('channel_events')
        .select('id')
        .where('webhooks_dispatched_at', 'is', null)
        .execute();
      expect(waiting).toEqual([]);
    });
    await mailQueueIdle();
    expect(smtp.received.filter((one) => one.to.includes('mary@example.test'))).toHaveLength(2);
  });

  it("gathers the day's notifications in one mail for a member who chose the daily digest, once a day", async () => {
    const browser = await signUp('dora@example.test');
    const welcome = await smtp.next('dora@example.test');
    await browser.get(pathOf(welcome.links.find((one) => one.includes('/email/verify/'))!));
    const saved = await browser.submit('/account', '/account/notifications', {
      'post-failed': 'on',
      'channel-needs-reconnect': 'on',
      'channel-expiring': 'on',
      delivery: 'digest',
    });
    expect(await saved.text()).toMatch(/name="delivery" value="digest" checked/);
    const channel = await server.ctx.db
      .selectFrom('channels')
      .innerJoin('memberships', 'memberships.organization_id', 'channels.organization_id')
      .innerJoin('users', 'users.id', 'memberships.user_id')
      .select('channels.id')
      .where('users.email', '=', 'dora@example.test')
      .executeTakeFirstOrThrow();
    /** The channel needs connecting again (once more), and `waiting` notifications wait for the digest. */
    const notify = async (waiting: number) => {
      await server.ctx.db.updateTable('channels').set({ status: 'active' }).where('id', '=', channel.id).execute();
      await markNeedsReconnect(server.ctx.db, channel.id, server.clock.now());
      await eventually(async () => {
        const items = await server.ctx.db
          .selectFrom('notification_digest_items')
          .innerJoin('users', 'users.id', 'notification_digest_items.user_id')
          .select('notification_digest_items.id')
          .where('users.email', '=', 'dora@example.test')
          .execute();
        expect(items).toHaveLength(waiting);
      });
    };
    await notify(1);
    await notify(2);
    await mailQueueIdle();
    // Nothing of its own: the notifications wait for the digest.
    expect(smtp.received.filter((one) => one.to.includes('dora@example.test'))).toHaveLength(1);

    expect(await sendDigests(server.ctx, server.clock.now())).toBe(1);
    const digest = await smtp.next('dora@example.test');
    expect(digest.subject).toBe('Your Acme Scheduler digest: 2 notifications');
    expect(digest.text.match(/Sandbox needs to be connected again/g)).toHaveLength(2);
    expect(digest.links).toContain(`${server.baseUrl}/settings/channels`);

    // The same day again (the job run twice, or by two workers): no second digest; the new one waits.
    await notify(1);
    expect(await sendDigests(server.ctx, server.clock.now())).toBe(0);
    await server.clock.advance(86_400_000);
    expect(await sendDigests(server.ctx, server.clock.now())).toBe(1);
    expect((await smtp.next('dora@example.test')).subject).toBe('Your Acme Scheduler digest: 1 notification');
  });
});

describe('mail without SMTP', { timeout: 2 * TIMEOUTS.test }, () => {
  it('is logged by recipient, kind and subject, never with its link', async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger(
      { logLevel: 'info' },
      { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
    );
    const quiet = await startTestServer({ worker: true, logger });
    try {
      const visitor = new BrowserSession(quiet);
      await visitor.submit('/signup', '/signup', {
        name: 'Lin',
        email: 'lin@example.test',
        password: PASSWORD,
        organizationName: 'Lin',
      });
      const page = await visitor.get('/calendar');
      expect(await page.text()).not.toContain('Please confirm your email address');
      const sent = await new BrowserSession(quiet).submit('/password/forgot', '/password/forgot', {
        email: 'lin@example.test',
      });
      expect(await sent.text()).toContain('reset-password --email lin@example.test');
      const line = await eventually(() => {
        const found = lines.find((one) => one.kind === 'password-reset');
        expect(found).toBeDefined();
        return found!;
      });
      expect(line).toMatchObject({ to: 'lin@example.test', subject: 'Reset your Post Scheduler password' });
      expect(JSON.stringify(lines)).not.toContain('/password/reset/');
    } finally {
      await quiet.close();
    }
  });
});
