import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { publicApi, type Schemas } from './support/api.js';
import { BrowserSession, decodeEntities } from './support/browser-session.js';
import { countPosts, createChannel, createOrganization, type TestOrganization } from './support/fixtures.js';
import { mp4WithDuration, png } from './support/media-samples.js';
import { approve, createOAuthApp, exchange } from './support/oauth.js';
import { POSTS_TEST_ENV } from './support/posts.js';
import { startRemoteServer, type RemoteServer } from './support/remote-server.js';
import { startTestServer, type TestServer } from './support/server.js';
import { dataOf, refusalOf } from './support/typed-answers.js';
import { stringContaining, stringMatching } from './support/typed-matchers.js';

const NOW = '2026-11-21T12:00:00.000Z';

let server: TestServer;
let acme: TestOrganization;
let sandbox: string;
let bluesky: string;
/** The file server the rows' URLs point at, on loopback (the server under test allows private addresses). */
let files: RemoteServer;

beforeAll(async () => {
  server = await startTestServer({ env: { ...POSTS_TEST_ENV, MEDIA_FETCH_ALLOW_PRIVATE: 'true' } });
  acme = await createOrganization(server.ctx.db, 'Acme');
  sandbox = (await createChannel(server.ctx.db, acme.id, 'sandbox', 'Main')).id;
  bluesky = (await createChannel(server.ctx.db, acme.id, 'bluesky', 'Sky')).id;
  files = await startRemoteServer((req, res) => {
    const name = new URL(req.url ?? '/', 'http://files').pathname;
    if (name.startsWith('/images/')) res.writeHead(200, { 'Content-Type': 'image/png' }).end(png(4, 3));
    else if (name === '/long.mp4') res.writeHead(200, { 'Content-Type': 'video/mp4' }).end(mp4WithDuration(200));
    else if (name === '/notes.txt') res.writeHead(200, { 'Content-Type': 'text/plain' }).end('just words');
    else res.writeHead(404).end();
  });
});
afterAll(async () => {
  await Promise.all([server?.close(), files?.close()]);
});
beforeEach(() => {
  server.setNow(NOW);
  files.requests.length = 0;
});

const api = () => publicApi(server, acme.auth);
const importRows = (rows: Schemas['ImportRow'][], dryRun?: boolean) =>
  api().POST('/public/v1/posts/import', { params: { query: dryRun === undefined ? {} : { dryRun } }, body: { rows } });
const fileUrl = (name: string) => `${files.origin}${name}`;

/** The organization's media, as the library lists them. */
async function library() {
  return dataOf(await api().GET('/public/v1/media', { params: { query: { limit: 100 } } })).data;
}

/** The files in the server's local media storage. */
const storedFiles = () => filesIn('media');

/** The files under a directory of the server's data directory (its media, its downloads staged in `tmp`). */
function filesIn(directory: string): string[] {
  const root = path.join(server.ctx.config.dataDir, directory);
  if (!fs.existsSync(root)) return [];
  return fs
    .readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => entry.name);
}

