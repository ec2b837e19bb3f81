import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../src/accounts/api-keys.js';
import { addMember } from '../src/accounts/members.js';
import { createOrganizationWithOwner } from '../src/accounts/organizations.js';
import { recordAudit } from '../src/audit/log.js';
import { keepHouse } from '../src/housekeeping.js';
import type { Role } from '../src/core/roles.js';
import { publicApi } from './support/api.js';
import { BrowserSession, decodeEntities } from './support/browser-session.js';
import { createChannel } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';
import { TIMEOUTS } from './support/timeouts.js';
import { dataOf } from './support/typed-answers.js';

// The audit log: every change to members, keys, apps, webhooks and channels, and every post deleted, is
// recorded with who made it (a member, or the API key it came through), shown to admins and owners in
// Settings → Audit log a page at a time, exported whole as CSV and JSON, and forgotten after its retention.
let server: TestServer;
let organizationId: string;
let owner: BrowserSession;
const PASSWORD = 'correct horse battery staple';

beforeAll(async () => {
  server = await startTestServer({ env: { WEBHOOK_ALLOW_RANGES: '127.0.0.1/32', AUDIT_LOG_RETENTION_DAYS: '30' } });
  const { organization } = await createOrganizationWithOwner(server.ctx.db, {
    organizationName: 'Audited Studio',
    email: 'owner@example.com',
    password: PASSWORD,
  });
  organizationId = organization.id;
  owner = new BrowserSession(server);
  await owner.logIn('owner@example.com', PASSWORD);
});
afterAll(() => server?.close());

async function member(role: Role, email: string): Promise<{ userId: string; browser: BrowserSession }> {
  const { user } = await createOrganizationWithOwner(server.ctx.db, {
    organizationName: `${email}'s own`,
    email,
    password: PASSWORD,
  });
  await addMember(server.ctx.db, organizationId, user.id, role);
  const browser = new BrowserSession(server);
  await browser.logIn(email, PASSWORD);
  await browser.submit('/calendar', '/session/organization', { organization_id: organizationId, next: '/calendar' });
  return { userId: user.id, browser };
}

/** The rows of the log's page as its reader sees them: who, what, on what, details. */
async function rows(browser: BrowserSession, path = '/settings/audit-log'): Promise<string[][]> {
  const response = await browser.get(path);
  expect(response.status).toBe(200);
  const html = await response.text();
  return [...html.matchAll(/<tr class="audit-entry"[^>]*>([\s\S]*?)<\/tr>/g)].map((row) =>
    [...row[1]!.matchAll(/<td data-label="(?:Who|What|On|Details)">([\s\S]*?)<\/td>/g)].map((cell) =>
      decodeEntities(cell[1]!.trim()),
    ),
  );
}

