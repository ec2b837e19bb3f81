import type { Clock } from '../../core/clock.js';
import { graphErrorOf, publishErrorOf, type GraphAnswer, type GraphApi } from '../meta/graph.js';
import type { SettingsOf } from '../provider-adapter.js';
import {
  PermanentPublishError,
  TransientPublishError,
  type Lookup,
  type Outcome,
  type Progress,
  type PublicationInput,
  type PublishingAdapter,
  type StepResult,
} from '../publishing-contract.js';
import type { InstagramAccount, InstagramAccounts, InstagramApiKind } from './accounts.js';
import { carouselContainer, carouselItem, shapeOf, singleContainer } from './containers.js';

/**
 * Where a publication stands, carried from step to step: the containers made so far and what the
 * media is looked up by once `media_publish` was sent.
 */
interface InstagramReference extends Record<string, unknown> {
  /** A carousel's item containers made so far, in the order of the post's media. */
  items: string[];
  /** The container that is published: the post's own (an image, a reel, a story) or the carousel. */
  container?: string;
  /** When the containers being polled were made: polls are spaced by how long Instagram has had them. */
  madeAt?: string;
  /** When `media_publish` (or the comment) was sent: a lost answer is looked up among what was made since. */
  sentAt?: string;
}

interface StatusAnswer {
  status_code?: string;
  status?: string;
}

interface MediaAnswer {
  id?: string;
  caption?: string;
  timestamp?: string;
  permalink?: string;
}

interface CommentAnswer {
  id?: string;
  text?: string;
  timestamp?: string;
  from?: { id?: string };
}

interface LimitAnswer {
  data?: { quota_usage?: number; config?: { quota_total?: number; quota_duration?: number } }[];
}

/** Meta's advice is to poll a container's status about once a minute; the first polls come sooner. */
const POLL_MIN_SECONDS = 5;
const POLL_MAX_SECONDS = 60;
/** When the publishing limit is reached and the account's media do not say when it frees: ask again in an hour. */
const LIMIT_RECHECK_SECONDS = 3600;
/** How far before the recorded time of sending a lost publication's media may be timestamped (clocks differ). */
const LOOKUP_SLACK_MS = 5 * 60_000;
/** How many of the account's newest media or a media's newest comments are read to find a lost answer's. */
const LOOKUP_LIMIT = 25;
// Meta's codes for the publishing limit reached (9/2207042) and an expired container (2207020).
const PUBLISHING_LIMIT_SUBCODE = 2207042;
const CONTAINER_EXPIRED_SUBCODE = 2207020;

/**
 * Publishing to an Instagram professional account (Instagram Platform, "Content Publishing"), through
 * either of Meta's APIs: graph.facebook.com with the linked Page's token (Facebook Login), or
 * graph.instagram.com with the account's own (Instagram Login); both take the same requests.
 *
 * Instagram takes media by URL and fetches it itself, into a container: `POST /{ig-user-id}/media`
 * makes one for an image, a reel or a story, or one per item of a carousel (`is_carousel_item`) and
 * then the carousel's (`CAROUSEL` with `children`); each creation is a step of its own. Instagram
 * processes a container after answering: its `status_code` is polled as a job of the queue until it
 * is `FINISHED` (`ERROR`: the post fails with Instagram's `status`; `EXPIRED`, a day after it was made:
 * nothing was published, so the attempt starts over with new containers). Before the containers are
 * made and again before publishing, the account's publishing limit (`content_publishing_limit`, 50 a
 * moving day) is read: a post over it waits, as a job of the queue, until a publication of the day
 * ages out. `POST
 * /{ig-user-id}/media_publish` is the irreversible point; the permalink of the media it made is the
 * post's `releaseUrl`. A first comment is `POST /{ig-media-id}/comments`, a publication of its own.
 */
export class InstagramAdapter implements PublishingAdapter {
  // One at a time per account: each publication counts against a limit shared by every app of the account.
  readonly limits = { concurrencyPerChannel: 1 };

