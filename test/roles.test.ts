import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../src/accounts/api-keys.js';
import { forgetSpentInvitations } from '../src/accounts/invitations.js';
import { addMember } from '../src/accounts/members.js';
import { createOrganizationWithOwner } from '../src/accounts/organizations.js';
import fs from 'node:fs';
import path from 'node:path';
import { newId } from '../src/core/ids.js';
import { ROLES, type Role } from '../src/core/roles.js';
import { SPEC_FILES } from '../src/core/contract.js';
import { readOperationRoutes } from '../src/http/spec.js';
import { publicApi } from './support/api.js';
import { BrowserSession, inputValue } from './support/browser-session.js';
import { createChannel, createOrganization, insertPost, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';
import { approve, createOAuthApp, exchange } from './support/oauth.js';
import { TIMEOUTS } from './support/timeouts.js';
import { dataOf, refusalOf } from './support/typed-answers.js';

let server: TestServer;
let org: TestOrganization;
let channelId: string;
const keys = {} as Record<Role, { Authorization: string }>;

beforeAll(async () => {
  server = await startTestServer();
  org = await createOrganization(server.ctx.db, 'Roles Studio');
  channelId = (await createChannel(server.ctx.db, org.id, 'sandbox')).id;
  for (const role of ROLES) {
    const { secret } = await createApiKey(server.ctx.db, org.id, `${role} key`, { role });
    keys[role] = { Authorization: `Bearer ${secret}` };
  }
});
afterAll(() => server?.close());

const LATER = '2031-01-05T10:00:00.000Z';

async function draft(): Promise<string> {
  const created = await publicApi(server, org.auth).POST('/public/v1/posts', {
    body: { type: 'draft', content: 'A draft', channelIds: [channelId] },
  });
  return dataOf(created, 201).data[0]!.id;
}

async function scheduled(): Promise<string> {
  const created = await publicApi(server, org.auth).POST('/public/v1/posts', {
    body: { type: 'schedule', date: LATER, content: 'Planned', channelIds: [channelId] },
  });
  return dataOf(created, 201).data[0]!.id;
}

/** Whether the answer says the role may (any status but 403) or may not (403 `forbidden`, in the envelope). */
function allowed(answer: { response: Response; error?: { error: { code: string } } }): boolean {
  if (answer.response.status !== 403) return true;
  expect(answer.error?.error.code).toBe('forbidden');
  return false;
}

describe('the permission table through the Public API (a key per role)', () => {
  it('tells a key its role, and a key made before roles acts as an owner', async () => {
    for (const role of ROLES) {
      const answer = dataOf(await publicApi(server, keys[role]).GET('/public/v1/is-connected'));
      expect(answer.credential).toEqual({ type: 'api_key', role });
    }
    // The fixture's key is made as the CLI makes them: without a member, with no role of its own.
    expect(dataOf(await publicApi(server, org.auth).GET('/public/v1/is-connected')).credential.role).toBe('owner');
  });

  it('lets every role read posts, media and channels, and only owners and admins see webhooks', async () => {
    for (const role of ROLES) {
      const api = publicApi(server, keys[role]);
      dataOf(await api.GET('/public/v1/posts'));
      dataOf(await api.GET('/public/v1/media'));
      dataOf(await api.GET('/public/v1/channels'));
      expect([role, allowed(await api.GET('/public/v1/webhooks'))]).toEqual([
        role,
        role === 'owner' || role === 'admin',
      ]);
    }
  });

  it('decides each change by the role: drafts from contributors up, publishing from editors, channels from admins', async () => {
    const table: Record<string, boolean[]> = {};
    for (const role of ROLES) {
      const api = publicApi(server, keys[role]);
      const unknown = { params: { path: { id: 'post_unknown' } } };
      table[role] = [
        allowed(
          await api.POST('/public/v1/posts', { body: { type: 'draft', content: 'Mine', channelIds: [channelId] } }),
        ),
        allowed(
          await api.POST('/public/v1/posts', {
            body: { type: 'schedule', date: LATER, content: 'Mine', channelIds: [channelId] },
          }),
        ),
        allowed(await api.POST('/public/v1/posts/{id}/schedule', { ...unknown, body: { scheduledAt: LATER } })),
        allowed(await api.POST('/public/v1/posts/{id}/approve', { ...unknown, body: {} })),
        allowed(await api.POST('/public/v1/posts/{id}/reject', { ...unknown, body: { comment: 'Not yet' } })),
        allowed(await api.DELETE('/public/v1/media/{id}', { params: { path: { id: 'med_unknown' } } })),
        allowed(await api.DELETE('/public/v1/channels/{id}', { params: { path: { id: 'ch_unknown' } } })),
      ];
    }
    // Columns: create a draft, create a scheduled post (a contributor's waits for approval), schedule a post
    // (likewise), approve a post, reject a post, delete media, remove a channel.
    expect(table).toEqual({
      owner: [true, true, true, true, true, true, true],
      admin: [true, true, true, true, true, true, true],
      editor: [true, true, true, true, true, true, false],
      contributor: [true, true, true, false, false, true, false],
      viewer: [false, false, false, false, false, false, false],
    });
  });

  it('lets a contributor change and delete drafts, never a scheduled post', async () => {
    const api = publicApi(server, keys.contributor);
    const mine = await draft();
    const edited = await api.PATCH('/public/v1/posts/{id}', {
      params: { path: { id: mine } },
      body: { content: 'Better words' },
    });
    expect(dataOf(edited).content).toBe('Better words');
    // Asking to schedule it asks for approval: it waits, and only an editor or above may approve it.
    const submitted = dataOf(
      await api.POST('/public/v1/posts/{id}/schedule', {
        params: { path: { id: mine } },
        body: { scheduledAt: LATER },
      }),
    );
    expect(submitted).toMatchObject({ status: 'pending_approval', scheduledAt: LATER });
    const refusal = refusalOf(
      await api.POST('/public/v1/posts/{id}/approve', { params: { path: { id: mine } }, body: {} }),
      403,
      'forbidden',
    );
    expect(refusal.message).toMatch(/contributor role may not call approvePost/);

    const planned = await scheduled();
    refusalOf(
      await api.PATCH('/public/v1/posts/{id}', { params: { path: { id: planned } }, body: { content: 'Sneaky' } }),
      403,
      'forbidden',
    );
    refusalOf(await api.DELETE('/public/v1/posts/{id}', { params: { path: { id: planned } } }), 403, 'forbidden');
    const still = dataOf(
      await publicApi(server, org.auth).GET('/public/v1/posts/{id}', { params: { path: { id: planned } } }),
    );
    expect(still).toMatchObject({ status: 'scheduled', content: 'Planned' });

    expect((await api.DELETE('/public/v1/posts/{id}', { params: { path: { id: mine } } })).response.status).toBe(204);
  });
});

const EVERYONE: readonly Role[] = ROLES;
const WRITERS: readonly Role[] = ['owner', 'admin', 'editor', 'contributor'];
const EDITORS: readonly Role[] = ['owner', 'admin', 'editor'];
const ADMINS: readonly Role[] = ['owner', 'admin'];
const OWNERS: readonly Role[] = ['owner'];

/**
 * Every operation of the Public API: a request the contract accepts (ids of nothing, so that a role
 * that may gets past the permission check to a 404 or a refusal of its own, and changes little) and
 * the roles that may call it. An operation added to the contract without a row here fails the test.
 */
const OPERATIONS: Record<string, { path?: Record<string, string>; body?: unknown; roles: readonly Role[] }> = {
  isConnected: { roles: EVERYONE },
  listChannels: { roles: EVERYONE },
  getQuota: { roles: EVERYONE },
  tiktokCreatorInfo: { path: { id: 'ch_unknown' }, roles: EVERYONE },
  tiktokAnalytics: { path: { id: 'ch_unknown' }, roles: EVERYONE },
  pinterestBoards: { path: { id: 'ch_unknown' }, roles: EVERYONE },
  deleteChannel: { path: { id: 'ch_unknown' }, roles: ADMINS },
  connectChannel: { body: { provider: 'mastodon', returnUrl: 'https://nowhere.example/back' }, roles: ADMINS },
  listPosts: { roles: EVERYONE },
  getPost: { path: { id: 'post_unknown' }, roles: EVERYONE },
  getPostHistory: { path: { id: 'post_unknown' }, roles: EVERYONE },
  createPost: { body: { type: 'draft', content: 'A row of the table', channelIds: ['ch_unknown'] }, roles: WRITERS },
  updatePost: { path: { id: 'post_unknown' }, body: { content: 'Changed' }, roles: WRITERS },
  deletePost: { path: { id: 'post_unknown' }, roles: WRITERS },
  // A contributor's scheduling waits for approval: they may ask, an editor decides.
  schedulePost: { path: { id: 'post_unknown' }, body: { scheduledAt: LATER }, roles: WRITERS },
  changePostStatus: { path: { id: 'post_unknown' }, body: { status: 'draft' }, roles: WRITERS },
  approvePost: { path: { id: 'post_unknown' }, body: {}, roles: EDITORS },
  rejectPost: { path: { id: 'post_unknown' }, body: { comment: 'Not like this' }, roles: EDITORS },
  duplicatePost: { path: { id: 'post_unknown' }, roles: WRITERS },
  importPosts: { body: { rows: [{ channels: ['ch_unknown'], text: 'A row of the table' }] }, roles: WRITERS },
  exportPosts: { roles: EVERYONE },
  queuePost: { path: { id: 'post_unknown' }, body: {}, roles: EDITORS },
  getChannelSchedule: { path: { id: 'ch_unknown' }, roles: EVERYONE },
  replaceChannelSchedule: { path: { id: 'ch_unknown' }, body: { slots: [] }, roles: ADMINS },
  getChannelQueue: { path: { id: 'ch_unknown' }, roles: EVERYONE },
  skipPost: { path: { id: 'post_unknown' }, roles: EDITORS },
  createSeries: {
    body: {
      rule: 'FREQ=WEEKLY',
      timeZone: 'UTC',
      startsAt: LATER,
      posts: [{ channelId: 'ch_unknown', content: 'A row of the table' }],
    },
    roles: EDITORS,
  },
  getSeries: { path: { id: 'ser_unknown' }, roles: EVERYONE },
  splitSeries: { path: { id: 'ser_unknown' }, body: { from: LATER }, roles: EDITORS },
  endSeries: { path: { id: 'ser_unknown' }, roles: EDITORS },
  listMedia: { roles: EVERYONE },
  uploadFromUrl: { body: { url: 'http://127.0.0.1:9/photo.png' }, roles: WRITERS },
  createUpload: { body: { fileName: 'photo.png', contentType: 'image/png', size: 100 }, roles: WRITERS },
  completeUpload: { path: { uploadId: 'upl_unknown' }, roles: WRITERS },
  deleteMedia: { path: { id: 'med_unknown' }, roles: WRITERS },
  listWebhooks: { roles: ADMINS },
  getWebhook: { path: { id: 'wh_unknown' }, roles: ADMINS },
  listWebhookDeliveries: { path: { id: 'wh_unknown' }, roles: ADMINS },
  createWebhook: { body: { url: 'http://127.0.0.1:9/hook', eventTypes: ['post.published'] }, roles: ADMINS },
  updateWebhook: { path: { id: 'wh_unknown' }, body: { enabled: false }, roles: ADMINS },
  deleteWebhook: { path: { id: 'wh_unknown' }, roles: ADMINS },
  testWebhook: { path: { id: 'wh_unknown' }, roles: ADMINS },
  rotateWebhookSecret: { path: { id: 'wh_unknown' }, roles: ADMINS },
  retryWebhookDelivery: { path: { id: 'wh_unknown', deliveryId: 'dlv_unknown' }, roles: ADMINS },
};

describe('every Public API operation, for every role', () => {
  it('has a row for each operation of the contract', () => {
    expect(Object.keys(OPERATIONS).sort()).toEqual([...readOperationRoutes(SPEC_FILES.publicV1).keys()].sort());
  });

  it('lets exactly the roles of its row call each operation, and refuses the others with 403 forbidden', async () => {
    const actual: Record<string, Role[]> = {};
    const expected: Record<string, Role[]> = {};
    for (const operation of readOperationRoutes(SPEC_FILES.publicV1).values()) {
      const row = OPERATIONS[operation.operationId]!;
      const url = operation.path.replace(/\{(\w+)\}/g, (_, name: string) => row.path?.[name] ?? `missing-${name}`);
      expected[operation.operationId] = [...row.roles];
      actual[operation.operationId] = [];
      for (const role of ROLES) {
        const response = await server.fetch(url, {
          method: operation.method.toUpperCase(),
          headers: { ...keys[role], ...(row.body === undefined ? {} : { 'Content-Type': 'application/json' }) },
          ...(row.body === undefined ? {} : { body: JSON.stringify(row.body) }),
        });
        const answer = (await response.json().catch(() => undefined)) as { error?: { code: string } } | undefined;
        // A request the contract refuses would say nothing of the role: each row's request is valid.
        expect([operation.operationId, role, response.status]).not.toEqual([operation.operationId, role, 400]);
        if (response.status === 403)
          expect([operation.operationId, answer?.error?.code]).toEqual([operation.operationId, 'forbidden']);
        else actual[operation.operationId]!.push(role);
      }
    }
    expect(actual).toEqual(expected);
  });
});

interface TestMember {
  userId: string;
  email: string;
  browser: BrowserSession;
}

let members = 0;

/**
 * A user of their own organization who joins `organizationId` with `role`, signed in and switched to it
 * with the organization switcher, as a person belonging to two organizations would.
 */
async function join(organizationId: string, role: Role): Promise<TestMember> {
  const email = `${role}-${++members}@example.com`;
  const password = 'correct horse battery staple';
  const { user } = await createOrganizationWithOwner(server.ctx.db, {
    organizationName: `${role}'s own`,
    email,
    password,
  });
  await addMember(server.ctx.db, organizationId, user.id, role);
  const browser = new BrowserSession(server);
  await browser.logIn(email, password);
  const switched = await browser.submit('/calendar', '/session/organization', {
    organization_id: organizationId,
    next: '/settings/members',
  });
  expect(switched.headers.get('location')).toBe('/settings/members');
  return { userId: user.id, email, browser };
}

const page = async (browser: BrowserSession, path: string) => {
  const response = await browser.get(path);
  return { status: response.status, html: await response.text() };
};

describe('the permission table through the pages', () => {
  it('shows a viewer what they may see, hides the rest, and refuses it with a page that says why', async () => {
    const viewer = await join(org.id, 'viewer');
    const calendar = await page(viewer.browser, '/calendar');
    expect(calendar.status).toBe(200);
    expect(calendar.html).toContain('Roles Studio');
    expect(calendar.html).not.toContain('<a class="button" href="/compose">New post</a>');

    const compose = await page(viewer.browser, '/compose');
    expect(compose.status).toBe(403);
    expect(compose.html).toContain('Not allowed for your role');
    expect(compose.html).toContain('Your role in Roles Studio is viewer, which does not let you write posts.');

    const channels = await page(viewer.browser, '/settings/channels');
    expect(channels.status).toBe(200);
    expect(channels.html).not.toContain('Add sandbox channel');
    expect(channels.html).toContain('does not let you connect or remove channels');
    expect(channels.html).not.toContain('href="/settings/webhooks"');
    expect((await page(viewer.browser, '/media')).html).not.toContain('data-upload="library"');
    const post = await page(viewer.browser, `/posts/${await draft()}`);
    expect(post.status).toBe(200);
    expect(post.html).not.toContain('Edit the post');
    expect(channels.html).not.toContain('href="/settings/developers/access"');
    expect((await page(viewer.browser, '/settings/webhooks')).status).toBe(403);
    expect((await page(viewer.browser, '/settings/developers/access')).status).toBe(403);
    const connect = await viewer.browser.submit('/settings/channels', '/settings/channels/sandbox', {});
    expect(connect.status).toBe(403);
    expect(await connect.text()).toContain('does not let you connect or remove channels');
  });

  it('lets a contributor write but not schedule: moving a draft on the calendar submits it for approval', async () => {
    const contributor = await join(org.id, 'contributor');
    const compose = await page(contributor.browser, '/compose');
    expect(compose.status).toBe(200);
    expect(compose.html).toContain('Submit for approval');
    expect(compose.html).not.toContain('Publish now</button>');
    const id = await draft();
    const moved = await contributor.browser.submit('/calendar', `/posts/${id}/move`, {
      date: '2031-01-06',
      time: '09:00',
      return: '/calendar',
    });
    expect(moved.status).toBe(303);
    const post = dataOf(await publicApi(server, org.auth).GET('/public/v1/posts/{id}', { params: { path: { id } } }));
    expect(post.status).toBe('pending_approval');
    // Their page offers no approval, which the server refuses them anyway.
    const shown = await page(contributor.browser, `/posts/${id}`);
    expect(shown.html).toContain('Take back to drafts');
    expect(shown.html).not.toContain('Approve and publish now');
    const approval = await contributor.browser.submit(`/posts/${id}`, `/posts/${id}/approve`, { when: 'now' });
    expect(approval.status).toBe(403);
    expect(await approval.text()).toContain('which does not let you approve or reject posts');
  });

  it('lets an admin make API keys with a role up to their own, and records who made them', async () => {
    const admin = await join(org.id, 'admin');
    const refused = await admin.browser.submit('/settings/developers/access', '/settings/developers/access', {
      name: 'Too strong',
      role: 'owner',
    });
    expect(refused.status).toBe(403);
    const created = await admin.browser.submit('/settings/developers/access', '/settings/developers/access', {
      name: 'Editor robot',
      role: 'editor',
    });
    expect(created.status).toBe(201);
    const secret = /id="new-secret"[^>]*value="([^"]+)"/.exec(await created.text())![1]!;
    const connected = dataOf(
      await publicApi(server, { Authorization: `Bearer ${secret}` }).GET('/public/v1/is-connected'),
    );
    expect(connected.credential.role).toBe('editor');
    const list = await page(admin.browser, '/settings/developers/access');
    expect(list.html).toMatch(new RegExp(`Editor robot[\\s\\S]*editor[\\s\\S]*by ${admin.email}`));
  });
});

