import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../src/accounts/api-keys.js';
import { addMember } from '../src/accounts/members.js';
import { createOrganizationWithOwner } from '../src/accounts/organizations.js';
import type { Role } from '../src/core/roles.js';
import { setNotificationWanted } from '../src/mail/preferences.js';
import { publicApi } from './support/api.js';
import { eventually } from './support/eventually.js';
import { createChannel, createOrganization, type TestOrganization } from './support/fixtures.js';
import { approve, createOAuthApp, exchange } from './support/oauth.js';
import { POSTS_TEST_ENV } from './support/posts.js';
import { startTestServer, type TestServer } from './support/server.js';
import { startSmtpSink, type ReceivedMail, type SmtpSink } from './support/smtp-sink.js';
import { TIMEOUTS } from './support/timeouts.js';
import { dataOf, refusalOf } from './support/typed-answers.js';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.js';

// Approval through the Public API: a contributor's post waits in `pending_approval`, is never published
// while it waits, and an editor approves it (at its time, or now) or rejects it with a comment; each step
// is in the history, reaches webhooks, and is told by mail to those who decide and to the author.
let server: TestServer;
let smtp: SmtpSink;
let receiver: WebhookReceiver;
let org: TestOrganization;
let channelId: string;
/** The contributor acts through an OAuth app they approved: the member the post's mail goes back to. */
let contributor: { auth: { Authorization: string }; email: string };
let editor: { auth: { Authorization: string }; email: string };
let viewer: { auth: { Authorization: string }; email: string };

const HOUR = 3_600_000;

/** A member of the organization with `role` and a confirmed address. */
async function member(role: Role, email: string) {
  const { user } = await createOrganizationWithOwner(server.ctx.db, {
    organizationName: `${email}'s own`,
    email,
    password: 'correct horse battery staple',
  });
  await addMember(server.ctx.db, org.id, user.id, role);
  await server.ctx.db.updateTable('users').set({ email_verified_at: new Date() }).where('id', '=', user.id).execute();
  return user;
}

beforeAll(async () => {
  smtp = await startSmtpSink();
  receiver = await startWebhookReceiver();
  server = await startTestServer({
    worker: true,
    env: { ...POSTS_TEST_ENV, SMTP_URL: smtp.url, WEBHOOK_ALLOW_RANGES: '127.0.0.1/32' },
  });
  server.ctx.config.sandbox.networkUrl = server.baseUrl;
  org = await createOrganization(server.ctx.db, 'Approval Studio');
  await server.ctx.db
    .updateTable('users')
    .set({ email_verified_at: new Date() })
    .where('id', '=', org.userId)
    .execute();
  channelId = (await createChannel(server.ctx.db, org.id, 'sandbox')).id;

  const cleo = await member('contributor', 'cleo@approval.example');
  const app = await createOAuthApp(server.ctx.db, org.id);
  const token = await exchange(server, app, await approve(server.ctx.db, app, { ...org, userId: cleo.id }));
  contributor = { auth: { Authorization: `Bearer ${token}` }, email: 'cleo@approval.example' };

  // The editor turned off the mail of posts waiting for them: only the owner gets it.
  const eddie = await member('editor', 'eddie@approval.example');
  await setNotificationWanted(server.ctx.db, eddie.id, 'post-awaits-approval', false);
  const editorKey = await createApiKey(server.ctx.db, org.id, 'Editor key', { role: 'editor' });
  editor = { auth: { Authorization: `Bearer ${editorKey.secret}` }, email: 'eddie@approval.example' };
  await member('viewer', 'vera@approval.example');
  const viewerKey = await createApiKey(server.ctx.db, org.id, 'Viewer key', { role: 'viewer' });
  viewer = { auth: { Authorization: `Bearer ${viewerKey.secret}` }, email: 'vera@approval.example' };

  dataOf(
    await publicApi(server, org.auth).POST('/public/v1/webhooks', {
      body: { url: receiver.url, eventTypes: ['post.pending_approval', 'post.approved', 'post.rejected'] },
    }),
    201,
  );
}, 2 * TIMEOUTS.hook);

afterAll(async () => {
  await server?.close();
  await smtp?.close();
  await receiver?.close();
});

const api = (who: { Authorization: string }) => publicApi(server, who);
const path = (id: string) => ({ params: { path: { id } } });
const getPost = async (id: string) => dataOf(await api(org.auth).GET('/public/v1/posts/{id}', path(id)));
const historyOf = async (id: string) =>
  dataOf(await api(org.auth).GET('/public/v1/posts/{id}/history', path(id))).data.map((event) => ({
    type: event.type,
    status: event.status,
    ...(event.comment === undefined ? {} : { comment: event.comment }),
  }));

