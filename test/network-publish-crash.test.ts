import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addReturnOrigin } from '../src/channels/return-origins.js';
import { publicApi, type Schemas } from './support/api.js';
import { BrowserSession, inputValue } from './support/browser-session.js';
import { TEST_DATABASE_URL } from './support/database.js';
import { eventually } from './support/eventually.js';
import { startFakeLinkedIn, type FakeLinkedIn } from './support/fake-linkedin.js';
import { pinterestEnv, startFakePinterest, type FakePinterest } from './support/fake-pinterest.js';
import { jpeg } from './support/media-samples.js';
import { connectAtOnce, recordedStep, uploadImage } from './support/crash-drill.js';
import { startPublishingRig, type PublishingRig } from './support/publishing-rig.js';
import { scaled } from './support/timeouts.js';
import { dataOf } from './support/typed-answers.js';

// LinkedIn's and Pinterest's irreversible calls sent by a worker process of the build that is killed with
// SIGKILL while the network holds the answer back, on PostgreSQL (the embedded database belongs to one
// process), against the fake LinkedIn and the fake Pinterest, each told to hold the answer to the call
// once it has done the work: the company page's post (with a first comment), the member's post and the
// pin are made, and the worker dies before it recorded them. The worker that takes over looks where the
// adapters look after a lost answer (the page's newest posts by commentary and media; the board's newest
// pins by description and the rest), records what it finds and goes on: one post on the page and its
// first comment once (made by the second worker, killed the same way before LinkedIn's answer, and found
// by the third among the post's comments), one pin, never sent again, the posts recording the networks'
// ids and URLs. The member's post cannot be looked up (LinkedIn lets an app read a member's posts only with
// r_member_social, which it grants few apps): it is made once and left `outcome_unknown`, never sent again.
const onPostgres = describe.skipIf(!TEST_DATABASE_URL);

const WORKER_ENV = { PUBLISH_LEASE_SECONDS: '5', PUBLISH_RETRY_BASE_MS: '500' };
const RETURN_URL = 'https://app.example.org/connected';
const BAKERY = 'urn:li:organization:2414183';

const PAGE = { content: 'Fresh (rye) loaves at #acme today', comment: 'Order at acme.example' };
const MEMBER = 'Proud of the team at Acme Bakery';
const PIN = { content: 'Rye sourdough, the recipe', title: 'Rye sourdough' };

type Post = Schemas['Post'];

/** LinkedIn's consent, then the server's choice page with the member and the company page chosen. */
async function connectLinkedIn(rig: PublishingRig, linkedin: FakeLinkedIn): Promise<{ member: string; page: string }> {
  const api = publicApi(rig.api, rig.org.auth);
  const { authorizationUrl } = dataOf(
    await api.POST('/public/v1/channels/connect', { body: { provider: 'linkedin', returnUrl: RETURN_URL } }),
  );
  const consent = await fetch(authorizationUrl, { redirect: 'manual' });
  const back = new URL(consent.headers.get('location')!);
  const browser = new BrowserSession(rig.api);
  const choice = new URL((await browser.get(back.pathname + back.search)).headers.get('location')!);
  const html = await (await browser.get(choice.pathname + choice.search)).text();
  const own = html.slice(html.indexOf('action="/channels/choose/'));
  const form = new URLSearchParams({ csrf_token: inputValue(own, 'csrf_token')!, state: inputValue(own, 'state')! });
  for (const account of [`linkedin:urn:li:person:${linkedin.member.sub}`, `linkedin:${BAKERY}`])
    form.append('account', account);
  const chosen = await browser.request('/channels/choose/linkedin', {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: form.toString(),
  });
  expect(chosen.status).toBe(303);
  const channels = dataOf(await api.GET('/public/v1/channels')).data.filter((c) => c.provider === 'linkedin');
  expect(channels).toHaveLength(2);
  return {
    member: channels.find((c) => c.username === null)!.id,
    page: channels.find((c) => c.username === 'acme-bakery')!.id,
  };
}

