import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createApiKey } from '../src/accounts/api-keys.js';
import { newId } from '../src/core/ids.js';
import { publicApi, type Schemas } from './support/api.js';
import { BrowserSession, decodeEntities, inputValue } from './support/browser-session.js';
import {
  countPosts,
  createChannel,
  createOrganization,
  insertPost,
  type TestOrganization,
} from './support/fixtures.js';
import { POSTS_TEST_ENV } from './support/posts.js';
import { startTestServer, type TestServer } from './support/server.js';
import { dataOf, refusalOf } from './support/typed-answers.js';

const NOW = '2026-11-21T12:00:00.000Z';

let server: TestServer;
let acme: TestOrganization;
let globex: TestOrganization;
let sandbox: string;
let other: string;

beforeAll(async () => {
  // Two posts a day per sandbox channel, so that an import can run out of a day's quota.
  server = await startTestServer({ env: { ...POSTS_TEST_ENV, DAILY_POST_LIMIT_SANDBOX: '2' } });
  acme = await createOrganization(server.ctx.db, 'Acme');
  globex = await createOrganization(server.ctx.db, 'Globex');
  sandbox = (await createChannel(server.ctx.db, acme.id, 'sandbox', 'Main')).id;
  other = (await createChannel(server.ctx.db, acme.id, 'sandbox', 'Second')).id;
});
afterAll(() => server?.close());
beforeEach(() => server.setNow(NOW));

const api = (org: TestOrganization | { auth: { Authorization: string } } = acme) => publicApi(server, org.auth);
const importCsv = (csv: string, dryRun?: boolean, org = acme) =>
  api(org).POST('/public/v1/posts/import', {
    params: { query: dryRun === undefined ? {} : { dryRun } },
    body: { csv },
  });
const importRows = (rows: Schemas['ImportRow'][], dryRun?: boolean) =>
  api().POST('/public/v1/posts/import', { params: { query: dryRun === undefined ? {} : { dryRun } }, body: { rows } });

