import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../src/accounts/api-keys.js';
import { addMember } from '../src/accounts/members.js';
import { createOrganizationWithOwner } from '../src/accounts/organizations.js';
import type { Role } from '../src/core/roles.js';
import { csvField } from '../src/lifecycle/export.js';
import { deletePlannedFiles } from '../src/media/file-deletions.js';
import { publicApi } from './support/api.js';
import { BrowserSession } from './support/browser-session.js';
import { createChannel, createOrganization, type TestOrganization } from './support/fixtures.js';
import { startSmtpSink, type SmtpSink } from './support/smtp-sink.js';
import { startTestServer, type TestServer } from './support/server.js';
import { TIMEOUTS } from './support/timeouts.js';
import { dataOf } from './support/typed-answers.js';

// An organization's data exported as JSON and CSV, its deletion by an owner who types its name (its
// files, its members told by mail), and the deletion of one's account: through the pages, with mail
// through a real SMTP server on loopback.
let smtp: SmtpSink;
let server: TestServer;
const PASSWORD = 'correct horse battery staple';

beforeAll(async () => {
  smtp = await startSmtpSink();
  server = await startTestServer({ worker: true, env: { SMTP_URL: smtp.url, INSTALLATION_NAME: 'Acme Scheduler' } });
});
afterAll(async () => {
  await server?.close();
  await smtp?.close();
});

let people = 0;

/** A user with their own organization, their address confirmed, signed in to `organizationId` with `role`. */
async function member(organizationId: string, role: Role) {
  const email = `${role}-${++people}@example.com`;
  const { user, organization } = await createOrganizationWithOwner(server.ctx.db, {
    organizationName: `Own of ${email}`,
    email,
    password: PASSWORD,
  });
  await server.ctx.db.updateTable('users').set({ email_verified_at: new Date() }).where('id', '=', user.id).execute();
  await addMember(server.ctx.db, organizationId, user.id, role);
  const browser = new BrowserSession(server);
  await browser.logIn(email, PASSWORD);
  await browser.submit('/calendar', '/session/organization', { organization_id: organizationId, next: '/calendar' });
  return { userId: user.id, email, browser, ownOrganizationId: organization.id };
}

async function owned(name: string) {
  const owner = await createOrganization(server.ctx.db, name);
  await server.ctx.db
    .updateTable('users')
    .set({ email_verified_at: new Date() })
    .where('id', '=', owner.userId)
    .execute();
  const browser = new BrowserSession(server);
  await browser.logIn(owner.email, owner.password);
  return { owner, browser };
}

async function storeFile(organizationId: string, id: string): Promise<string> {
  const key = `media/${organizationId}/${id}`;
  await server.ctx.storage.put(key, Readable.from([Buffer.from('bytes')]), { contentType: 'image/png', size: 5 });
  await server.ctx.db
    .insertInto('media')
    .values({
      id,
      organization_id: organizationId,
      file_name: 'team, "photo".png',
      content_type: 'image/png',
      kind: 'image',
      size: 5,
      storage_key: key,
    })
    .execute();
  return key;
}

async function postWithHistory(owner: TestOrganization, channelId: string, content: string) {
  const created = await publicApi(server, owner.auth).POST('/public/v1/posts', {
    body: { type: 'draft', content, channelIds: [channelId] },
  });
  const id = dataOf(created, 201).data[0]!.id;
  await publicApi(server, owner.auth).POST('/public/v1/posts/{id}/schedule', {
    params: { path: { id } },
    body: { scheduledAt: '2031-01-05T10:00:00.000Z' },
  });
  return id;
}

interface ExportDocument {
  format: string;
  organization: { id: string; name: string };
  members: { email: string; role: string }[];
  channels: Record<string, unknown>[];
  media: { id: string; fileName: string }[];
  posts: { id: string; content: string; status: string; history: { type: string; status: string }[] }[];
}

