import { createApiKey } from '../src/accounts/api-keys.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { changeOrganizationTimeZone } from '../src/posts/queue.js';
import { publicApi, type Schemas } from './support/api.js';
import { createChannel, createOrganization, insertPost, type TestOrganization } from './support/fixtures.js';
import { POSTS_TEST_ENV } from './support/posts.js';
import { startTestServer, type TestServer } from './support/server.js';
import { dataOf, refusalOf } from './support/typed-answers.js';

// A Tuesday in Berlin's summer time; the clocks go back on Sunday 2026-10-25.
const NOW = '2026-10-13T10:00:00.000Z';

let server: TestServer;
let acme: TestOrganization;
let globex: TestOrganization;

beforeAll(async () => {
  server = await startTestServer({ env: { ...POSTS_TEST_ENV, DAILY_POST_LIMIT_SANDBOX: '2' } });
  acme = await createOrganization(server.ctx.db, 'Acme');
  globex = await createOrganization(server.ctx.db, 'Globex');
  await changeOrganizationTimeZone(server.ctx, { organizationId: acme.id, role: 'owner' }, 'Europe/Berlin');
});
afterAll(() => server?.close());
beforeEach(() => server.setNow(NOW));

const api = (org: TestOrganization = acme) => publicApi(server, org.auth);
type Slot = Schemas['ScheduleSlot'];
const channel = async (org = acme) => (await createChannel(server.ctx.db, org.id, 'sandbox')).id;
const replace = (id: string, slots: Slot[], org = acme) =>
  api(org).PUT('/public/v1/channels/{id}/schedule', { params: { path: { id } }, body: { slots } });
const queueOf = (id: string, query: { limit?: number; after?: string } = {}) =>
  api().GET('/public/v1/channels/{id}/queue', { params: { path: { id }, query } });
const addToQueue = (channelIds: string[], content = 'From the queue') =>
  api().POST('/public/v1/posts', { body: { type: 'queue', content, channelIds } });
const queued = async (channelId: string, content?: string) =>
  dataOf(await addToQueue([channelId], content), 201).data[0]!;
const getPost = async (id: string) => dataOf(await api().GET('/public/v1/posts/{id}', { params: { path: { id } } }));

describe('a channel’s posting schedule', () => {
  it('stores the slots once each, in order, and answers them with the organization’s zone', async () => {
    const id = await channel();
    const slots: Slot[] = [
      { weekday: 'friday', time: '16:30' },
      { weekday: 'monday', time: '09:00' },
      { weekday: 'friday', time: '16:30' },
    ];
    const stored = dataOf(await replace(id, slots));
    expect(stored).toEqual({
      channelId: id,
      timeZone: 'Europe/Berlin',
      slots: [
        { weekday: 'monday', time: '09:00' },
        { weekday: 'friday', time: '16:30' },
      ],
    });
    expect(dataOf(await api().GET('/public/v1/channels/{id}/schedule', { params: { path: { id } } }))).toEqual(stored);
  });

  it('refuses a time that is no time of day (400) and another organization’s channel (404)', async () => {
    const id = await channel();
    const wrong = refusalOf(await replace(id, [{ weekday: 'monday', time: '24:00' }]), 400, 'validation_failed');
    expect(wrong.details?.[0]?.path).toContain('slots');
    refusalOf(await replace(id, [], globex), 404, 'not_found');
    refusalOf(await api(globex).GET('/public/v1/channels/{id}/queue', { params: { path: { id } } }), 404, 'not_found');
  });
});