/** A new organization, its owner signed in. */
async function team(name: string) {
  const owner = await createOrganization(server.ctx.db, name);
  const browser = new BrowserSession(server);
  await browser.logIn(owner.email, owner.password);
  return { owner, browser };
}

const roleOf = async (organizationId: string, userId: string) =>
  (
    await server.ctx.db
      .selectFrom('memberships')
      .select('role')
      .where('organization_id', '=', organizationId)
      .where('user_id', '=', userId)
      .executeTakeFirst()
  )?.role;

const connectedRole = async (credential: string) =>
  dataOf(await publicApi(server, { Authorization: `Bearer ${credential}` }).GET('/public/v1/is-connected')).credential
    .role;

describe('an app approved by two members of one organization', () => {
  it('acts for the last approver only: the tokens the other approved end, and are never raised to their role', async () => {
    const { owner } = await team('Shared Agent Studio');
    const contributor = await join(owner.id, 'contributor');
    const app = await createOAuthApp(server.ctx.db, owner.id);
    const byContributor = { ...owner, userId: contributor.userId };
    const contributorToken = await exchange(server, app, await approve(server.ctx.db, app, byContributor));
    expect(await connectedRole(contributorToken)).toBe('contributor');

    const ownerToken = await exchange(server, app, await approve(server.ctx.db, app, owner));
    expect(await connectedRole(ownerToken)).toBe('owner');
    const ended = await publicApi(server, { Authorization: `Bearer ${contributorToken}` }).GET(
      '/public/v1/is-connected',
    );
    expect(ended.response.status).toBe(401);

    // Someone who is no longer a member approves nothing (removed while the consent page was open).
    await server.ctx.db
      .deleteFrom('memberships')
      .where('organization_id', '=', owner.id)
      .where('user_id', '=', contributor.userId)
      .execute();
    await expect(approve(server.ctx.db, app, byContributor)).rejects.toThrow(/no longer a member/);
    expect(await connectedRole(ownerToken)).toBe('owner');
  });
});