  constructor(
    private readonly apis: { [K in InstagramApiKind]?: GraphApi },
    private readonly accounts: InstagramAccounts,
    private readonly clock: Clock,
  ) {}

  start(input: PublicationInput): Progress {
    const reference: InstagramReference = { items: [] };
    // A comment's lost answer is looked up among the comments made since it was first planned.
    if (input.comment)
      return {
        step: 'comment',
        reference: { ...reference, sentAt: this.clock.now().toISOString() },
        irreversible: true,
      };
    // The limit is read before any container is made (a container lives a day, as long as a wait for the
    // limit may last), and again before publishing.
    return { step: 'limit', reference, irreversible: false };
  }

  async run(input: PublicationInput, progress: Progress): Promise<StepResult> {
    const account = await this.accounts.account(input.channel);
    const reference = progress.reference as InstagramReference;
    switch (progress.step) {
      case 'item':
        return this.makeItem(input, account, reference);
      case 'items':
        return this.poll(input, account, reference, reference.items, () =>
          this.step('container', { ...reference, madeAt: undefined }),
        );
      case 'container':
        return this.makeContainer(input, account, reference);
      case 'status':
        return this.poll(input, account, reference, [reference.container!], () =>
          this.step('limit', { ...reference, madeAt: undefined }),
        );
      case 'limit':
        return this.readLimit(input, account, reference);
      case 'publish':
        return this.publish(input, account, reference);
      case 'comment':
        return { outcome: await this.comment(input, account) };
      default:
        throw new PermanentPublishError('rejected_by_network', `unknown step ${progress.step}`);
    }
  }

  /**
   * After `media_publish` (or a comment) whose answer was lost. Meta documents no link from a container
   * to the media it became, so the container's own status says whether it was published (`PUBLISHED`),
   * and the media is found among the account's newest by what was recorded: its caption, made after the
   * request was sent. A container still `FINISHED` was not published, and is published again.
   */
  async lookup(input: PublicationInput, progress: Progress): Promise<Lookup> {
    const account = await this.accounts.account(input.channel);
    const reference = progress.reference as InstagramReference;
    if (progress.step === 'comment') return this.findComment(input, account, reference);
    if (progress.step !== 'publish' || !reference.container) return { status: 'absent' };
    const answer = await this.call<StatusAnswer>(input, account, reference.container, 'GET', {
      fields: 'status_code,status',
    });
    const status = graphErrorOf(answer) ? undefined : answer.data.status_code;
    if (status === 'FINISHED' || status === 'EXPIRED' || status === 'IN_PROGRESS') return { status: 'absent' };
    if (status === 'ERROR') return containerFailed(answer.data.status);
    const found = await this.findMedia(input, account, reference);
    if (found.length === 1) return this.published(input, account, found[0]!);
    const why =
      found.length === 0
        ? status === 'PUBLISHED'
          ? "Instagram says the container was published, and its media is not among the account's newest"
          : 'Instagram no longer tells what became of the container'
        : `${found.length} of the account's newest media carry the post's caption`;
    return { status: 'unknown', message: why, logId: graphErrorOf(answer)?.fbtraceId };
  }

  private settings(input: PublicationInput): SettingsOf<'instagram'> {
    return (input.post.settings as SettingsOf<'instagram'> | null) ?? { __type: 'instagram' };
  }

  private step(step: string, reference: InstagramReference, irreversible = false): StepResult {
    return { next: { step, reference, irreversible } };
  }

  /** Makes the container of the carousel's next item; once every one is made, they are polled. */
  private async makeItem(
    input: PublicationInput,
    account: InstagramAccount,
    reference: InstagramReference,
  ): Promise<StepResult> {
    const media = input.media[reference.items.length];
    if (!media) return this.step('items', { ...reference, madeAt: this.clock.now().toISOString() });
    const id = await this.createContainer(input, account, carouselItem(this.settings(input), media), media.fileName);
    const items = [...reference.items, id];
    if (items.length < input.media.length) return this.step('item', { ...reference, items });
    return this.step('items', { ...reference, items, madeAt: this.clock.now().toISOString() });
  }