describe('POST /public/v1/posts with type: queue', () => {
  it('refuses a channel without slots with the advice where to add them (422), creating nothing', async () => {
    const id = await channel();
    const refusal = refusalOf(await addToQueue([id]), 422, 'unprocessable');
    expect(refusal.details).toEqual([
      { path: 'channelIds[0]', message: expect.stringContaining(`channel ${id} has no posting slots`) as string },
    ]);
    expect(dataOf(await queueOf(id)).data).toEqual([]);
  });

  it('gives each post the next free slot, in local time across the change of daylight saving time', async () => {
    const id = await channel();
    dataOf(await replace(id, [{ weekday: 'monday', time: '09:00' }]));
    const first = await queued(id, 'first');
    const second = await queued(id, 'second');
    // 09:00 in Berlin: 07:00 UTC in summer time (19 October), 08:00 UTC after the clocks went back.
    expect(first).toMatchObject({ status: 'scheduled', queued: true, scheduledAt: '2026-10-19T07:00:00.000Z' });
    expect(second).toMatchObject({ status: 'scheduled', queued: true, scheduledAt: '2026-10-26T08:00:00.000Z' });
    const queue = dataOf(await queueOf(id, { limit: 3 }));
    expect(queue.timeZone).toBe('Europe/Berlin');
    expect(queue.data.map((slot) => [slot.at, slot.post?.content ?? null])).toEqual([
      ['2026-10-19T07:00:00.000Z', 'first'],
      ['2026-10-26T08:00:00.000Z', 'second'],
      ['2026-11-02T08:00:00.000Z', null],
    ]);
    const next = dataOf(await queueOf(id, { limit: 1, after: '2026-10-26T08:00:00.000Z' }));
    expect(next.data.map((slot) => slot.at)).toEqual(['2026-11-02T08:00:00.000Z']);
  });

  it('passes over a day whose daily quota is used up, counting posts scheduled at a chosen time', async () => {
    const id = await channel();
    dataOf(
      await replace(id, [
        { weekday: 'monday', time: '09:00' },
        { weekday: 'monday', time: '10:00' },
      ]),
    );
    await insertPost(server.ctx.db, {
      organizationId: acme.id,
      channelId: id,
      status: 'scheduled',
      scheduledAt: '2026-10-19T12:00:00.000Z',
    });
    const posts = [await queued(id), await queued(id), await queued(id)];
    expect(posts.map((post) => post.scheduledAt)).toEqual([
      '2026-10-19T07:00:00.000Z',
      '2026-10-26T08:00:00.000Z',
      '2026-10-26T09:00:00.000Z',
    ]);
  });
});