describe('Settings → Members', () => {
  it('lets an admin change roles, and a lowered member’s keys and apps go down with them', async () => {
    const { owner } = await team('Members Studio');
    const admin = await join(owner.id, 'admin');
    // Another admin, who makes an editor's key and approves an app (which acts with their role).
    const editor = await join(owner.id, 'admin');
    const { secret } = await createApiKey(server.ctx.db, owner.id, 'Editor key', {
      maker: { organizationId: owner.id, role: 'admin', userId: editor.userId },
      role: 'editor',
    });
    const app = await createOAuthApp(server.ctx.db, owner.id);
    const token = await exchange(server, app, await approve(server.ctx.db, app, { ...owner, userId: editor.userId }));
    expect([await connectedRole(secret), await connectedRole(token)]).toEqual(['editor', 'admin']);

    const list = await page(admin.browser, '/settings/members');
    expect(list.html).toContain(editor.email);
    expect(list.html).toContain(`aria-label="Remove ${editor.email}"`);
    // An admin hands out no ownership and cannot touch an owner.
    expect(list.html).not.toContain(`aria-label="Change the role of ${owner.email}"`);
    expect(list.html).not.toContain('<option value="owner"');

    const changed = await admin.browser.submit('/settings/members', `/settings/members/${editor.userId}/role`, {
      role: 'viewer',
    });
    expect(changed.status).toBe(303);
    expect(await roleOf(owner.id, editor.userId)).toBe('viewer');
    expect([await connectedRole(secret), await connectedRole(token)]).toEqual(['viewer', 'viewer']);

    for (const [target, role] of [
      [owner.userId, 'admin'],
      [editor.userId, 'owner'],
    ] as const) {
      const refused = await admin.browser.submit('/settings/members', `/settings/members/${target}/role`, { role });
      expect(refused.status).toBe(403);
    }
    expect(await roleOf(owner.id, owner.userId)).toBe('owner');

    const byEditor = await editor.browser.submit('/settings/members', `/settings/members/${admin.userId}/role`, {
      role: 'viewer',
    });
    expect(byEditor.status).toBe(403);
    expect(await roleOf(owner.id, admin.userId)).toBe('admin');
  });

  it('removes a member, revoking or keeping what they made, and lets a member leave', async () => {
    const { owner, browser } = await team('Parting Studio');
    const keeper = await join(owner.id, 'admin');
    const revoked = await join(owner.id, 'admin');
    const keys = new Map<string, string>();
    for (const member of [keeper, revoked]) {
      const made = await createApiKey(server.ctx.db, owner.id, `Key of ${member.email}`, {
        maker: { organizationId: owner.id, role: 'admin', userId: member.userId },
        role: 'editor',
      });
      keys.set(member.userId, made.secret);
    }

    const confirm = await page(browser, `/settings/members/${keeper.userId}/remove`);
    expect(confirm.html).toContain(`Key of ${keeper.email}`);
    const kept = await browser.submit(
      `/settings/members/${keeper.userId}/remove`,
      `/settings/members/${keeper.userId}/remove`,
      {
        credentials: 'keep',
      },
    );
    expect(kept.status).toBe(303);
    expect(await roleOf(owner.id, keeper.userId)).toBeUndefined();
    expect(await connectedRole(keys.get(keeper.userId)!)).toBe('editor');

    await browser.submit(`/settings/members/${revoked.userId}/remove`, `/settings/members/${revoked.userId}/remove`, {
      credentials: 'revoke',
    });
    const refused = await server.fetch('/public/v1/is-connected', {
      headers: { Authorization: `Bearer ${keys.get(revoked.userId)!}` },
    });
    expect(refused.status).toBe(401);
    // The removed member's browser goes on in their own organization.
    const after = await page(revoked.browser, '/calendar');
    expect(after.html).toContain('admin&#39;s own');

    const viewer = await join(owner.id, 'viewer');
    const left = await viewer.browser.submit('/settings/members', `/settings/members/${viewer.userId}/remove`, {});
    expect(left.status).toBe(303);
    expect(await roleOf(owner.id, viewer.userId)).toBeUndefined();

    // A member who leaves keeps nothing acting for the organization, even asking to: they hold its secrets.
    const leaver = await join(owner.id, 'admin');
    const { secret } = await createApiKey(server.ctx.db, owner.id, 'Leaver key', {
      maker: { organizationId: owner.id, role: 'admin', userId: leaver.userId },
      role: 'editor',
    });
    const leavePage = await page(leaver.browser, `/settings/members/${leaver.userId}/remove`);
    expect(leavePage.html).toContain('They are revoked when you leave');
    expect(leavePage.html).not.toContain('value="keep"');
    const gone = await leaver.browser.submit(
      `/settings/members/${leaver.userId}/remove`,
      `/settings/members/${leaver.userId}/remove`,
      { credentials: 'keep' },
    );
    expect(gone.status).toBe(303);
    const afterLeaving = await server.fetch('/public/v1/is-connected', {
      headers: { Authorization: `Bearer ${secret}` },
    });
    expect(afterLeaving.status).toBe(401);
  });

  it('always keeps an owner: the last one can neither leave nor step down, and hands the organization over', async () => {
    const { owner, browser } = await team('Owned Studio');
    const leave = await browser.submit('/settings/members', `/settings/members/${owner.userId}/remove`, {});
    expect(leave.status).toBe(422);
    expect(await leave.text()).toContain('The organization needs an owner');
    const stepDown = await browser.submit('/settings/members', `/settings/members/${owner.userId}/role`, {
      role: 'admin',
    });
    expect(stepDown.status).toBe(422);
    expect(await roleOf(owner.id, owner.userId)).toBe('owner');

    const admin = await join(owner.id, 'admin');
    const refused = await admin.browser.submit('/settings/members', '/settings/members/transfer', {
      user_id: admin.userId,
    });
    expect(refused.status).toBe(403);
    const handed = await browser.submit('/settings/members', '/settings/members/transfer', { user_id: admin.userId });
    expect(handed.status).toBe(303);
    expect([await roleOf(owner.id, admin.userId), await roleOf(owner.id, owner.userId)]).toEqual(['owner', 'admin']);
    // Now the former owner may leave: another owner remains.
    expect((await browser.submit('/settings/members', `/settings/members/${owner.userId}/remove`, {})).status).toBe(
      303,
    );
  });
});