  /** Makes the container that is published: the post's own, or the carousel of the items made. */
  private async makeContainer(
    input: PublicationInput,
    account: InstagramAccount,
    reference: InstagramReference,
  ): Promise<StepResult> {
    const settings = this.settings(input);
    const shape = shapeOf(settings, input.media);
    const media = input.media[0];
    let params: Record<string, string>;
    if (shape === 'CAROUSEL') params = carouselContainer(settings, input.post.content, reference.items);
    else if (media) params = singleContainer(shape, settings, input.post.content, media);
    else throw new PermanentPublishError('rejected_by_network', 'An Instagram post needs an image or a video.');
    const container = await this.createContainer(
      input,
      account,
      params,
      shape === 'CAROUSEL' ? 'the carousel' : media!.fileName,
    );
    return this.step('status', { ...reference, container, madeAt: this.clock.now().toISOString() });
  }

  private async createContainer(
    input: PublicationInput,
    account: InstagramAccount,
    params: Record<string, string>,
    what: string,
  ) {
    const answer = await this.call<{ id?: string }>(input, account, `${account.igUserId}/media`, 'POST', params);
    if (graphErrorOf(answer)) throw publishErrorOf(answer, what, 'Instagram');
    if (!answer.data.id) throw new TransientPublishError('Instagram answered no container id', { answered: true });
    return answer.data.id;
  }

  /**
   * Reads the containers' status: every one `FINISHED` leads on; one still processed is asked about
   * again later, as a job of the queue; `ERROR` fails the post with Instagram's words; `EXPIRED` (a
   * container lives a day) starts the attempt over, as nothing was published.
   */
  private async poll(
    input: PublicationInput,
    account: InstagramAccount,
    reference: InstagramReference,
    containers: string[],
    then: () => StepResult,
  ): Promise<StepResult> {
    let waiting = false;
    for (const id of containers) {
      const answer = await this.call<StatusAnswer>(input, account, id, 'GET', { fields: 'status_code,status' });
      if (graphErrorOf(answer)) throw publishErrorOf(answer, 'reading a container of the post', 'Instagram');
      switch (answer.data.status_code) {
        case 'FINISHED':
          break;
        case 'ERROR':
          return { outcome: containerFailed(answer.data.status) };
        case 'EXPIRED':
          return { restart: { reason: 'Instagram let a container of the post expire before it was published' } };
        default:
          waiting = true;
      }
    }
    if (!waiting) return then();
    const elapsed = reference.madeAt ? (this.clock.now().getTime() - Date.parse(reference.madeAt)) / 1000 : 0;
    return {
      pending: { checkAgainInSeconds: Math.round(Math.min(POLL_MAX_SECONDS, Math.max(POLL_MIN_SECONDS, elapsed / 3))) },
    };
  }

  /**
   * Reads the account's publishing limit: within it, the post is published; over it, the post waits
   * for the moving day to free a publication (the oldest of the day's ageing out), never failed.
   */
  private async readLimit(
    input: PublicationInput,
    account: InstagramAccount,
    reference: InstagramReference,
  ): Promise<StepResult> {
    const answer = await this.call<LimitAnswer>(input, account, `${account.igUserId}/content_publishing_limit`, 'GET', {
      fields: 'quota_usage,config',
    });
    if (graphErrorOf(answer)) throw publishErrorOf(answer, "reading the account's publishing limit", 'Instagram');
    const limit = answer.data.data?.[0];
    const usage = limit?.quota_usage ?? 0;
    const total = limit?.config?.quota_total ?? 50;
    const duration = limit?.config?.quota_duration ?? 86_400;
    if (usage >= total)
      return {
        pending: { checkAgainInSeconds: await this.limitFreesIn(input, account, total, duration), forQuota: true },
      };
    if (!reference.container) {
      const shape = shapeOf(this.settings(input), input.media);
      return this.step(shape === 'CAROUSEL' ? 'item' : 'container', reference);
    }
    return this.step('publish', { ...reference, sentAt: this.clock.now().toISOString() }, true);
  }