async function submit(content: string, date: string) {
  const created = await api(contributor.auth).POST('/public/v1/posts', {
    body: { type: 'schedule', date, content, channelIds: [channelId] },
  });
  return dataOf(created, 201).data[0]!;
}

/** The mail to `to` whose subject starts with `headline`, once it came. */
async function mailTo(to: string, headline: string): Promise<ReceivedMail> {
  for (;;) {
    const mail = await smtp.next(to);
    if (mail.subject.startsWith(headline)) return mail;
  }
}

describe('approval', { timeout: 2 * TIMEOUTS.test }, () => {
  it('keeps a contributor’s post waiting, never published, until an editor approves it; rejects with a comment', async () => {
    const now = server.clock.now();
    const inAnHour = new Date(now.getTime() + HOUR).toISOString();
    const first = await submit('Winter sale starts', inAnHour);
    expect(first).toMatchObject({ status: 'pending_approval', scheduledAt: inAnHour });
    const second = await submit('Second thoughts', inAnHour);
    expect(await historyOf(first.id)).toEqual([
      { type: 'created', status: 'pending_approval' },
      { type: 'pending_approval', status: 'pending_approval' },
    ]);
    const listed = dataOf(
      await api(org.auth).GET('/public/v1/posts', { params: { query: { status: ['pending_approval'] } } }),
    );
    expect(listed.data.map((post) => post.id).sort()).toEqual([first.id, second.id].sort());

    // Those who decide hear of it (the owner; the editor turned it off), the author and a viewer don't.
    const waiting = await mailTo(org.email, 'A post awaits your approval');
    expect(waiting.text).toContain('“Winter sale starts” on sandbox');
    expect(waiting.links).toContain(`${server.baseUrl}/posts/${first.id}`);

    // Only editors and above decide; another organization's post is not there.
    for (const who of [contributor.auth, viewer.auth]) {
      refusalOf(
        await api(who).POST('/public/v1/posts/{id}/approve', { ...path(first.id), body: {} }),
        403,
        'forbidden',
      );
      refusalOf(
        await api(who).POST('/public/v1/posts/{id}/reject', { ...path(first.id), body: { comment: 'No' } }),
        403,
        'forbidden',
      );
    }
    const stranger = await createOrganization(server.ctx.db, 'Elsewhere');
    refusalOf(
      await api(stranger.auth).POST('/public/v1/posts/{id}/approve', { ...path(first.id), body: {} }),
      404,
      'not_found',
    );

    // Its time passes: nothing waiting is published, and approving it "at its time" is refused.
    await server.clock.advance(2 * HOUR);
    const late = refusalOf(
      await api(editor.auth).POST('/public/v1/posts/{id}/approve', { ...path(first.id), body: { when: 'scheduled' } }),
      422,
      'unprocessable',
    );
    expect(late.message).toMatch(/has passed; approve it to be published now \(when: now\)/);
    const approved = dataOf(
      await api(editor.auth).POST('/public/v1/posts/{id}/approve', { ...path(first.id), body: { when: 'now' } }),
    );
    expect(approved.status).toBe('scheduled');
    await eventually(async () => expect((await getPost(first.id)).status).toBe('published'));
    // The publisher took the approved post and left the one still waiting.
    expect(await getPost(second.id)).toMatchObject({ status: 'pending_approval', publishedAt: null });
    expect((await historyOf(second.id)).map((event) => event.type)).toEqual(['created', 'pending_approval']);
    expect((await historyOf(first.id)).slice(2, 4)).toEqual([
      { type: 'approved', status: 'scheduled' },
      { type: 'scheduled', status: 'scheduled' },
    ]);
    const told = await mailTo(contributor.email, 'Your post was approved');
    expect(told.text).toContain('“Winter sale starts” on sandbox was approved');

    // A decided post has nothing left to decide.
    refusalOf(
      await api(editor.auth).POST('/public/v1/posts/{id}/approve', { ...path(first.id), body: {} }),
      409,
      'conflict',
    );

    const rejected = dataOf(
      await api(editor.auth).POST('/public/v1/posts/{id}/reject', {
        ...path(second.id),
        body: { comment: 'Add the link to the shop.' },
      }),
    );
    expect(rejected.status).toBe('draft');
    expect((await historyOf(second.id)).at(-1)).toEqual({
      type: 'rejected',
      status: 'draft',
      comment: 'Add the link to the shop.',
    });
    // The organization's audit log has both decisions, by the editor's key.
    const decisions = await server.ctx.db
      .selectFrom('audit_log')
      .select(['action', 'subject_id', 'details'])
      .where('action', 'in', ['post.approved', 'post.rejected'])
      .where('subject_id', 'in', [first.id, second.id])
      .orderBy('created_at')
      .execute();
    expect(decisions).toEqual([
      { action: 'post.approved', subject_id: first.id, details: { when: 'now' } },
      { action: 'post.rejected', subject_id: second.id, details: { comment: 'Add the link to the shop.' } },
    ]);
    const why = await mailTo(contributor.email, 'Your post was rejected');
    expect(why.text).toContain('The reviewer said: “Add the link to the shop.”');

    // The author changes it and asks again at a new time: it waits again, and the editor approves it there.
    const later = new Date(server.clock.now().getTime() + 3 * HOUR).toISOString();
    dataOf(
      await api(contributor.auth).PATCH('/public/v1/posts/{id}', {
        ...path(second.id),
        body: { content: 'Shop: https://shop.example' },
      }),
    );
    const again = dataOf(
      await api(contributor.auth).POST('/public/v1/posts/{id}/schedule', {
        ...path(second.id),
        body: { scheduledAt: later },
      }),
    );
    expect(again).toMatchObject({ status: 'pending_approval', scheduledAt: later });
    const scheduled = dataOf(
      await api(editor.auth).POST('/public/v1/posts/{id}/approve', { ...path(second.id), body: {} }),
    );
    expect(scheduled).toMatchObject({ status: 'scheduled', scheduledAt: later });
    // The contributor may no longer touch it once it is scheduled.
    refusalOf(
      await api(contributor.auth).PATCH('/public/v1/posts/{id}/status', {
        ...path(second.id),
        body: { status: 'draft' },
      }),
      403,
      'forbidden',
    );

    // Webhooks got every step, in order, for each post.
    const received = await receiver.untilReceived(6);
    const events = received.map((one) => JSON.parse(one.body) as { type: string; data: { id: string } });
    expect(events.filter((event) => event.data.id === second.id).map((event) => event.type)).toEqual([
      'post.pending_approval',
      'post.rejected',
      'post.pending_approval',
      'post.approved',
    ]);
    expect(events.filter((event) => event.data.id === first.id).map((event) => event.type)).toEqual([
      'post.pending_approval',
      'post.approved',
    ]);

    // Nobody else was told: the editor turned it off, the viewer does not decide.
    await mailTo(org.email, 'A post awaits your approval');
    await mailTo(org.email, 'A post awaits your approval');
    for (const quiet of [editor.email, viewer.email])
      expect(smtp.received.filter((mail) => mail.to.includes(quiet))).toEqual([]);
  });

  it('lets a contributor take a waiting post back, and publish now only through approval', async () => {
    const created = dataOf(
      await api(contributor.auth).POST('/public/v1/posts', {
        body: { type: 'now', content: 'Right away please', channelIds: [channelId] },
      }),
      201,
    ).data[0]!;
    expect(created.status).toBe('pending_approval');
    const back = dataOf(
      await api(contributor.auth).PATCH('/public/v1/posts/{id}/status', {
        ...path(created.id),
        body: { status: 'draft' },
      }),
    );
    expect(back.status).toBe('draft');
    const resubmitted = dataOf(
      await api(contributor.auth).PATCH('/public/v1/posts/{id}/status', {
        ...path(created.id),
        body: { status: 'scheduled' },
      }),
    );
    expect(resubmitted.status).toBe('pending_approval');
    // An editor moving the waiting post to `scheduled` approves it (at its time, which is now).
    const moved = dataOf(
      await api(editor.auth).PATCH('/public/v1/posts/{id}/status', {
        ...path(created.id),
        body: { status: 'scheduled' },
      }),
    );
    expect(moved.status).toBe('scheduled');
    // The publisher may have started on it already: what came before is the approval.
    expect((await historyOf(created.id)).map((event) => event.type).slice(0, 6)).toEqual([
      'created',
      'pending_approval',
      'drafted',
      'pending_approval',
      'approved',
      'scheduled',
    ]);
    await eventually(async () => expect((await getPost(created.id)).status).toBe('published'));
  });
});