describe('changing the queue', () => {
  it('moves queued posts whose slot was removed to the next free slots, never a post given a time', async () => {
    const id = await channel();
    dataOf(
      await replace(id, [
        { weekday: 'monday', time: '09:00' },
        { weekday: 'wednesday', time: '09:00' },
      ]),
    );
    const wednesday = await queued(id, 'wednesday');
    const monday = await queued(id, 'monday');
    const third = await queued(id, 'third');
    expect([wednesday.scheduledAt, monday.scheduledAt, third.scheduledAt]).toEqual([
      '2026-10-14T07:00:00.000Z',
      '2026-10-19T07:00:00.000Z',
      '2026-10-21T07:00:00.000Z',
    ]);
    const chosen = dataOf(
      await api().POST('/public/v1/posts', {
        body: { type: 'schedule', date: '2026-10-19T07:00:00.000Z', content: 'chosen', channelIds: [id] },
      }),
      201,
    ).data[0]!;
    expect(chosen.queued).toBe(false);

    dataOf(await replace(id, [{ weekday: 'wednesday', time: '09:00' }]));
    // The Monday post takes the next free Wednesday after its time: the 21st is the third post's.
    expect((await getPost(monday.id)).scheduledAt).toBe('2026-10-28T08:00:00.000Z');
    expect((await getPost(wednesday.id)).scheduledAt).toBe('2026-10-14T07:00:00.000Z');
    expect((await getPost(third.id)).scheduledAt).toBe('2026-10-21T07:00:00.000Z');
    expect((await getPost(chosen.id)).scheduledAt).toBe('2026-10-19T07:00:00.000Z');
    const history = dataOf(
      await api().GET('/public/v1/posts/{id}/history', { params: { path: { id: monday.id } } }),
    ).data.map((event) => event.type);
    expect(history).toContain('rescheduled');

    // No slot left: the queued posts become drafts rather than waiting forever.
    dataOf(await replace(id, []));
    expect(await getPost(monday.id)).toMatchObject({ status: 'draft', queued: false });
    expect((await getPost(chosen.id)).status).toBe('scheduled');
  });

  it('moves a post to another slot, swapping with the queued post there; a chosen time leaves the queue', async () => {
    const id = await channel();
    dataOf(await replace(id, [{ weekday: 'tuesday', time: '18:00' }]));
    const a = await queued(id, 'a');
    const b = await queued(id, 'b');
    const swapped = dataOf(
      await api().POST('/public/v1/posts/{id}/queue', { params: { path: { id: b.id } }, body: { at: a.scheduledAt! } }),
    );
    expect(swapped).toMatchObject({ scheduledAt: a.scheduledAt, queued: true });
    expect((await getPost(a.id)).scheduledAt).toBe(b.scheduledAt);

    const notASlot = refusalOf(
      await api().POST('/public/v1/posts/{id}/queue', {
        params: { path: { id: a.id } },
        body: { at: '2026-10-20T17:30:00.000Z' },
      }),
      422,
      'unprocessable',
    );
    expect(notASlot.details?.[0]?.path).toBe('at');

    const moved = dataOf(
      await api().POST('/public/v1/posts/{id}/schedule', {
        params: { path: { id: a.id } },
        body: { scheduledAt: '2026-10-30T12:00:00.000Z' },
      }),
    );
    expect(moved.queued).toBe(false);
    // Its former slot is free again, and a draft put in the queue takes it.
    const draft = dataOf(
      await api().POST('/public/v1/posts', { body: { type: 'draft', content: 'later', channelIds: [id] } }),
      201,
    ).data[0]!;
    const placed = dataOf(await api().POST('/public/v1/posts/{id}/queue', { params: { path: { id: draft.id } } }));
    expect(placed).toMatchObject({ status: 'scheduled', queued: true, scheduledAt: b.scheduledAt });
  });

  it('keeps a contributor’s queued post waiting for approval, in its slot or in the one it is moved to', async () => {
    const id = await channel();
    dataOf(await replace(id, [{ weekday: 'wednesday', time: '08:00' }]));
    const { secret } = await createApiKey(server.ctx.db, acme.id, 'Queue contributor', { role: 'contributor' });
    const contributor = publicApi(server, { Authorization: `Bearer ${secret}` });
    const waiting = dataOf(
      await contributor.POST('/public/v1/posts', { body: { type: 'queue', content: 'Mine', channelIds: [id] } }),
      201,
    ).data[0]!;
    expect(waiting).toMatchObject({ status: 'pending_approval', queued: true });
    // Its slot is held: the next post put in the queue takes the week after.
    const next = await queued(id, 'next');
    expect(next.scheduledAt).not.toBe(waiting.scheduledAt);

    // An editor puts another post in its slot: it moves, and still waits for approval (never published unapproved).
    const draft = dataOf(
      await api().POST('/public/v1/posts', { body: { type: 'draft', content: 'urgent', channelIds: [id] } }),
      201,
    ).data[0]!;
    dataOf(
      await api().POST('/public/v1/posts/{id}/queue', {
        params: { path: { id: draft.id } },
        body: { at: waiting.scheduledAt! },
      }),
    );
    const moved = await getPost(waiting.id);
    expect(moved).toMatchObject({ status: 'pending_approval', queued: true });
    expect(moved.scheduledAt).not.toBe(waiting.scheduledAt);

    // Approved where it waits, it keeps its slot; rejected, it leaves the queue.
    const approved = dataOf(
      await api().POST('/public/v1/posts/{id}/approve', { params: { path: { id: waiting.id } }, body: {} }),
    );
    expect(approved).toMatchObject({ status: 'scheduled', queued: true, scheduledAt: moved.scheduledAt });
  });

  it('keeps queued posts at their local time when the organization’s time zone changes', async () => {
    const org = await createOrganization(server.ctx.db, 'Zones');
    const id = (await createChannel(server.ctx.db, org.id, 'sandbox')).id;
    dataOf(await replace(id, [{ weekday: 'monday', time: '09:00' }], org));
    const post = dataOf(
      await api(org).POST('/public/v1/posts', { body: { type: 'queue', content: 'x', channelIds: [id] } }),
      201,
    ).data[0]!;
    expect(post.scheduledAt).toBe('2026-10-19T09:00:00.000Z');
    await changeOrganizationTimeZone(server.ctx, { organizationId: org.id, role: 'admin' }, 'America/New_York');
    const after = dataOf(await api(org).GET('/public/v1/posts/{id}', { params: { path: { id: post.id } } }));
    expect(after.scheduledAt).toBe('2026-10-19T13:00:00.000Z');
  });
});