// Members sign up and log in (scrypt) and click through several pages: on a busy machine that takes a while.
describe('the audit log', { timeout: 2 * TIMEOUTS.test }, () => {
  it('records who did what, in the same transaction as the change, and shows it newest first', async () => {
    // An invitation, accepted from its link by a new user.
    const invited = await owner.submit('/settings/members', '/settings/members/invitations', {
      email: 'new@example.com',
      role: 'editor',
    });
    expect(invited.status).toBe(201);
    const link = /\/invitations\/accept\?token=([^"&<\s]+)/.exec(decodeEntities(await invited.text()));
    const { user: newcomer } = await createOrganizationWithOwner(server.ctx.db, {
      organizationName: 'Newcomer',
      email: 'new@example.com',
      password: PASSWORD,
    });
    const guest = new BrowserSession(server);
    await guest.logIn('new@example.com', PASSWORD);
    const token = decodeURIComponent(link![1]!);
    const accepted = await guest.submit(`/invitations/accept?token=${link![1]}`, '/invitations/accept', { token });
    expect(accepted.status).toBe(303);

    // A role change, an API key made and revoked in the page, a sandbox channel added and removed.
    expect(
      (await owner.submit('/settings/members', `/settings/members/${newcomer.id}/role`, { role: 'admin' })).status,
    ).toBe(303);
    const made = await owner.submit('/settings/developers/access', '/settings/developers/access', {
      name: '=HYPERLINK("https://evil.example")',
      role: 'editor',
    });
    expect(made.status).toBe(201);
    const keyId = /\/settings\/developers\/access\/(key_[0-9A-Za-z]+)\/revoke/.exec(await made.text())![1]!;
    const revoked = await owner.submit('/settings/developers/access', `/settings/developers/access/${keyId}/revoke`, {
      confirm: 'yes',
    });
    expect(revoked.status).toBe(303);
    const channel = await createChannel(server.ctx.db, organizationId, 'sandbox', 'Studio sandbox');
    expect(
      (await owner.submit('/settings/channels', `/settings/channels/${channel.id}/remove`, { confirm: 'yes' })).status,
    ).toBe(303);

    // Through the Public API, with a key: the key is who did it.
    const { secret } = await createApiKey(server.ctx.db, organizationId, 'Integration');
    const api = publicApi(server, { Authorization: `Bearer ${secret}` });
    const other = await createChannel(server.ctx.db, organizationId, 'sandbox', 'Second sandbox');
    const webhook = dataOf(
      await api.POST('/public/v1/webhooks', {
        body: { url: 'http://127.0.0.1:9/hook', eventTypes: ['post.published'] },
      }),
      201,
    );
    dataOf(await api.DELETE('/public/v1/webhooks/{id}', { params: { path: { id: webhook.id } } }), 204);
    const post = dataOf(
      await api.POST('/public/v1/posts', {
        body: { type: 'draft', content: 'A draft to delete', channelIds: [other.id] },
      }),
      201,
    ).data[0]!;
    dataOf(await api.DELETE('/public/v1/posts/{id}', { params: { path: { id: post.id } } }), 204);

    const key = 'API key "Integration"';
    const seen = await rows(owner);
    expect(seen.map(([who, what, on]) => [who!.startsWith(key) ? key : who, what, on])).toEqual([
      [key, 'Deleted a post', 'A draft to delete'],
      [key, 'Deleted a webhook', 'http://127.0.0.1:9/hook'],
      [key, 'Created a webhook', 'http://127.0.0.1:9/hook'],
      // A key made on the command line is the operator's doing.
      ['Operator (admin command line)', 'Created an API key', 'Integration'],
      ['owner@example.com', 'Removed a channel', 'Studio sandbox (sandbox)'],
      ['owner@example.com', 'Revoked an API key', '=HYPERLINK("https://evil.example")'],
      ['owner@example.com', 'Created an API key', '=HYPERLINK("https://evil.example")'],
      ['owner@example.com', "Changed a member's role", 'new@example.com'],
      ['new@example.com', 'Joined', 'new@example.com'],
      ['owner@example.com', 'Invited a member', 'new@example.com'],
    ]);
    expect(seen.find((row) => row[1] === "Changed a member's role")![3]).toBe('editor → admin');

    // A filter by kind of change and by who did it.
    expect((await rows(owner, '/settings/audit-log?action=api_key.created')).map((row) => row[2])).toEqual([
      'Integration',
      '=HYPERLINK("https://evil.example")',
    ]);
    expect((await rows(owner, `/settings/audit-log?actor=${newcomer.id}`)).map((row) => row[1])).toEqual(['Joined']);
    expect((await owner.get('/settings/audit-log?action=everything')).status).toBe(400);
  });

  it('writes nothing when the change is refused', async () => {
    const before = (await rows(owner)).length;
    // The last owner cannot leave: no change, no entry.
    const me = await server.ctx.db
      .selectFrom('users')
      .select('id')
      .where('email', '=', 'owner@example.com')
      .executeTakeFirstOrThrow();
    const refused = await owner.submit('/settings/members', `/settings/members/${me.id}/remove`, {});
    expect(refused.status).toBe(422);
    expect((await rows(owner)).length).toBe(before);
  });

  it('is for admins and owners only', async () => {
    const editor = await member('editor', 'editor@example.com');
    expect((await editor.browser.get('/settings/audit-log')).status).toBe(403);
    expect((await editor.browser.get('/settings/audit-log/export?format=csv')).status).toBe(403);
    expect(await (await editor.browser.get('/settings/members')).text()).not.toContain('href="/settings/audit-log"');
    const admin = await member('admin', 'admin@example.com');
    expect((await admin.browser.get('/settings/audit-log')).status).toBe(200);
    expect(await (await admin.browser.get('/settings/members')).text()).toContain('href="/settings/audit-log"');
  });

  it('pages through every entry once, and exports them all as CSV and JSON', async () => {
    const start = Date.now() - 86_400_000;
    for (let i = 0; i < 120; i++) {
      await recordAudit(server.ctx.db, {
        organizationId,
        actor: 'operator',
        action: 'member.role_changed',
        subject: { type: 'member', id: null, label: `member ${i}` },
        details: { from: 'viewer', to: 'editor' },
        // Several entries in the same millisecond: the pages still neither skip nor repeat one.
        at: new Date(start + Math.floor(i / 3)),
      });
    }
    const total = await server.ctx.db
      .selectFrom('audit_log')
      .select((eb) => eb.fn.countAll<string>().as('count'))
      .where('organization_id', '=', organizationId)
      .executeTakeFirstOrThrow();
    const listed: string[] = [];
    let path: string | undefined = '/settings/audit-log';
    while (path) {
      const html: string = await (await owner.get(path)).text();
      listed.push(...[...html.matchAll(/<td data-label="On">([^<]*)<\/td>/g)].map((m) => decodeEntities(m[1]!)));
      const next: RegExpExecArray | null = /<a href="([^"]+)" rel="next">/.exec(html);
      path = next ? decodeEntities(next[1]!) : undefined;
    }
    expect(listed.length).toBe(Number(total.count));
    expect(listed.filter((label) => label.startsWith('member ')).length).toBe(120);
    expect(new Set(listed.filter((label) => label.startsWith('member '))).size).toBe(120);

    const csv = await owner.get('/settings/audit-log/export?format=csv');
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(csv.headers.get('content-disposition')).toMatch(/^attachment; filename="audit-log-\d{4}-\d\d-\d\d\.csv"$/);
    const lines = (await csv.text())
      .replace(/^\uFEFF/, '')
      .trimEnd()
      .split('\r\n');
    expect(lines[0]).toBe('time,action,description,actor_type,actor_id,actor,subject_type,subject_id,subject,details');
    expect(lines.length - 1).toBe(Number(total.count));
    // A name a spreadsheet would run as a formula is exported as text.
    expect(lines.some((line) => line.includes(`"'=HYPERLINK(""https://evil.example"")"`))).toBe(true);

    const json = await owner.get('/settings/audit-log/export?format=json&action=member.joined');
    expect(json.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const entries = (await json.json()) as { action: string; actor: { type: string; label: string } }[];
    expect(entries.map((entry) => [entry.action, entry.actor.type, entry.actor.label])).toEqual([
      ['member.joined', 'user', 'new@example.com'],
    ]);
    expect((await owner.get('/settings/audit-log/export?format=xml')).status).toBe(400);
  });

  it('forgets entries older than AUDIT_LOG_RETENTION_DAYS in the housekeeping', async () => {
    const now = server.ctx.clock.now().getTime();
    for (const [label, daysAgo] of [
      ['old', 31],
      ['recent', 29],
    ] as const)
      await recordAudit(server.ctx.db, {
        organizationId,
        actor: 'operator',
        action: 'webhook.deleted',
        subject: { type: 'webhook', id: null, label },
        at: new Date(now - daysAgo * 86_400_000),
      });
    await keepHouse(server.ctx);
    const left = await rows(owner, '/settings/audit-log?action=webhook.deleted');
    expect(left.map((row) => row[2])).toEqual(['http://127.0.0.1:9/hook', 'recent']);
  });
});