describe('media URLs in an import', () => {
  it('checks a dry run against the files themselves, downloading each URL once and keeping nothing', async () => {
    const five = [1, 2, 3, 4, 5].map((n) => fileUrl(`/images/${n}.png`));
    const report = dataOf(
      await importRows(
        [
          { key: 'one', channels: [sandbox], text: 'With a picture', media: [five[0]!] },
          { key: 'two', channels: [sandbox], text: 'The same picture', media: [five[0]!] },
          // Bluesky takes up to 4 images: the fifth is refused by the rule, which only the files can tell.
          { key: 'sky', channels: [bluesky], text: 'Five pictures', media: five },
          { key: 'long', channels: [bluesky], text: 'A long video', media: [fileUrl('/long.mp4')] },
          { key: 'text', channels: [sandbox], text: 'Not a picture', media: [fileUrl('/notes.txt')] },
          { key: 'gone', channels: [sandbox], text: 'Nothing there', media: [fileUrl('/missing.png')] },
          { key: 'ftp', channels: [sandbox], text: 'Not http', media: ['ftp://files.example/a.png'] },
        ],
        true,
      ),
    );
    expect(report).toMatchObject({ dryRun: true, created: 0, invalid: 5 });
    const byKey = new Map(report.rows.map((row) => [row.key, row]));
    expect(byKey.get('one')).toMatchObject({ outcome: 'valid', errors: [] });
    expect(byKey.get('two')).toMatchObject({ outcome: 'valid', errors: [] });
    expect(byKey.get('sky')!.errors).toEqual([{ field: 'media', message: stringMatching(/up to 4 images/) }]);
    expect(byKey.get('long')!.errors).toEqual([
      {
        field: 'media',
        message: `${fileUrl('/long.mp4')}: Bluesky takes videos of up to 180 seconds; this one lasts 200 seconds (channel ${bluesky}).`,
      },
    ]);
    const [text] = byKey.get('text')!.errors;
    expect(text).toMatchObject({ field: 'media' });
    expect(text!.message).toContain(fileUrl('/notes.txt'));
    const [gone] = byKey.get('gone')!.errors;
    expect(gone!.message).toContain(fileUrl('/missing.png'));
    expect(gone!.message).toMatch(/404/);
    expect(byKey.get('ftp')!.errors).toEqual([
      {
        field: 'media',
        message: stringContaining('ftp://files.example/a.png is not an https:// or http:// URL'),
      },
    ]);

    // A CSV cell is held to the length the JSON form's contract sets.
    const long = `${fileUrl('/images/')}${'x'.repeat(2100)}.png`;
    const csv = dataOf(
      await api().POST('/public/v1/posts/import', {
        params: { query: { dryRun: true } },
        body: { csv: `channels,text,media\n${sandbox},Long,${long}\n` },
      }),
    );
    expect(csv.rows[0]!.errors).toEqual([
      { field: 'media', message: stringContaining(`has ${long.length} characters; a media URL has at most 2048.`) },
    ]);

    // Each URL was fetched once, the shared one included; nothing was kept.
    const fetched = files.requests.map((request) => request.path).sort();
    expect(fetched).toEqual([...new Set(fetched)]);
    expect(fetched).toHaveLength(8);
    expect(await library()).toEqual([]);
    expect(storedFiles()).toEqual([]);
    expect(filesIn('tmp')).toEqual([]);
    expect(await countPosts(server.ctx.db, acme.id)).toBe(0);
  });

  it('creates the posts with the downloaded media, once, and importing again downloads nothing', async () => {
    const picture = fileUrl('/images/winter%20poster.png');
    const csv =
      'key,channels,text,time,media\n' +
      `w1,${sandbox},Winter,2026-12-02T09:30:00+01:00,${picture}\n` +
      `w2,${sandbox},Winter again,,${picture}\n`;
    const report = dataOf(await api().POST('/public/v1/posts/import', { body: { csv } }), 201);
    expect(report).toMatchObject({ created: 2, invalid: 0 });
    expect(files.requests).toHaveLength(1);

    const media = await library();
    expect(media).toHaveLength(1);
    expect(media[0]).toMatchObject({ fileName: 'winter poster.png', contentType: 'image/png' });
    for (const row of report.rows) {
      const post = dataOf(await api().GET('/public/v1/posts/{id}', { params: { path: { id: row.postIds[0]! } } }));
      expect(post.mediaIds).toEqual([media[0]!.id]);
    }
    expect(storedFiles()).toHaveLength(1);

    const again = dataOf(await api().POST('/public/v1/posts/import', { body: { csv } }), 201);
    expect(again).toMatchObject({ created: 0, existing: 2 });
    expect(files.requests).toHaveLength(1);
    expect(await library()).toHaveLength(1);
  });

  it('deletes the files it downloaded when it creates nothing, and refuses too many URLs before any download', async () => {
    const before = {
      media: (await library()).length,
      files: storedFiles().length,
      posts: await countPosts(server.ctx.db, acme.id),
    };
    const refusal = refusalOf(
      await importRows([
        { key: 'fine', channels: [sandbox], text: 'Fine', media: [fileUrl('/images/fine.png')] },
        { key: 'long', channels: [bluesky], text: 'Too long for Bluesky', media: [fileUrl('/long.mp4')] },
      ]),
      422,
      'unprocessable',
    );
    expect(refusal.message).toContain('Nothing was imported: 1 row breaks rules');
    expect(refusal.details).toEqual([{ path: 'rows[2].media', message: stringMatching(/3 minutes|180 seconds/) }]);
    expect(files.requests).toHaveLength(2);
    expect((await library()).length).toBe(before.media);
    expect(storedFiles()).toHaveLength(before.files);
    expect(await countPosts(server.ctx.db, acme.id)).toBe(before.posts);

    files.requests.length = 0;
    const many = Array.from({ length: 101 }, (_, n) => ({
      key: `many-${n}`,
      channels: [sandbox],
      text: `Picture ${n}`,
      media: [fileUrl(`/images/${n}.png`)],
    }));
    for (const dryRun of [true, false]) {
      const tooMany = refusalOf(await importRows(many, dryRun), 422, 'unprocessable');
      expect(tooMany.message).toContain('An import downloads at most 100 media files; this one names 101 URLs.');
      expect(tooMany.details).toEqual([{ path: 'rows', message: 'names 101 media URLs' }]);
    }
    expect(files.requests).toEqual([]);
  });

  it('shows a refused import in the web app row by row, downloading each file once', async () => {
    const browser = new BrowserSession(server);
    await browser.logIn(acme.email, acme.password);
    const before = (await library()).length;
    const csv =
      'key,channels,text,media\n' +
      `web-1,${sandbox},A picture,${fileUrl('/images/web.png')}\n` +
      `web-2,${sandbox},Not a picture,${fileUrl('/notes.txt')}\n`;
    const answer = await browser.submit('/posts/import', '/posts/import', { csv, action: 'import' });
    expect(answer.status).toBe(422);
    const page = decodeEntities(await answer.text());
    expect(page).toMatch(/data-import-row="1" data-outcome="valid"/);
    expect(page).toMatch(
      new RegExp(
        `data-import-row="2" data-outcome="invalid">[\\s\\S]*${fileUrl('/notes.txt')}: The file is of an unknown type`,
      ),
    );
    expect(files.requests.map((request) => request.path).sort()).toEqual(['/images/web.png', '/notes.txt']);
    expect(await library()).toHaveLength(before);
  });

  it('downloads for an OAuth token only when it may write media, as an upload from a URL needs', async () => {
    const developer = await createOrganization(server.ctx.db, 'Import App Maker');
    const app = await createOAuthApp(server.ctx.db, developer.id, { redirectUri: 'https://app.example.org/cb' });
    const tokenWith = async (scope: string) =>
      exchange(server, app, await approve(server.ctx.db, app, acme, { scope }));
    const importAs = (token: string, media: string[]) =>
      server.fetch('/public/v1/posts/import?dryRun=true', {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ rows: [{ channels: [sandbox], text: 'Scoped', media }] }),
      });

    const postsOnly = await tokenWith('posts:write');
    const refused = await importAs(postsOnly, [fileUrl('/images/scoped.png')]);
    expect(refused.status).toBe(403);
    expect(refused.headers.get('www-authenticate')).toContain('scope="media:write"');
    expect(files.requests).toEqual([]);
    // Without URLs the same token imports as before.
    expect((await importAs(postsOnly, [])).status).toBe(200);

    const both = await tokenWith('posts:write media:write');
    const checked = await importAs(both, [fileUrl('/images/scoped.png')]);
    expect(checked.status).toBe(200);
    expect(((await checked.json()) as Schemas['ImportReport']).rows[0]).toMatchObject({ outcome: 'valid' });
    expect(files.requests.map((request) => request.path)).toEqual(['/images/scoped.png']);
  });

  it('deletes every file it stored when storing another fails, the downloads under way included', async () => {
    const before = { media: (await library()).length, files: storedFiles().length };
    const storage = server.ctx.storage;
    const put = storage.put.bind(storage);
    let puts = 0;
    storage.put = async (key, body, options) => {
      puts += 1;
      if (puts === 2) throw new Error('the disk is full');
      await put(key, body, options);
    };
    try {
      const answer = await importRows(
        [1, 2, 3, 4, 5, 6].map((n) => ({
          key: `disk-${n}`,
          channels: [sandbox],
          text: `Picture ${n}`,
          media: [fileUrl(`/images/disk-${n}.png`)],
        })),
      );
      expect(refusalOf(answer, 500, 'internal').message).not.toContain('disk');
    } finally {
      storage.put = put;
    }
    expect(puts).toBeGreaterThan(2);
    expect((await library()).length).toBe(before.media);
    expect(storedFiles()).toHaveLength(before.files);
    expect(filesIn('tmp')).toEqual([]);
  });
});