describe('invitations', () => {
  /** An invitation made on the members page: the link shown once, as a path of this server. */
  async function invite(browser: BrowserSession, email: string, role: Role) {
    const answer = await browser.submit('/settings/members', '/settings/members/invitations', { email, role });
    expect(answer.status).toBe(201);
    const link = /id="new-secret"[^>]*value="([^"]+)"/.exec(await answer.text())![1]!;
    expect(link).toMatch(/\/invitations\/accept\?token=inv_/);
    return new URL(link.replace(/&amp;/g, '&')).pathname + new URL(link).search;
  }

  it('invites an email with a role; the invitee signs up through the link and joins, once', async () => {
    const { owner, browser } = await team('Inviting Studio');
    const link = await invite(browser, 'Newcomer@Example.com', 'contributor');
    const members = await page(browser, '/settings/members');
    expect(members.html).toContain('newcomer@example.com as contributor');
    expect(members.html).not.toContain(link.split('token=')[1]!);

    const invitee = new BrowserSession(server);
    const landing = await page(invitee, link);
    expect(landing.html).toContain('invited to <strong>Inviting Studio</strong> as <strong>contributor</strong>');
    const signUp = /href="(\/signup\?next=[^"]+)"/.exec(landing.html)![1]!.replace(/&amp;/g, '&');
    const next = new URL(signUp, server.baseUrl).searchParams.get('next')!;
    const signedUp = await invitee.submit(signUp, '/signup', {
      name: 'Newcomer',
      email: 'newcomer@example.com',
      password: 'a long enough password',
      organizationName: 'Newcomer’s own',
      next,
    });
    expect(signedUp.headers.get('location')).toBe(next);
    const joined = await invitee.submit(next, '/invitations/accept', { token: next.split('token=')[1]! });
    expect(joined.status).toBe(303);
    const calendar = await page(invitee, '/calendar');
    expect(calendar.html).toContain('Inviting Studio');
    expect((await page(invitee, '/compose')).status).toBe(200);
    expect((await page(invitee, '/settings/webhooks')).status).toBe(403);

    const user = await server.ctx.db
      .selectFrom('users')
      .select('id')
      .where('email', '=', 'newcomer@example.com')
      .executeTakeFirstOrThrow();
    expect(await roleOf(owner.id, user.id)).toBe('contributor');
    // Single use: the link is spent.
    expect((await page(new BrowserSession(server), link)).status).toBe(404);
  });

  it('lets an existing user accept by logging in; refuses expired and revoked links and invites above the inviter', async () => {
    const { owner, browser } = await team('Second Studio');
    const other = await createOrganization(server.ctx.db, 'Elsewhere');
    const link = await invite(browser, other.email, 'viewer');
    const invitee = new BrowserSession(server);
    await invitee.logIn(other.email, other.password, link);
    const token = new URL(link, server.baseUrl).searchParams.get('token')!;
    expect((await invitee.submit(link, '/invitations/accept', { token })).status).toBe(303);
    expect(await roleOf(owner.id, other.userId)).toBe('viewer');

    const revokedLink = await invite(browser, 'revoked@example.com', 'editor');
    const pending = await server.ctx.db
      .selectFrom('invitations')
      .select('id')
      .where('email', '=', 'revoked@example.com')
      .executeTakeFirstOrThrow();
    await browser.submit('/settings/members', `/settings/members/invitations/${pending.id}/revoke`, {});
    expect((await page(new BrowserSession(server), revokedLink)).status).toBe(404);

    const expiring = await invite(browser, 'late@example.com', 'editor');
    server.setNow(new Date(Date.now() + 8 * 24 * 60 * 60_000));
    try {
      const late = await page(new BrowserSession(server), expiring);
      expect(late.status).toBe(404);
      expect(late.html).toContain('has been used, revoked or has expired');
    } finally {
      server.setNow(undefined);
    }

    // Housekeeping forgets spent invitations a week after they were spent, not before.
    const invitationsOf = async () =>
      (await server.ctx.db.selectFrom('invitations').select('email').where('organization_id', '=', owner.id).execute())
        .map((row) => row.email)
        .sort();
    await forgetSpentInvitations(server.ctx.db, new Date(Date.now() + 24 * 60 * 60_000));
    expect(await invitationsOf()).toEqual(['late@example.com', other.email, 'revoked@example.com'].sort());
    await forgetSpentInvitations(server.ctx.db, new Date(Date.now() + 15 * 24 * 60 * 60_000));
    expect(await invitationsOf()).toEqual([]);

    const admin = await join(owner.id, 'admin');
    const tooHigh = await admin.browser.submit('/settings/members', '/settings/members/invitations', {
      email: 'boss@example.com',
      role: 'owner',
    });
    expect(tooHigh.status).toBe(400);
    const editor = await join(owner.id, 'editor');
    const byEditor = await editor.browser.submit('/settings/members', '/settings/members/invitations', {
      email: 'friend@example.com',
      role: 'viewer',
    });
    expect(byEditor.status).toBe(403);
  });
});

