import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createApiKey } from '../src/accounts/api-keys.js';
import { planSeries } from '../src/recurring/planning.js';
import { BrowserSession, decodeEntities, inputValue } from './support/browser-session.js';
import { publicApi, type Schemas } from './support/api.js';
import { eventually } from './support/eventually.js';
import { startFakeNetwork, type FakeNetwork } from './support/fake-network.js';
import { createChannel, createOrganization, insertPost, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';
import { scaled } from './support/timeouts.js';
import { dataOf, refusalOf } from './support/typed-answers.js';

// Recurring series through the Public API, with the worker publishing to a fake sandbox network so
// that the downtime case counts what actually went out. The clock is held still and moved.
let network: FakeNetwork;
let server: TestServer;
let acme: TestOrganization;
let globex: TestOrganization;

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
// A Monday, 09:00 in Berlin (CET, UTC+1).
const NOW = '2027-03-15T07:30:00.000Z';

beforeAll(async () => {
  network = await startFakeNetwork();
  server = await startTestServer({
    worker: true,
    env: {
      SANDBOX_NETWORK_URL: network.url,
      RATE_LIMIT_MAX: '100000',
      DAILY_POST_LIMIT_SANDBOX: '2',
      RECURRING_HORIZON_DAYS: '14',
      RECURRING_GRACE_MINUTES: '30',
    },
  });
  acme = await createOrganization(server.ctx.db, 'Acme');
  globex = await createOrganization(server.ctx.db, 'Globex');
});
afterAll(async () => {
  await server?.close();
  await network?.close();
});
beforeEach(() => server.setNow(new Date(NOW)));

type Post = Schemas['Post'];
const api = (org = acme) => publicApi(server, org.auth);
const byId = (id: string) => ({ params: { path: { id } } });

async function channel(name: string, org = acme): Promise<string> {
  return (await createChannel(server.ctx.db, org.id, 'sandbox', name)).id;
}

function createSeries(body: Schemas['CreateSeriesRequest'], org = acme) {
  return api(org).POST('/public/v1/series', { body });
}

/** The posts of a series, by occurrence. */
async function occurrences(seriesId: string): Promise<Post[]> {
  const rows = await server.ctx.db
    .selectFrom('posts')
    .select('id')
    .where('series_id', '=', seriesId)
    .orderBy('occurrence_at')
    .execute();
  return Promise.all(rows.map(async ({ id }) => dataOf(await api().GET('/public/v1/posts/{id}', byId(id)))));
}

async function history(id: string): Promise<Schemas['PostEvent'][]> {
  const page = await api().GET('/public/v1/posts/{id}/history', { params: { path: { id }, query: { limit: 100 } } });
  return dataOf(page).data;
}

describe('POST /public/v1/series', () => {
  it(
    'creates the occurrences within the horizon as posts, at the same local time across a change to summer time',
    async () => {
      const sandbox = await channel('Weekly');
      const series = dataOf(
        await createSeries({
          rule: 'RRULE:FREQ=WEEKLY;BYDAY=MO',
          timeZone: 'Europe/Berlin',
          startsAt: '2027-03-22T08:00:00.000Z',
          posts: [{ channelId: sandbox, content: 'Monday tip' }],
        }),
        201,
      );
      expect(series).toMatchObject({
        id: expect.stringMatching(/^ser_/) as string,
        rule: 'FREQ=WEEKLY;BYDAY=MO',
        timeZone: 'Europe/Berlin',
        summary: 'every week on Monday',
        endsAt: null,
        splitFrom: null,
        posts: [{ channelId: sandbox, content: 'Monday tip' }],
      });
      // 9:00 in Berlin: 08:00Z in winter, 07:00Z from 28 March 2027 on (CEST).
      expect(series.nextOccurrences).toEqual([
        '2027-03-22T08:00:00.000Z',
        '2027-03-29T07:00:00.000Z',
        '2027-04-05T07:00:00.000Z',
        '2027-04-12T07:00:00.000Z',
        '2027-04-19T07:00:00.000Z',
      ]);
      // The horizon is 14 days from now (15 March): the occurrences of 22 and 29 March exist.
      const posts = await occurrences(series.id);
      expect(posts.map((post) => [post.status, post.scheduledAt, post.series])).toEqual([
        ['scheduled', '2027-03-22T08:00:00.000Z', { id: series.id, occurrenceAt: '2027-03-22T08:00:00.000Z' }],
        ['scheduled', '2027-03-29T07:00:00.000Z', { id: series.id, occurrenceAt: '2027-03-29T07:00:00.000Z' }],
      ]);
      expect((await history(posts[0]!.id)).map((event) => event.type)).toEqual(['created', 'scheduled']);
      expect(dataOf(await api().GET('/public/v1/series/{id}', byId(series.id)))).toEqual(series);

      // The planning job, a week later, adds the next week's occurrence and nothing twice. (The
      // service's reading moves alone: the queue keeps the machine's time, months before these posts.)
      server.setNow(new Date(new Date(NOW).getTime() + 7 * DAY));
      await planSeries(server.ctx, series.id);
      await planSeries(server.ctx, series.id);
      expect((await occurrences(series.id)).map((post) => post.scheduledAt)).toEqual([
        '2027-03-22T08:00:00.000Z',
        '2027-03-29T07:00:00.000Z',
        '2027-04-05T07:00:00.000Z',
      ]);
      dataOf(await api().POST('/public/v1/series/{id}/end', byId(series.id)));
    },
    scaled(90_000),
  );

  it('refuses a rule, a zone, a start or posts that are not valid, with every problem named', async () => {
    const sandbox = await channel('Refusals');
    const body = {
      rule: 'FREQ=WEEKLY',
      timeZone: 'Europe/Berlin',
      startsAt: '2027-03-16T08:00:00.000Z',
      posts: [{ channelId: sandbox, content: 'Tip' }],
    };
    const cases: [Partial<Schemas['CreateSeriesRequest']>, string, RegExp][] = [
      [{ rule: 'FREQ=SOMETIMES' }, 'rule', /FREQ must be YEARLY/],
      [{ rule: 'FREQ=DAILY;INTERVAL=often' }, 'rule', /./],
      [{ rule: 'FREQ=MINUTELY' }, 'rule', /HOURLY at the most frequent/],
      [{ rule: 'DTSTART:20270316T080000Z\nRRULE:FREQ=DAILY' }, 'rule', /without DTSTART/],
      [{ rule: 'BYDAY=MO' }, 'rule', /FREQ is missing/],
      [{ timeZone: 'Mars/Olympus_Mons' }, 'timeZone', /IANA/],
      [{ startsAt: '2027-03-14T08:00:00.000Z' }, 'startsAt', /in the past/],
      [{ endsAt: '2027-03-16T08:00:00.000Z' }, 'endsAt', /not after startsAt/],
      [{ posts: [{ channelId: await channel('Theirs', globex), content: 'Tip' }] }, 'posts[0].channelId', /./],
    ];
    for (const [change, path, message] of cases) {
      const refusal = refusalOf(await createSeries({ ...body, ...change }), 422, 'unprocessable');
      expect(refusal.details, JSON.stringify(change)).toContainEqual({
        path,
        message: expect.stringMatching(message) as string,
      });
    }
    expect(
      await server.ctx.db.selectFrom('post_series').select('id').where('organization_id', '=', acme.id).execute(),
    ).toHaveLength(1);

    // Creating a series schedules posts: a contributor may not.
    const { secret } = await createApiKey(server.ctx.db, acme.id, 'contributor', { role: 'contributor' });
    const contributor = publicApi(server, { Authorization: `Bearer ${secret}` });
    refusalOf(await contributor.POST('/public/v1/series', { body }), 403, 'forbidden');
    // Another organization's series is unknown.
    refusalOf(await api(globex).GET('/public/v1/series/{id}', byId('ser_unknown')), 404, 'not_found');
  });
});

describe('one occurrence, and the series from an occurrence on', () => {
  it('skips an occurrence for good, and refuses to skip a post of no series', async () => {
    const sandbox = await channel('Skips');
    const series = dataOf(
      await createSeries({
        rule: 'FREQ=DAILY',
        timeZone: 'UTC',
        startsAt: '2027-03-16T09:00:00.000Z',
        posts: [{ channelId: sandbox, content: 'Daily' }],
      }),
      201,
    );
    const [first] = await occurrences(series.id);
    const skipped = dataOf(await api().POST('/public/v1/posts/{id}/skip', byId(first!.id)));
    expect(skipped).toMatchObject({ id: first!.id, status: 'skipped' });
    expect(dataOf(await api().POST('/public/v1/posts/{id}/skip', byId(first!.id))).status).toBe('skipped');
    expect((await history(first!.id)).map((event) => [event.type, event.reason])).toEqual([
      ['created', undefined],
      ['scheduled', undefined],
      ['skipped', 'skipped by a person'],
    ]);
    // A skipped occurrence cannot be scheduled again, and planning never makes it again.
    refusalOf(
      await api().PATCH('/public/v1/posts/{id}/status', { ...byId(first!.id), body: { status: 'scheduled' } }),
      409,
      'conflict',
    );
    await server.ctx.db
      .updateTable('post_series')
      .set({ planned_until: new Date(NOW) })
      .where('id', '=', series.id)
      .execute();
    await planSeries(server.ctx, series.id);
    const all = await occurrences(series.id);
    expect(all.filter((post) => post.series?.occurrenceAt === first!.scheduledAt)).toHaveLength(1);

    const lone = await insertPost(server.ctx.db, {
      organizationId: acme.id,
      channelId: sandbox,
      status: 'scheduled',
      scheduledAt: '2027-03-20T09:00:00.000Z',
    });
    const refusal = refusalOf(await api().POST('/public/v1/posts/{id}/skip', byId(lone)), 409, 'conflict');
    expect(refusal.message).toMatch(/no occurrence of a series/);
    refusalOf(await api(globex).POST('/public/v1/posts/{id}/skip', byId(first!.id)), 404, 'not_found');
    dataOf(await api().POST('/public/v1/series/{id}/end', byId(series.id)));
  });

  it('changes the series from an occurrence on, keeping what was published, and ends it', async () => {
    const sandbox = await channel('Splits');
    const series = dataOf(
      await createSeries({
        rule: 'FREQ=DAILY',
        timeZone: 'UTC',
        startsAt: '2027-03-15T09:00:00.000Z',
        posts: [{ channelId: sandbox, content: 'Old text' }],
      }),
      201,
    );
    const before = await occurrences(series.id);
    expect(before).toHaveLength(14);
    // The first occurrence was published (as the worker would have), and so was the fourth, which a person
    // had moved earlier: the series changed from the fourth on never makes it again.
    await server.ctx.db
      .updateTable('posts')
      .set({ status: 'published' })
      .where('id', 'in', [before[0]!.id, before[3]!.id])
      .execute();

    const next = dataOf(
      await api().POST('/public/v1/series/{id}/split', {
        ...byId(series.id),
        body: {
          from: '2027-03-18T09:00:00.000Z',
          rule: 'FREQ=WEEKLY',
          posts: [{ channelId: sandbox, content: 'New text' }],
        },
      }),
      201,
    );
    expect(next).toMatchObject({ splitFrom: series.id, startsAt: '2027-03-18T09:00:00.000Z', rule: 'FREQ=WEEKLY' });
    const old = await occurrences(series.id);
    expect(old.map((post) => [post.scheduledAt, post.status, post.content])).toEqual([
      ['2027-03-15T09:00:00.000Z', 'published', 'Old text'],
      ['2027-03-16T09:00:00.000Z', 'scheduled', 'Old text'],
      ['2027-03-17T09:00:00.000Z', 'scheduled', 'Old text'],
      ['2027-03-18T09:00:00.000Z', 'published', 'Old text'],
    ]);
    expect(dataOf(await api().GET('/public/v1/series/{id}', byId(series.id))).endsAt).toBe('2027-03-18T09:00:00.000Z');
    expect((await occurrences(next.id)).map((post) => [post.scheduledAt, post.content])).toEqual([
      ['2027-03-25T09:00:00.000Z', 'New text'],
    ]);
    refusalOf(
      await api().POST('/public/v1/series/{id}/split', {
        ...byId(series.id),
        body: { from: '2027-03-20T09:00:00.000Z' },
      }),
      409,
      'conflict',
    );

    const ended = dataOf(await api().POST('/public/v1/series/{id}/end', byId(next.id)));
    expect(ended).toMatchObject({ endsAt: NOW, nextOccurrences: [] });
    expect(await occurrences(next.id)).toEqual([]);
  });

  it('skips an occurrence the daily quota has no room for, saying why', async () => {
    const sandbox = await channel('Full');
    for (const hour of ['10', '11'])
      await insertPost(server.ctx.db, {
        organizationId: acme.id,
        channelId: sandbox,
        status: 'scheduled',
        scheduledAt: `2027-03-16T${hour}:00:00.000Z`,
      });
    const series = dataOf(
      await createSeries({
        rule: 'FREQ=DAILY;COUNT=2',
        timeZone: 'UTC',
        startsAt: '2027-03-16T09:00:00.000Z',
        posts: [{ channelId: sandbox, content: 'Daily' }],
      }),
      201,
    );
    const [full, free] = await occurrences(series.id);
    expect([full!.status, free!.status]).toEqual(['skipped', 'scheduled']);
    expect((await history(full!.id)).at(-1)).toMatchObject({
      type: 'skipped',
      reason: expect.stringMatching(/daily quota/) as string,
    });
  });
});

describe('after downtime', () => {
  it(
    'publishes no burst: the occurrences missed by more than the grace period are skipped with their reason',
    async () => {
      const sandbox = await channel('Downtime');
      // On the machine's time, which the job queue keeps: the occurrences' jobs fall due as the clock moves.
      server.setNow(undefined);
      const start = server.clock.now();
      server.setNow(start);
      const series = dataOf(
        await createSeries({
          rule: 'FREQ=DAILY',
          timeZone: 'UTC',
          startsAt: new Date(start.getTime() + HOUR).toISOString(),
          posts: [{ channelId: sandbox, content: 'Every day' }],
        }),
        201,
      );
      const posts = await occurrences(series.id);
      // The server was down from before the first occurrence until 10 minutes after the fifth's time:
      // every job of the five falls due at once when the clock moves.
      await server.clock.advance(4 * DAY + HOUR + 10 * 60_000);
      const fifth = posts[4]!;
      await eventually(
        async () => {
          const rows = await server.ctx.db
            .selectFrom('posts')
            .select(['id', 'status'])
            .where(
              'id',
              'in',
              posts.slice(0, 5).map((post) => post.id),
            )
            .execute();
          expect(
            rows.filter((row) => row.status === 'skipped'),
            JSON.stringify(rows),
          ).toHaveLength(4);
          expect(rows.find((row) => row.id === fifth.id)?.status).toBe('published');
        },
        { timeout: scaled(20_000), interval: 200 },
      );
      for (const post of posts.slice(0, 4)) {
        expect(network.publicationsOf(post.id), post.id).toBe(0);
        expect((await history(post.id)).map((event) => [event.type, event.reason])).toEqual([
          ['created', undefined],
          ['scheduled', undefined],
          ['skipped', expect.stringMatching(/^missed: due at .* more than 30 minutes before/) as string],
        ]);
      }
      expect(network.publicationsOf(fifth.id)).toBe(1);
      // The occurrences still ahead wait for their time.
      expect((await occurrences(series.id)).slice(5).every((post) => post.status === 'scheduled')).toBe(true);
      dataOf(await api().POST('/public/v1/series/{id}/end', byId(series.id)));
    },
    scaled(60_000),
  );
});

describe("the series' page", () => {
  it('lists the occurrences with their status, refuses a change from no occurrence, and is 404 to another organization', async () => {
    const sandbox = await channel('Page');
    const series = dataOf(
      await createSeries({
        rule: 'FREQ=WEEKLY;BYDAY=MO',
        timeZone: 'Europe/Berlin',
        startsAt: '2027-03-22T08:00:00.000Z',
        posts: [{ channelId: sandbox, content: 'Monday note' }],
      }),
      201,
    );
    const [first] = await occurrences(series.id);
    const browser = new BrowserSession(server);
    await browser.logIn(acme.email, acme.password);
    const page = decodeEntities(await (await browser.get(`/series/${series.id}?tz=Europe/Berlin`)).text());
    expect(page).toContain('Series: every week on Monday');
    expect(page).toContain(`data-occurrence="${first!.id}"`);
    // Two Mondays within the horizon of 14 days, at 9:00 in Berlin.
    expect(page.match(/data-occurrence="/g)).toHaveLength(2);
    // The occurrences to change from, in the reader's zone: 9:00 on both sides of the change to summer time.
    expect(page).toContain('<option value="2027-03-22T08:00:00.000Z" selected>2027-03-22 09:00 GMT+1</option>');
    expect(page).toContain('<option value="2027-03-29T07:00:00.000Z">2027-03-29 09:00 GMT+2</option>');

    const refused = await browser.submit(`/series/${series.id}`, `/series/${series.id}/split`, {
      from: 'not a time',
      repeat: '',
    });
    expect(refused.status).toBe(422);
    expect(decodeEntities(await refused.text())).toContain(
      'The series could not be changed: From: is not an occurrence',
    );

    const other = new BrowserSession(server);
    await other.logIn(globex.email, globex.password);
    expect((await other.get(`/series/${series.id}`)).status).toBe(404);
    dataOf(await api().POST('/public/v1/series/{id}/end', byId(series.id)));
  });
});

describe("the composer's Repeat", () => {
  it('makes one series of a form sent twice, and repeats a date some months lack on their last day', async () => {
    const sandbox = await channel('Composer');
    const browser = new BrowserSession(server);
    await browser.logIn(acme.email, acme.password);
    const html = await (await browser.get('/compose?tz=UTC')).text();
    const form = new URLSearchParams({
      csrf_token: inputValue(html, 'csrf_token')!,
      idempotency_key: inputValue(html, 'idempotency_key')!,
      channel: sandbox,
      content: 'End of the month report',
      date: '2027-03-31',
      time: '17:00',
      action: 'schedule',
      repeat: 'monthly',
    });
    const send = () =>
      browser.request('/compose', {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: form.toString(),
      });
    const first = await send();
    const again = await send();
    expect(first.status, await first.clone().text()).toBe(303);
    expect(again.headers.get('location')).toBe(first.headers.get('location'));
    const seriesId = /^\/series\/(ser_\w+)\?created=1$/.exec(first.headers.get('location')!)![1]!;
    const made = await server.ctx.db
      .selectFrom('post_series')
      .select('id')
      .where('organization_id', '=', acme.id)
      .where('rule', 'like', 'FREQ=MONTHLY%')
      .execute();
    expect(made.map((row) => row.id)).toEqual([seriesId]);
    const series = dataOf(await api().GET('/public/v1/series/{id}', byId(seriesId)));
    expect(series.summary).toBe('every month on the 31st, or the last day of a shorter month');
    expect(series.nextOccurrences.slice(0, 3)).toEqual([
      '2027-03-31T17:00:00.000Z',
      '2027-04-30T17:00:00.000Z',
      '2027-05-31T17:00:00.000Z',
    ]);
    dataOf(await api().POST('/public/v1/series/{id}/end', byId(seriesId)));
  });
});