/** A CSV file of lines, each an array of cells (quoted as needed). */
function csvOf(lines: string[][]): string {
  const cell = (value: string) => (/[",\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);
  return lines.map((line) => line.map(cell).join(',')).join('\n') + '\n';
}

describe('POST /public/v1/posts/import', () => {
  it('checks every row in a dry run, reports each problem by row and column, and writes nothing', async () => {
    const before = await countPosts(server.ctx.db, acme.id);
    const csv = csvOf([
      ['Channels', 'Text', 'Time', 'Settings', 'Notes'],
      [sandbox, 'Fine', '2026-12-01T10:00:00+01:00', '', 'ignored'],
      ['ch_nowhere', 'Unknown channel', '', '', ''],
      [sandbox, 'Bad time', 'next tuesday', '', ''],
      [sandbox, 'Bad settings', '', '{"__type": "sandbox"', ''],
      [`${sandbox} ${other}`, '', '', '', ''],
      [sandbox, 'In the past', '2026-11-20T08:00:00Z', '{"__type": "tiktok"}', ''],
    ]);
    const report = dataOf(await importCsv(csv, true));
    expect(report).toMatchObject({ dryRun: true, created: 0, existing: 0, invalid: 5 });
    expect(report.rows.map((row) => [row.row, row.outcome, row.errors.map((e) => e.field)])).toEqual([
      [1, 'valid', []],
      [2, 'invalid', ['channels']],
      [3, 'invalid', ['time']],
      [4, 'invalid', ['settings']],
      [5, 'invalid', ['text', 'text']],
      [6, 'invalid', ['settings']],
    ]);
    expect(report.rows[1]!.errors[0]!.message).toBe('There is no channel ch_nowhere in this organization.');
    expect(report.rows[2]!.errors[0]!.message).toContain('"next tuesday" is no time this server takes');
    expect(report.rows[4]!.errors.map((e) => e.message)).toEqual([
      `A post needs content or media (channel ${sandbox}).`,
      `A post needs content or media (channel ${other}).`,
    ]);
    expect(report.rows[5]!.errors[0]!.message).toBe(
      "are for tiktok, and none of the row's channels is a tiktok channel.",
    );
    // Fixed, the row in the past meets the create's own rule on time.
    const past = dataOf(
      await importCsv(
        csvOf([
          ['channels', 'text', 'time'],
          [sandbox, 'Past', '2026-11-20T08:00:00Z'],
        ]),
        true,
      ),
    );
    expect(past.rows[0]!.errors).toEqual([
      { field: 'time', message: 'is more than 1 minute in the past (it is 2026-11-21T12:00:00.000Z now)' },
    ]);
    expect(await countPosts(server.ctx.db, acme.id)).toBe(before);
  });

  it('imports all rows or none, and importing the same file again creates nothing twice', async () => {
    const before = await countPosts(server.ctx.db, acme.id);
    const good = [
      ['key', 'channels', 'text', 'time', 'settings'],
      [
        'winter-1',
        sandbox,
        'Winter is here, "quoted"',
        '2026-12-02T09:30:00+01:00',
        '{"__type": "sandbox", "outcome": "failed"}',
      ],
      ['winter-2', `${sandbox};${other}`, 'A draft for two', '', ''],
    ];
    const broken = csvOf([...good, ['winter-3', 'ch_nowhere', 'Nope', '', '']]);
    const refusal = refusalOf(await importCsv(broken), 422, 'unprocessable');
    expect(refusal.message).toContain('Nothing was imported: 1 row breaks rules');
    expect(refusal.details).toEqual([
      { path: 'rows[3].channels', message: 'There is no channel ch_nowhere in this organization.' },
    ]);
    expect(await countPosts(server.ctx.db, acme.id)).toBe(before);

    const report = dataOf(await importCsv(csvOf(good)), 201);
    expect(report).toMatchObject({ dryRun: false, created: 2, existing: 0, invalid: 0 });
    const [first, second] = report.rows;
    expect(first).toMatchObject({ row: 1, key: 'winter-1', outcome: 'created', errors: [] });
    expect(second!.postIds).toHaveLength(2);
    const scheduled = dataOf(
      await api().GET('/public/v1/posts/{id}', { params: { path: { id: first!.postIds[0]! } } }),
    );
    expect(scheduled).toMatchObject({
      group: first!.group,
      channelId: sandbox,
      content: 'Winter is here, "quoted"',
      status: 'scheduled',
      scheduledAt: '2026-12-02T08:30:00.000Z',
      settings: { __type: 'sandbox', outcome: 'failed' },
    });
    const history = dataOf(
      await api().GET('/public/v1/posts/{id}/history', { params: { path: { id: scheduled.id }, query: {} } }),
    );
    expect(history.data.map((event) => event.type)).toEqual(['created', 'scheduled']);
    const drafts = dataOf(await api().GET('/public/v1/posts', { params: { query: { group: second!.group! } } }));
    expect(drafts.data.map((post) => [post.channelId, post.status]).sort()).toEqual(
      [
        [sandbox, 'draft'],
        [other, 'draft'],
      ].sort(),
    );
    expect(await countPosts(server.ctx.db, acme.id)).toBe(before + 3);

    // Again, with a row added: the two known rows exist, only the new one is created.
    const again = dataOf(await importCsv(csvOf([...good, ['winter-4', other, 'One more', '', '']])), 201);
    expect(again).toMatchObject({ created: 1, existing: 2 });
    expect(again.rows.slice(0, 2)).toEqual(
      report.rows.map((row) => ({ ...row, outcome: 'existing', postIds: [...row.postIds].sort() })),
    );
    expect(await countPosts(server.ctx.db, acme.id)).toBe(before + 4);
    const dryRun = dataOf(await importCsv(csvOf(good), true));
    expect(dryRun.rows.map((row) => row.outcome)).toEqual(['existing', 'existing']);
  });

  it('keys a row without a key by its content, and refuses a key used twice in one file', async () => {
    const row = { channels: [other], text: 'No key of its own' };
    const first = dataOf(await importRows([row]), 201);
    expect(first.rows[0]).toMatchObject({ key: null, outcome: 'created' });
    const second = dataOf(await importRows([row, { ...row, text: 'Different' }]), 201);
    expect(second.rows.map((r) => r.outcome)).toEqual(['existing', 'created']);
    const twice = dataOf(
      await importRows(
        [
          { ...row, key: 'k' },
          { ...row, key: 'k', text: 'other' },
        ],
        true,
      ),
    );
    expect(twice.rows[1]!.errors).toEqual([{ field: 'key', message: 'is also the key of row 1.' }]);
  });

  it("refuses the whole import when a row does not fit its channel's daily quota, naming the row", async () => {
    const day = '2026-12-10T10:00:00Z';
    const rows = ['a', 'b', 'c'].map((text) => ({ channels: [sandbox], text, time: day }));
    const dry = dataOf(await importRows(rows, true));
    expect(dry.invalid).toBe(0);
    const before = await countPosts(server.ctx.db, acme.id);
    const refusal = refusalOf(await importRows(rows), 422, 'unprocessable');
    expect(refusal.message).toContain('Nothing was imported: row 3 was refused.');
    expect(refusal.details?.[0]?.path).toBe('rows[3].channels');
    expect(await countPosts(server.ctx.db, acme.id)).toBe(before);
  });

  it('reads a file it cannot parse as a 400, and lets a contributor import drafts only', async () => {
    const unreadable = refusalOf(await importCsv('channels,text\n"unclosed,quote\n'), 400, 'validation_failed');
    expect(unreadable.details?.[0]?.path).toBe('csv');
    const noChannels = refusalOf(await importCsv('text,time\nhello,\n'), 400, 'validation_failed');
    expect(noChannels.message).toBe('The CSV file has no `channels` column.');

    const { secret } = await createApiKey(server.ctx.db, acme.id, 'contributor', { role: 'contributor' });
    const contributor = { auth: { Authorization: `Bearer ${secret}` } };
    const scheduled = csvOf([
      ['channels', 'text', 'time'],
      [other, 'Soon', '2026-12-03T09:00:00Z'],
    ]);
    refusalOf(await importCsv(scheduled, true, contributor as TestOrganization), 403, 'forbidden');
    const drafts = csvOf([
      ['channels', 'text', 'time', 'status'],
      [other, 'Later', '2026-12-03T09:00:00Z', 'draft'],
    ]);
    const report = dataOf(await importCsv(drafts, false, contributor as TestOrganization), 201);
    const post = dataOf(
      await api().GET('/public/v1/posts/{id}', { params: { path: { id: report.rows[0]!.postIds[0]! } } }),
    );
    expect(post).toMatchObject({ status: 'draft', scheduledAt: '2026-12-03T09:00:00.000Z' });

    // An exported post that was not waiting to be published (skipped, published, failed) comes back a draft.
    const exported = csvOf([
      ['channels', 'text', 'time', 'status'],
      [other, 'Skipped once', '2026-12-04T09:00:00Z', 'skipped'],
    ]);
    const again = dataOf(await importCsv(exported, false, contributor as TestOrganization), 201);
    const copy = dataOf(
      await api().GET('/public/v1/posts/{id}', { params: { path: { id: again.rows[0]!.postIds[0]! } } }),
    );
    expect(copy).toMatchObject({ status: 'draft', scheduledAt: '2026-12-04T09:00:00.000Z' });
  });
});

describe('GET /public/v1/posts/export', () => {
  it('streams the filtered posts as CSV, which imports back', async () => {
    const channel = (await createChannel(server.ctx.db, acme.id, 'sandbox', 'Export')).id;
    const imported = dataOf(
      await importRows([
        { channels: [channel], text: 'First, with "quotes"\nand a line', time: '2026-12-04T09:00:00Z' },
        { channels: [channel], text: 'Second', time: '2026-12-05T09:00:00Z' },
        { channels: [channel], text: 'A draft' },
      ]),
      201,
    );
    const response = await server.fetch(`/public/v1/posts/export?format=csv&channelId=${channel}&status=scheduled`, {
      headers: acme.auth,
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(response.headers.get('content-disposition')).toBe('attachment; filename="posts.csv"');
    const csv = await response.text();
    const records = parse<Record<string, string>>(csv, { columns: true });
    expect(records).toEqual([
      {
        key: imported.rows[0]!.postIds[0],
        channels: channel,
        text: 'First, with "quotes"\nand a line',
        time: '2026-12-04T09:00:00.000Z',
        media: '',
        settings: JSON.stringify({ __type: 'sandbox', outcome: 'published', failingPart: 1 }),
        status: 'scheduled',
        provider: 'sandbox',
        publishedAt: '',
        releaseUrl: '',
      },
      expect.objectContaining({ key: imported.rows[1]!.postIds[0], text: 'Second' }),
    ]);
    // The export imports back (here as copies: its keys are the posts' ids, new to imports).
    const back = dataOf(await importCsv(csv), 201);
    expect(back.rows.map((row) => row.outcome)).toEqual(['created', 'created']);
    expect(dataOf(await importCsv(csv), 201).existing).toBe(2);
  });

  it('streams JSON whose rows import back, every post however many, and nothing of another organization', async () => {
    const channel = (await createChannel(server.ctx.db, acme.id, 'sandbox', 'Many')).id;
    // More posts than one batch of the export reads.
    await server.ctx.db
      .insertInto('posts')
      .values(
        Array.from({ length: 510 }, () => ({
          id: newId('post'),
          organization_id: acme.id,
          group_id: newId('grp'),
          channel_id: channel,
          content: 'published before',
          media_ids: '[]',
          settings: JSON.stringify({ __type: 'sandbox', outcome: 'published', failingPart: 1 }),
          status: 'published' as const,
          scheduled_at: null,
          updated_at: new Date(NOW),
        })),
      )
      .execute();
    const file = dataOf(
      await api().GET('/public/v1/posts/export', { params: { query: { format: 'json', channelId: [channel] } } }),
    ) as Schemas['PostExport'];
    expect(file.rows).toHaveLength(510);
    expect(new Set(file.rows.map((row) => row.key)).size).toBe(510);
    expect(file.rows[0]).toMatchObject({ channels: [channel], status: 'published', time: null });
    const drafts = file.rows.slice(0, 2).map((row) => ({ ...row, status: 'draft' }));
    expect(dataOf(await importRows(drafts), 201).created).toBe(2);
    const foreign = dataOf(
      await api(globex).GET('/public/v1/posts/export', { params: { query: { format: 'json', channelId: [channel] } } }),
    ) as Schemas['PostExport'];
    expect(foreign.rows).toEqual([]);
  });
});

describe('POST /public/v1/posts/{id}/duplicate', () => {
  it('makes a draft of any post in a group of its own, 404 for another organization, 422 when its channel is gone', async () => {
    const channel = (await createChannel(server.ctx.db, acme.id, 'sandbox', 'Duplicates')).id;
    const id = await insertPost(server.ctx.db, {
      organizationId: acme.id,
      channelId: channel,
      status: 'published',
      scheduledAt: '2026-11-20T08:00:00.000Z',
    });
    const original = dataOf(await api().GET('/public/v1/posts/{id}', { params: { path: { id } } }));
    const copy = dataOf(await api().POST('/public/v1/posts/{id}/duplicate', { params: { path: { id } } }), 201);
    expect(copy).toMatchObject({
      channelId: channel,
      content: original.content,
      settings: original.settings,
      status: 'draft',
      scheduledAt: null,
      publishedAt: null,
      releaseUrl: null,
      createdAt: NOW,
    });
    expect(copy.id).not.toBe(id);
    expect(copy.group).not.toBe(original.group);
    refusalOf(
      await api(globex).POST('/public/v1/posts/{id}/duplicate', { params: { path: { id } } }),
      404,
      'not_found',
    );
    await server.ctx.db.updateTable('channels').set({ status: 'removed' }).where('id', '=', channel).execute();
    const gone = refusalOf(await api().POST('/public/v1/posts/{id}/duplicate', { params: { path: { id } } }), 422);
    expect(gone.details?.[0]?.message).toBe(`There is no channel ${channel} in this organization.`);
  });
});

describe('the web app: Posts → Import, export, duplicate and delete', () => {
  it('checks a pasted file row by row, imports it, and downloads, duplicates and deletes posts with confirmation', async () => {
    const browser = new BrowserSession(server);
    await browser.logIn(acme.email, acme.password);
    const channel = (await createChannel(server.ctx.db, acme.id, 'sandbox', 'Web')).id;
    const csv = csvOf([
      ['key', 'channels', 'text', 'time'],
      ['web-1', channel, 'From the web', '2026-12-06T09:00:00Z'],
      ['web-2', 'ch_nowhere', 'Wrong channel', ''],
    ]);
    const checked = await browser.submit('/posts/import', '/posts/import', { csv, action: 'check' });
    expect(checked.status).toBe(200);
    const report = decodeEntities(await checked.text());
    expect(report).toContain('1 ready to import, 1 with problems, 0 imported before. Nothing was created yet.');
    expect(report).toMatch(/data-import-row="2" data-outcome="invalid">[\s\S]*There is no channel ch_nowhere/);
    expect(report).not.toContain('value="import"');

    const fixed = csv.replace(/web-2,ch_nowhere,Wrong channel,\n/, `web-2,${channel},Right channel,\n`);
    expect(
      decodeEntities(
        await (await browser.submit('/posts/import', '/posts/import', { csv: fixed, action: 'check' })).text(),
      ),
    ).toContain('Import 2 rows');
    const imported = await browser.submit('/posts/import', '/posts/import', { csv: fixed, action: 'import' });
    const done = decodeEntities(await imported.text());
    expect(done).toContain('2 created, 0 imported before.');
    const postId = /href="\/posts\/(post_\w+)"/.exec(done)![1]!;

    const download = await browser.get('/posts/export?status=draft&format=csv');
    expect(download.headers.get('content-disposition')).toBe('attachment; filename="posts.csv"');
    expect(await download.text()).toContain('Right channel');

    const duplicated = await browser.submit(`/posts/${postId}`, `/posts/${postId}/duplicate`, {});
    expect(duplicated.status).toBe(303);
    const copyPath = duplicated.headers.get('location')!;
    expect(copyPath).toMatch(/^\/posts\/post_\w+\?duplicated=1$/);
    const copyPage = decodeEntities(await (await browser.get(copyPath)).text());
    expect(copyPage).toContain('This is a copy of the post, saved as a draft');
    expect(copyPage).toContain('From the web');

    const copyId = /\/posts\/(post_\w+)/.exec(copyPath)![1]!;
    const ask = await browser.submit(copyPath, `/posts/${copyId}/delete`, {});
    expect(ask.status).toBe(200);
    expect(decodeEntities(await ask.text())).toContain('Delete this post?');
    expect((await api().GET('/public/v1/posts/{id}', { params: { path: { id: copyId } } })).response.status).toBe(200);
    const deleted = await browser.submit(copyPath, `/posts/${copyId}/delete`, { confirm: 'yes' });
    expect([deleted.status, deleted.headers.get('location')]).toEqual([303, '/posts?deleted=1']);
    refusalOf(await api().GET('/public/v1/posts/{id}', { params: { path: { id: copyId } } }), 404, 'not_found');
  });

  it('changes the ticked posts of the list one by one, saying what became of each', async () => {
    const browser = new BrowserSession(server);
    await browser.logIn(acme.email, acme.password);
    const channel = (await createChannel(server.ctx.db, acme.id, 'sandbox', 'Bulk')).id;
    const scheduled = await insertPost(server.ctx.db, {
      organizationId: acme.id,
      channelId: channel,
      status: 'scheduled',
      scheduledAt: '2026-12-07T09:00:00.000Z',
    });
    const published = await insertPost(server.ctx.db, {
      organizationId: acme.id,
      channelId: channel,
      status: 'published',
      scheduledAt: '2026-11-20T09:00:00.000Z',
    });
    const list = await browser.get('/posts');
    const csrf = inputValue(await list.text(), 'csrf_token')!;
    const tick = (action: string, extra: Record<string, string> = {}) =>
      browser.request('/posts/bulk', {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams([
          ['csrf_token', csrf],
          ['action', action],
          ['post', scheduled],
          ['post', published],
          ...Object.entries(extra),
        ]).toString(),
      });
    const drafted = decodeEntities(await (await tick('draft')).text());
    expect(drafted).toMatch(new RegExp(`data-bulk-result="${scheduled}" data-done="true">.*moved to drafts`));
    expect(drafted).toMatch(new RegExp(`data-bulk-result="${published}" data-done="false">.*not changed: `));
    const post = (id: string) => api().GET('/public/v1/posts/{id}', { params: { path: { id } } });
    expect(dataOf(await post(scheduled)).status).toBe('draft');

    const moved = decodeEntities(await (await tick('move', { date: '2026-12-08', time: '10:30' })).text());
    expect(moved).toMatch(new RegExp(`data-bulk-result="${scheduled}" data-done="true">.*moved`));
    expect(dataOf(await post(scheduled))).toMatchObject({
      status: 'scheduled',
      scheduledAt: '2026-12-08T10:30:00.000Z',
    });

    const ask = await tick('delete');
    const question = decodeEntities(await ask.text());
    expect(question).toContain('Delete 2 posts?');
    expect(dataOf(await post(published)).status).toBe('published');
    const confirmed = await browser.request('/posts/bulk', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams([
        ['csrf_token', csrf],
        ['confirm', 'yes'],
        ...[...question.matchAll(/<input type="hidden" name="(action|post)" value="([^"]+)">/g)].map(
          ([, name, value]) => [name!, value!] as [string, string],
        ),
      ]).toString(),
    });
    const deleted = decodeEntities(await confirmed.text());
    expect(deleted).toMatch(new RegExp(`data-bulk-result="${scheduled}" data-done="true">.*deleted`));
    expect(deleted).toMatch(new RegExp(`data-bulk-result="${published}" data-done="true">.*deleted`));
    refusalOf(await post(scheduled), 404, 'not_found');
  });
});