/** Every path a page's form is posted to, as the routers of src/web and src/oauth declare them. */
function pageFormRoutes(): string[] {
  const routes = new Set<string>();
  for (const folder of ['src/web', 'src/oauth']) {
    for (const file of fs.readdirSync(folder).filter((name) => name.endsWith('.ts'))) {
      const source = fs.readFileSync(path.join(folder, file), 'utf8');
      for (const match of source.matchAll(/router\.(?:post|put|patch|delete)\(\s*(?:'([^']+)'|([A-Z_]+))/g))
        routes.add(match[1] ?? match[2]!);
    }
  }
  return [...routes].sort();
}

/**
 * The forms of the pages that are no action in an organization, so no role decides them: the
 * anonymous ones (signing up and in, password resets, unsubscribing, accepting an invitation, the
 * network sign-in and site forms of a connection started by someone who may, the OAuth consent,
 * checked by its own test) and logging out.
 */
const NOT_BY_ROLE = [
  '/login',
  '/signup',
  '/logout',
  '/password/forgot',
  '/password/reset/:token',
  '/mail/unsubscribe/:token',
  '/invitations/accept',
  '/channels/choose/:provider',
  '/channels/sign-in/:provider',
  '/channels/site/:provider',
  'CONSENT_PATH',
];

interface FormRow {
  roles: readonly Role[];
  fields?: Record<string, string>;
  /** The path's ids: of nothing by default, so that a role that may gets a 404 or a refusal of the form. */
  params?: () => Promise<Record<string, string>>;
}

/**
 * Every form of the pages acting in an organization, and the roles that may send it. A form that acts
 * on somebody gets a member made for it each time (`params`), so that a role that may does it to them.
 */
function formTable(organizationId: string): Record<string, FormRow> {
  // A member nobody signs in as: a user row (its password hash copied, none is computed) and a membership.
  const victim = async () => {
    const hash = await server.ctx.db.selectFrom('users').select('password_hash').executeTakeFirstOrThrow();
    const userId = newId('usr');
    await server.ctx.db
      .insertInto('users')
      .values({ id: userId, email: `${userId}@example.com`, name: 'Victim', password_hash: hash.password_hash })
      .execute();
    await addMember(server.ctx.db, organizationId, userId, 'viewer');
    return { userId };
  };
  // A draft of its own for each attempt: the role decides before the post's state does.
  let channel: Promise<{ id: string }> | undefined;
  const post = async () => {
    channel ??= createChannel(server.ctx.db, organizationId, 'sandbox');
    const channelId = (await channel).id;
    return { id: await insertPost(server.ctx.db, { organizationId, channelId, status: 'failed', scheduledAt: LATER }) };
  };
  return {
    // The visitor's own account and session: every member.
    '/account/delete': { roles: EVERYONE, fields: { password: 'not the password' } },
    '/account/email': { roles: EVERYONE, fields: { email: 'other@example.com', password: 'not the password' } },
    '/account/notifications': { roles: EVERYONE },
    '/account/pending-email/cancel': { roles: EVERYONE },
    '/account/verification': { roles: EVERYONE },
    '/session/organization': { roles: EVERYONE, fields: { organization_id: organizationId, next: '/calendar' } },
    // Posts.
    '/compose': { roles: WRITERS },
    '/compose/counts': { roles: WRITERS },
    '/posts/:id/edit': { roles: WRITERS },
    // A contributor's move asks for approval at the new time.
    '/posts/:id/move': { roles: WRITERS, fields: { date: '2031-01-06', time: '09:00', return: '/calendar' } },
    '/posts/:id/schedule-again': { roles: EDITORS, params: post },
    '/posts/:id/approve': { roles: EDITORS },
    '/posts/:id/reject': { roles: EDITORS, fields: { comment: 'Not like this' } },
    '/posts/:id/withdraw': { roles: WRITERS },
    '/posts/:id/skip': { roles: EDITORS },
    '/series/:id/split': { roles: EDITORS },
    '/series/:id/end': { roles: EDITORS },
    '/posts/:id/duplicate': { roles: WRITERS },
    '/posts/:id/delete': { roles: WRITERS },
    '/posts/bulk': { roles: WRITERS },
    '/posts/import': { roles: WRITERS },
    // Media.
    '/media/uploads': { roles: WRITERS },
    '/media/uploads/:uploadId/complete': { roles: WRITERS },
    '/media/:id/delete': { roles: WRITERS },
    // Channels.
    '/settings/channels/sandbox': { roles: ADMINS },
    '/settings/channels/connect/:provider': { roles: ADMINS },
    '/settings/channels/:id/:action': { roles: ADMINS },
    '/settings/channels/return-origins': { roles: ADMINS },
    '/settings/channels/return-origins/remove': { roles: ADMINS },
    '/settings/channels/:id/schedule': { roles: ADMINS },
    // Members.
    '/settings/members/invitations': { roles: ADMINS, fields: { email: 'invitee@example.com', role: 'viewer' } },
    '/settings/members/invitations/:id/revoke': { roles: ADMINS },
    '/settings/members/:userId/role': { roles: ADMINS, fields: { role: 'contributor' }, params: victim },
    '/settings/members/:userId/remove': { roles: ADMINS, fields: { credentials: 'keep' }, params: victim },
    '/settings/members/transfer': { roles: OWNERS },
    // The organization.
    '/settings/organization': { roles: ADMINS, fields: { timeZone: 'Europe/Berlin' } },
    '/settings/organization/delete': { roles: OWNERS, fields: { name: 'Not its name' } },
    // Webhooks, API keys, apps.
    '/settings/webhooks': { roles: ADMINS },
    '/settings/webhooks/:id': { roles: ADMINS },
    '/settings/webhooks/:id/:action': { roles: ADMINS },
    '/settings/webhooks/:id/deliveries/:deliveryId/retry': { roles: ADMINS },
    '/settings/developers/access': { roles: ADMINS },
    '/settings/developers/access/:keyId/revoke': { roles: ADMINS },
    '/settings/developers/apps': { roles: ADMINS },
    '/settings/developers/apps/:appId': { roles: ADMINS },
    '/settings/developers/apps/:appId/delete': { roles: ADMINS },
    '/settings/developers/apps/:appId/rotate-secret': { roles: ADMINS },
    '/settings/approved-apps/:grantId/revoke': { roles: ADMINS },
  };
}

const UNKNOWN: Record<string, string> = { provider: 'sandbox', action: 'remove' };

describe('every form of the pages, for every role', { timeout: 3 * TIMEOUTS.test }, () => {
  it('names each form a router declares, as decided by a role or as none of a role', () => {
    const { id } = org;
    expect([...Object.keys(formTable(id)), ...NOT_BY_ROLE].sort()).toEqual(pageFormRoutes());
  });

  it('lets exactly the roles of its row send each form, and refuses the others with a page that says why', async () => {
    const { owner } = await team('Every Form Studio');
    const browsers = { owner: new BrowserSession(server) } as Record<Role, BrowserSession>;
    await browsers.owner.logIn(owner.email, owner.password);
    for (const role of ROLES.filter((role) => role !== 'owner')) browsers[role] = (await join(owner.id, role)).browser;
    const tokens = {} as Record<Role, string>;
    for (const role of ROLES)
      tokens[role] = inputValue(await (await browsers[role].get('/calendar')).text(), 'csrf_token')!;

    const table = formTable(owner.id);
    const actual: Record<string, Role[]> = {};
    const expected: Record<string, Role[]> = {};
    for (const [route, row] of Object.entries(table)) {
      expected[route] = [...row.roles];
      actual[route] = [];
      for (const role of ROLES) {
        const params = { ...UNKNOWN, ...(await row.params?.()) };
        const url = route.replace(/:(\w+)/g, (_, name: string) => params[name] ?? `unknown_${name}`);
        const response = await browsers[role].postForm(url, { csrf_token: tokens[role], ...row.fields });
        const html = await response.text();
        expect([route, role, html]).not.toEqual([route, role, expect.stringContaining('This form has expired')]);
        if (response.status === 403) {
          expect([route, role, html]).toEqual([route, role, expect.stringMatching(/role/)]);
        } else actual[route].push(role);
      }
    }
    expect(actual).toEqual(expected);
  });
});