  /**
   * When the oldest publication of the moving window ages out, from the account's newest media (their
   * timestamps); an hour when they do not tell (publications the window counts that are not listed).
   */
  private async limitFreesIn(
    input: PublicationInput,
    account: InstagramAccount,
    total: number,
    duration: number,
  ): Promise<number> {
    const now = this.clock.now().getTime();
    const answer = await this.call<{ data?: MediaAnswer[] }>(input, account, `${account.igUserId}/media`, 'GET', {
      fields: 'id,timestamp',
      limit: String(Math.min(total, 100)),
    });
    const inWindow = (graphErrorOf(answer) ? [] : (answer.data.data ?? []))
      .map((m) => timeOf(m.timestamp))
      .filter((at): at is number => at !== undefined && at > now - duration * 1000);
    if (inWindow.length === 0) return LIMIT_RECHECK_SECONDS;
    const frees = Math.min(...inWindow) + duration * 1000;
    return Math.max(60, Math.ceil((frees - now) / 1000) + 60);
  }

  /** `media_publish`: the irreversible point. */
  private async publish(
    input: PublicationInput,
    account: InstagramAccount,
    reference: InstagramReference,
  ): Promise<StepResult> {
    const answer = await this.call<{ id?: string }>(input, account, `${account.igUserId}/media_publish`, 'POST', {
      creation_id: reference.container!,
    });
    const error = graphErrorOf(answer);
    // Refused, so nothing was published: another app of the account used up the limit meanwhile. The post
    // waits; asked about then, its container is still FINISHED, and it is published again.
    if (error?.subcode === PUBLISHING_LIMIT_SUBCODE)
      return { pending: { checkAgainInSeconds: await this.limitFreesIn(input, account, 50, 86_400), forQuota: true } };
    if (error?.subcode === CONTAINER_EXPIRED_SUBCODE)
      return { restart: { reason: 'Instagram let the container of the post expire before it was published' } };
    if (error) throw publishErrorOf(answer, 'the post', 'Instagram');
    if (!answer.data.id) throw new TransientPublishError('Instagram answered no media id', { answered: false });
    return { outcome: await this.published(input, account, { id: answer.data.id }) };
  }

  /** The published media, with its permalink when Instagram tells it (the post is published either way). */
  private async published(
    input: PublicationInput,
    account: InstagramAccount,
    media: MediaAnswer & { id: string },
  ): Promise<Outcome> {
    let permalink = media.permalink ?? null;
    if (permalink === null) {
      try {
        const answer = await this.call<MediaAnswer>(input, account, media.id, 'GET', { fields: 'permalink' });
        permalink = graphErrorOf(answer) ? null : (answer.data.permalink ?? null);
      } catch {
        // Not reachable just now: the post is published, its link unknown.
      }
    }
    return { status: 'published', releaseId: media.id, releaseUrl: permalink };
  }

  /** The account's media made since the publication was sent with its caption: what it may have become. */
  private async findMedia(
    input: PublicationInput,
    account: InstagramAccount,
    reference: InstagramReference,
  ): Promise<(MediaAnswer & { id: string })[]> {
    const story = this.settings(input).postType === 'story';
    const answer = await this.call<{ data?: MediaAnswer[] }>(
      input,
      account,
      `${account.igUserId}/${story ? 'stories' : 'media'}`,
      'GET',
      { fields: 'id,caption,timestamp,permalink', limit: String(LOOKUP_LIMIT) },
    );
    if (graphErrorOf(answer)) throw publishErrorOf(answer, "reading the account's media", 'Instagram');
    const since = Date.parse(reference.sentAt ?? '') - LOOKUP_SLACK_MS;
    const caption = story ? '' : input.post.content.trim();
    return (answer.data.data ?? []).filter(
      (m): m is MediaAnswer & { id: string } =>
        typeof m.id === 'string' && (timeOf(m.timestamp) ?? 0) >= since && (m.caption ?? '').trim() === caption,
    );
  }