onPostgres('LinkedIn’s and Pinterest’s irreversible calls sent by a worker process killed before their answers', () => {
  let linkedin: FakeLinkedIn;
  let pinterest: FakePinterest;
  beforeAll(async () => {
    linkedin = await startFakeLinkedIn({
      organizations: [{ id: 2414183, localizedName: 'Acme Bakery', vanityName: 'acme-bakery', role: 'ADMINISTRATOR' }],
    });
    pinterest = await startFakePinterest({ account: { username: 'acmebakery', businessName: 'Acme Bakery' } });
    pinterest.addBoard({ name: 'Breads' });
  });
  afterAll(async () => {
    await linkedin?.close();
    await pinterest?.close();
  });

  it(
    'a kill -9 after a page’s post, a member’s post or a pin was made: the post, its first comment and the pin looked up and recorded, each made once',
    { timeout: scaled(180_000) },
    async () => {
      const env = {
        LINKEDIN_CLIENT_ID: linkedin.clientId,
        LINKEDIN_CLIENT_SECRET: linkedin.clientSecret,
        LINKEDIN_COMMUNITY_MANAGEMENT: 'true',
        LINKEDIN_API_URL: linkedin.url,
        LINKEDIN_AUTH_URL: linkedin.url,
        ...pinterestEnv(pinterest),
        // The fake Pinterest fetches the image from this server's loopback URL, as an operator says Pinterest can.
        MEDIA_URLS_PUBLIC: 'true',
      };
      const rig = await startPublishingRig({ channels: 0, apiEnv: env, workerEnv: { ...WORKER_ENV, ...env } });
      try {
        await addReturnOrigin(rig.api.ctx.db, rig.org.id, new URL(RETURN_URL).origin);
        const linkedinChannels = await connectLinkedIn(rig, linkedin);
        const pinterestChannel = await connectAtOnce(rig, 'pinterest', RETURN_URL);
        const image = await uploadImage(rig, 'rye.jpg', jpeg());
        const board = pinterest.boards.find((b) => b.name === 'Breads')!;
        const api = publicApi(rig.api, rig.org.auth);
        const created = await api.POST('/public/v1/posts', {
          body: {
            type: 'now',
            posts: [
              { channelId: linkedinChannels.page, content: PAGE.content, firstComment: { content: PAGE.comment } },
              { channelId: linkedinChannels.member, content: MEMBER },
              {
                channelId: pinterestChannel,
                content: PIN.content,
                mediaIds: [image],
                settings: { __type: 'pinterest', boardId: board.id, title: PIN.title },
              },
            ],
          },
        });
        const [pageId, memberId, pinId] = dataOf(created, 201).data.map((post) => post.id) as [string, string, string];
        const ids = [pageId, memberId, pinId];

        // The kill: LinkedIn made both posts and Pinterest the pin, each holding its answer back, the worker
        // waiting for them.
        linkedin.holdNextAnswer('createPost');
        linkedin.holdNextAnswer('createPost');
        pinterest.holdNextAnswer('createPin');
        const first = await rig.startWorker();
        await eventually(
          () => {
            expect(linkedin.heldAnswers(), 'answers LinkedIn holds').toBe(2);
            expect(pinterest.heldAnswers(), 'answers Pinterest holds').toBe(1);
          },
          { timeout: scaled(60_000), interval: 20 },
        );
        await first.kill();
        await eventually(() => expect(linkedin.heldAnswers() + pinterest.heldAnswers()).toBe(0));
        // Made on the networks, and not recorded: each post stands at its irreversible step.
        expect(linkedin.posts.map((p) => linkedin.shownText(p)).sort()).toEqual([MEMBER, PAGE.content].sort());
        expect(pinterest.pins.map((p) => p.description)).toEqual([PIN.content]);
        const atKill = await rig.api.ctx.db
          .selectFrom('posts')
          .select(['id', 'status', 'release_id'])
          .where('id', 'in', ids)
          .execute();
        expect(atKill.map((r) => ({ status: r.status, releaseId: r.release_id }))).toEqual(
          ids.map(() => ({ status: 'publishing', releaseId: null })),
        );
        expect(await recordedStep(rig, pageId)).toEqual({ part: 0, step: 'post', irreversible: true });
        expect(await recordedStep(rig, memberId)).toEqual({ part: 0, step: 'post', irreversible: true });
        expect(await recordedStep(rig, pinId)).toEqual({ part: 0, step: 'pin', irreversible: true });

        // The second kill: the next worker looked them up and went on; the page's first comment is made and
        // its answer held. The pin and the member's post are settled first, so that the kill leaves them alone.
        linkedin.holdNextAnswer('createComment');
        const second = await rig.startWorker();
        const settledFirst = await eventually(
          async () => {
            const rows = await rig.api.ctx.db
              .selectFrom('posts')
              .select(['id', 'status', 'error_code'])
              .where('id', 'in', [pinId, memberId])
              .execute();
            if (rows.some((r) => r.id === pinId && r.status === 'failed')) return rows;
            expect(linkedin.heldAnswers(), 'first comments whose answers LinkedIn holds').toBe(1);
            expect(rows.map((r) => r.status).sort()).toEqual(['failed', 'published']);
            return rows;
          },
          { timeout: scaled(90_000), interval: 50 },
        );
        await second.kill();
        expect(settledFirst.find((r) => r.id === pinId)?.status, 'the pin after the first kill').toBe('published');
        expect(linkedin.comments.map((c) => c.text)).toEqual([PAGE.comment]);
        expect(await recordedStep(rig, pageId)).toEqual({ part: 1, step: 'comment', irreversible: true });

        // A third worker finds the comment among the post's and records it.
        await rig.startWorker();
        expect(await rig.untilSettled(scaled(90_000))).toEqual({ published: 2, 'failed/outcome_unknown': 1 });
        const posts = new Map<string, Post>();
        for (const id of ids)
          posts.set(id, dataOf(await api.GET('/public/v1/posts/{id}', { params: { path: { id } } })));

        // LinkedIn: one post on the page, at its URN, and one first comment on it.
        const pagePosts = linkedin.posts.filter((p) => p.author === BAKERY);
        expect(
          pagePosts.map((p) => linkedin.shownText(p)),
          'the page’s posts',
        ).toEqual([PAGE.content]);
        const pagePost = pagePosts[0]!;
        const comments = linkedin.comments.filter((c) => c.object === pagePost.id);
        expect(
          comments.map((c) => ({ actor: c.actor, text: c.text })),
          'comments on the page’s post',
        ).toEqual([{ actor: BAKERY, text: PAGE.comment }]);
        expect(linkedin.comments, 'comments on LinkedIn').toHaveLength(1);
        expect(posts.get(pageId)).toMatchObject({
          status: 'published',
          releaseId: pagePost.id,
          releaseUrl: `https://www.linkedin.com/feed/update/${pagePost.id}/`,
          firstComment: { content: PAGE.comment, releaseId: comments[0]!.commentUrn },
        });

        // The member's post: made once, never sent again, its outcome unknown as LinkedIn lets it not be read.
        const memberPosts = linkedin.posts.filter((p) => p.author !== BAKERY);
        expect(
          memberPosts.map((p) => linkedin.shownText(p)),
          'the member’s posts',
        ).toEqual([MEMBER]);
        expect(posts.get(memberId)).toMatchObject({
          status: 'failed',
          releaseId: null,
          error: { code: 'outcome_unknown' },
        });
        expect(
          linkedin.requests.filter((r) => r.operation === 'createPost'),
          'POST /rest/posts calls',
        ).toHaveLength(2);

        // Pinterest: one pin on the board, at its id and URL.
        const [pin, ...morePins] = pinterest.pins;
        expect(morePins, 'more pins than the post’s').toEqual([]);
        expect(pin).toMatchObject({ boardId: board.id, title: PIN.title, description: PIN.content });
        expect(
          pinterest.requests.filter((r) => r.operation === 'createPin'),
          'POST /v5/pins calls',
        ).toHaveLength(1);
        expect(posts.get(pinId)).toMatchObject({
          status: 'published',
          releaseId: pin!.id,
          releaseUrl: `https://www.pinterest.com/pin/${pin!.id}/`,
        });

        console.log(
          `LinkedIn and Pinterest crash drill: ${linkedin.requests.filter((r) => r.operation === 'findPosts').length} ` +
            `reads of LinkedIn posts, ${linkedin.requests.filter((r) => r.operation === 'getComments').length} of ` +
            `comments, ${pinterest.requests.filter((r) => r.operation === 'listBoardPins').length} of the board's pins`,
        );
      } finally {
        await rig.close();
      }
    },
  );
});