describe('exporting an organization’s data', { timeout: 3 * TIMEOUTS.test }, () => {
  it('gives admins and owners one JSON document and a CSV per kind, streamed, and refuses the other roles', async () => {
    const { owner, browser } = await owned('Export Studio');
    const channel = await createChannel(server.ctx.db, owner.id, 'sandbox', 'Main, "quoted" channel');
    await server.ctx.db
      .updateTable('channels')
      .set({ credentials: 'sealed-secret-tokens', external_id: 'acct-1' })
      .where('id', '=', channel.id)
      .execute();
    const first = await postWithHistory(owner, channel.id, '=HYPERLINK("https://evil.example")');
    const second = await postWithHistory(owner, channel.id, 'Line one\nline two, with "quotes"');
    await storeFile(owner.id, 'med_exported');
    const admin = await member(owner.id, 'admin');
    const editor = await member(owner.id, 'editor');

    const page = await browser.get('/settings/organization');
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('href="/settings/organization/export.json"');
    expect(html).toContain('href="/settings/organization/delete"');
    // An admin exports, but only an owner is offered the deletion.
    const adminPage = await (await admin.browser.get('/settings/organization')).text();
    expect(adminPage).toContain('Only an owner deletes the organization.');
    // An editor sees the organization's page (its time zone), without the export or the deletion.
    const editorPage = await editor.browser.get('/settings/organization');
    expect(editorPage.status).toBe(200);
    const editorHtml = await editorPage.text();
    expect(editorHtml).not.toContain('export.json');
    expect(editorHtml).not.toContain('href="/settings/organization/delete"');
    expect((await editor.browser.get('/settings/organization/export.json')).status).toBe(403);
    expect((await editor.browser.get('/settings/organization/export/posts.csv')).status).toBe(403);

    const json = await admin.browser.get('/settings/organization/export.json');
    expect(json.status).toBe(200);
    expect(json.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(json.headers.get('content-disposition')).toMatch(
      /^attachment; filename="export-studio-\d{4}-\d\d-\d\d-export\.json"$/,
    );
    const text = await json.text();
    expect(text).not.toContain('sealed-secret-tokens');
    const document = JSON.parse(text) as ExportDocument;
    expect(document.format).toBe('organization-export/1');
    expect(document.organization).toMatchObject({ id: owner.id, name: 'Export Studio' });
    expect(document.members.map((m) => [m.email, m.role])).toEqual([
      [owner.email, 'owner'],
      [admin.email, 'admin'],
      [editor.email, 'editor'],
    ]);
    expect(document.channels).toEqual([
      expect.objectContaining({ id: channel.id, provider: 'sandbox', removed: false }),
    ]);
    expect(document.media).toEqual([expect.objectContaining({ id: 'med_exported', fileName: 'team, "photo".png' })]);
    expect(document.posts.map((post) => post.id).sort()).toEqual([first, second].sort());
    for (const post of document.posts) {
      expect(post.status).toBe('scheduled');
      expect(post.history.map((event) => event.type)).toEqual(['created', 'scheduled']);
    }

    const posts = await browser.get('/settings/organization/export/posts.csv');
    expect(posts.headers.get('content-type')).toBe('text/csv; charset=utf-8; header=present');
    const rows = (await posts.text()).split('\r\n');
    expect(rows[0]).toMatch(/^id,group,channelId,provider,status,content,/);
    // A formula is defused, and a field with commas, quotes or line breaks quoted (RFC 4180).
    expect(rows.join('\r\n')).toContain(`,"'=HYPERLINK(""https://evil.example"")",`);
    expect(rows.join('\r\n')).toContain(`,"Line one\nline two, with ""quotes""",`);
    const history = (await (await browser.get('/settings/organization/export/post-history.csv')).text()).split('\r\n');
    expect(history[0]).toBe('postId,id,type,at,status,scheduledAt,details');
    expect(history.filter((line) => line.startsWith(first))).toHaveLength(2);
    const members = await (await browser.get('/settings/organization/export/members.csv')).text();
    expect(members).toContain(`,${admin.email},admin,`);
    const channels = await (await browser.get('/settings/organization/export/channels.csv')).text();
    expect(channels).toContain('"Main, ""quoted"" channel"');
    expect(channels).not.toContain('sealed-secret-tokens');
    expect((await browser.get('/settings/organization/export/secrets.csv')).status).toBe(404);
  });

  it('writes CSV fields as RFC 4180 says, lists as JSON, and defuses what a spreadsheet would run', () => {
    expect(csvField('plain')).toBe('plain');
    expect(csvField(null)).toBe('');
    expect(csvField(12)).toBe('12');
    expect(csvField(['med_1', 'med_2'])).toBe('"[""med_1"",""med_2""]"');
    expect(csvField('+1 and more')).toBe("'+1 and more");
    expect(csvField('@here')).toBe("'@here");
    expect(csvField('a\r\nb')).toBe('"a\r\nb"');
  });
});

describe('deleting an organization', { timeout: 2 * TIMEOUTS.test }, () => {
  it('asks its owner to type its name, then deletes all of it, its files after, and tells its members', async () => {
    const { owner, browser } = await owned('Doomed Studio');
    const channel = await createChannel(server.ctx.db, owner.id, 'sandbox');
    await postWithHistory(owner, channel.id, 'Never published');
    const key = await storeFile(owner.id, 'med_doomed');
    const admin = await member(owner.id, 'admin');
    const editor = await member(owner.id, 'editor');

    expect((await admin.browser.get('/settings/organization/delete')).status).toBe(403);
    const byAdmin = await admin.browser.submit('/settings/organization', '/settings/organization/delete', {
      name: 'Doomed Studio',
    });
    expect(byAdmin.status).toBe(403);

    const wrong = await browser.submit('/settings/organization/delete', '/settings/organization/delete', {
      name: 'Doomed',
    });
    expect(wrong.status).toBe(400);
    expect(await wrong.text()).toContain('The name is not the name of the organization');
    expect(
      await server.ctx.db.selectFrom('organizations').select('id').where('id', '=', owner.id).execute(),
    ).toHaveLength(1);

    const deleted = await browser.submit('/settings/organization/delete', '/settings/organization/delete', {
      name: ' Doomed Studio ',
    });
    expect(deleted.status).toBe(200);
    expect(await deleted.text()).toContain('Doomed Studio is deleted');
    for (const table of ['organizations', 'posts', 'channels', 'media', 'api_keys', 'memberships'] as const) {
      const column = table === 'organizations' ? 'id' : 'organization_id';
      const left = await server.ctx.db.selectFrom(table).select(column).where(column, '=', owner.id).execute();
      expect([table, left]).toEqual([table, []]);
    }
    // The API key of the organization is refused like an unknown one.
    expect((await server.fetch('/public/v1/is-connected', { headers: owner.auth })).status).toBe(401);
    // Its file goes at the housekeeping's next pass.
    expect(await server.ctx.storage.stat(key)).toEqual({ size: 5 });
    await deletePlannedFiles(server.ctx);
    expect(await server.ctx.storage.stat(key)).toBeUndefined();
    expect(await server.ctx.db.selectFrom('stored_file_deletions').selectAll().execute()).toEqual([]);

    for (const to of [owner.email, admin.email, editor.email]) {
      const mail = await smtp.next(to);
      expect(mail.subject).toBe('Doomed Studio was deleted · Acme Scheduler');
      expect(mail.text).toContain(`deleted the organization Doomed Studio on Acme Scheduler`);
      expect(mail.text).toContain(owner.email);
    }
    // The members go on in their own organizations.
    const calendar = await (await admin.browser.get('/calendar')).text();
    expect(calendar).toContain(`Own of ${admin.email}`);
  });
});

describe('deleting one’s account', { timeout: 2 * TIMEOUTS.test }, () => {
  it('is refused to the last owner of an organization with other members, and says how to hand it over', async () => {
    const { owner, browser } = await owned('Handed Studio');
    const admin = await member(owner.id, 'admin');
    const plan = await (await browser.get('/account/delete')).text();
    expect(plan).toContain('You are the last owner of organizations that have other members');
    expect(plan).toContain('<strong>Handed Studio</strong> (1 other member)');
    expect(plan).not.toContain('Delete my account</button>');
    const refused = await browser.submit('/account', '/account/delete', { password: owner.password });
    expect(refused.status).toBe(422);
    expect(await refused.text()).toContain('Make another member owner first');
    expect(await server.ctx.db.selectFrom('users').select('id').where('id', '=', owner.userId).execute()).toHaveLength(
      1,
    );

    // Handed over, the former owner may go; the organization stays with its new owner.
    await browser.submit('/settings/members', '/settings/members/transfer', { user_id: admin.userId });
    const after = await (await browser.get('/account/delete')).text();
    expect(after).toContain('You leave these organizations');
    expect(after).toMatch(/<strong>Handed Studio<\/strong> \(admin\)/);
    const wrong = await browser.submit('/account/delete', '/account/delete', { password: 'not it at all' });
    expect(wrong.status).toBe(422);
    expect(await wrong.text()).toContain('Your password is not right');
    const gone = await browser.submit('/account/delete', '/account/delete', { password: owner.password });
    expect(gone.status).toBe(200);
    expect(await server.ctx.db.selectFrom('users').select('id').where('id', '=', owner.userId).execute()).toEqual([]);
    expect(
      await server.ctx.db.selectFrom('organizations').select('id').where('id', '=', owner.id).execute(),
    ).toHaveLength(1);
    // Signed out: the session went with the account.
    expect((await browser.get('/calendar')).headers.get('location')).toMatch(/^\/login/);
  });

  it('deletes the organizations it is alone in, with confirmation, and revokes what it made in the others', async () => {
    const { owner: host } = await owned('Host Studio');
    const guest = await member(host.id, 'admin');
    const { secret } = await createApiKey(server.ctx.db, host.id, 'Guest key', {
      maker: { organizationId: host.id, role: 'admin', userId: guest.userId },
      role: 'editor',
    });
    const plan = await (await guest.browser.get('/account/delete')).text();
    expect(plan).toContain('they are deleted with your account');
    expect(plan).toContain(`<strong>Own of ${guest.email}</strong>`);
    expect(plan).toMatch(/<strong>Host Studio<\/strong> \(admin\)/);

    const gone = await guest.browser.submit('/account/delete', '/account/delete', { password: PASSWORD });
    expect(gone.status).toBe(200);
    expect(await gone.text()).toContain(`Your account is deleted, and with it Own of ${guest.email}.`);
    expect(
      await server.ctx.db.selectFrom('organizations').select('id').where('id', '=', guest.ownOrganizationId).execute(),
    ).toEqual([]);
    expect(
      (await server.fetch('/public/v1/is-connected', { headers: { Authorization: `Bearer ${secret}` } })).status,
    ).toBe(401);
    // Host Studio's audit log says who left, and that their credentials went with them.
    const left = await server.ctx.db
      .selectFrom('audit_log')
      .select(['action', 'actor_label', 'details'])
      .where('organization_id', '=', host.id)
      .where('action', '=', 'member.left')
      .execute();
    expect(left).toEqual([
      {
        action: 'member.left',
        actor_label: guest.email,
        details: { role: 'admin', credentials: 'revoked', accountDeleted: true },
      },
    ]);
    const mail = await smtp.next(guest.email);
    const both = [mail, await smtp.next(guest.email)];
    expect(both.map((m) => m.subject).sort()).toEqual(
      [`Own of ${guest.email} was deleted · Acme Scheduler`, 'Your Acme Scheduler account was deleted'].sort(),
    );
  });
});