  /** The first comment: the account's own comment on the published media. */
  private async comment(input: PublicationInput, account: InstagramAccount): Promise<Outcome> {
    if (this.settings(input).postType === 'story')
      throw new PermanentPublishError('rejected_by_network', 'An Instagram story takes no comments.');
    const on = input.comment!.on;
    const answer = await this.call<{ id?: string }>(input, account, `${on.releaseId}/comments`, 'POST', {
      message: input.post.content,
    });
    if (graphErrorOf(answer)) throw publishErrorOf(answer, 'the first comment', 'Instagram');
    if (!answer.data.id) throw new TransientPublishError('Instagram answered no comment id', { answered: false });
    return { status: 'published', releaseId: answer.data.id, releaseUrl: on.releaseUrl };
  }

  /** A comment whose answer was lost: the account's comment with its text on the media, made since it was sent. */
  private async findComment(
    input: PublicationInput,
    account: InstagramAccount,
    reference: InstagramReference,
  ): Promise<Lookup> {
    const on = input.comment!.on;
    const answer = await this.call<{ data?: CommentAnswer[] }>(input, account, `${on.releaseId}/comments`, 'GET', {
      fields: 'id,text,timestamp,from',
      limit: String(LOOKUP_LIMIT),
    });
    if (graphErrorOf(answer)) throw publishErrorOf(answer, 'reading the comments of the post', 'Instagram');
    const since = Date.parse(reference.sentAt ?? '') - LOOKUP_SLACK_MS;
    const found = (answer.data.data ?? []).filter(
      (c) =>
        typeof c.id === 'string' &&
        c.text === input.post.content &&
        (c.from?.id === undefined || c.from.id === account.igUserId) &&
        (Number.isNaN(since) || (timeOf(c.timestamp) ?? 0) >= since),
    );
    if (found.length === 0) return { status: 'absent' };
    if (found.length > 1)
      return { status: 'unknown', message: `${found.length} of the account's comments on the post carry its text` };
    return { status: 'published', releaseId: found[0]!.id!, releaseUrl: on.releaseUrl };
  }

  private call<T>(
    input: PublicationInput,
    account: InstagramAccount,
    path: string,
    method: 'GET' | 'POST',
    params: Record<string, string>,
  ): Promise<GraphAnswer<T>> {
    const api = this.apis[account.api];
    if (!api)
      throw new PermanentPublishError(
        'rejected_by_network',
        account.api === 'facebook'
          ? 'The channel was connected through Facebook Login; this server has no Meta app (META_APP_ID).'
          : 'The channel was connected through Instagram Login; this server has no Instagram app (INSTAGRAM_APP_ID).',
      );
    return api.call<T>(path, { method, accessToken: account.accessToken, params, signal: input.signal });
  }
}

/** A container Instagram could not make into media: the post fails with Instagram's own words. */
function containerFailed(status: string | undefined): Outcome {
  return {
    status: 'failed',
    code: 'rejected_by_network',
    message: `Instagram could not publish the media: ${status ?? 'its container ended in ERROR'}`,
  };
}

/** A Graph timestamp (`2026-11-27T12:00:00+0000`) in ms, or undefined. */
function timeOf(value: string | undefined): number | undefined {
  if (!value) return undefined;
  const at = Date.parse(value.replace(/([+-]\d\d)(\d\d)$/, '$1:$2'));
  return Number.isNaN(at) ? undefined : at;
}
