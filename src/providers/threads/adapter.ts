import type { Clock } from '../../core/clock.js';
import type { AccountTokens } from '../account-tokens.js';
import { graphErrorOf, publishErrorOf, type GraphAnswer, type GraphApi, type GraphRequest } from '../meta/graph.js';
import type { StoredSettingsOf } from '../provider-adapter.js';
import {
  PermanentPublishError,
  TransientPublishError,
  type Lookup,
  type Outcome,
  type Progress,
  type PublicationInput,
  type PublishableMedia,
  type PublishingAdapter,
  type StepResult,
} from '../publishing-contract.js';

/** Where a channel's access token comes from: AccountTokens, which refreshes it well before its 60 days end. */
export type ThreadsAccessTokens = Pick<AccountTokens, 'accessToken'>;

/** What a publication has done so far at Threads. */
interface ThreadsReference extends Record<string, unknown> {
  /** A carousel's item containers created so far, in the order of its media. */
  items: string[];
  /** The post's own container, once created: what `threads_publish` publishes. */
  container?: string;
  /** When the publish step was first recorded: a post whose answer was lost is looked for from then on. */
  startedAt?: string;
}

interface Container {
  id?: string;
  status?: string;
  error_message?: string;
}

interface PublishingLimit {
  data?: {
    quota_usage?: number;
    config?: { quota_total?: number };
    reply_quota_usage?: number;
    reply_config?: { quota_total?: number };
  }[];
}

interface ThreadsMedia {
  id: string;
  text?: string;
  permalink?: string;
  replied_to?: { id?: string };
}

interface MediaList {
  data?: ThreadsMedia[];
  paging?: { next?: string };
}

/**
 * How often a container Threads still processes is asked about: Meta suggests once a minute, for about
 * five minutes (Threads API, "Troubleshooting"); a video may take longer, which the publisher bounds.
 */
const PROCESSING_CHECK_SECONDS = 60;
/**
 * How often the account's publishing quota is read again once it is used up: Threads says how much of the
 * rolling day is used, not when the oldest publication leaves it.
 */
const QUOTA_CHECK_SECONDS = 30 * 60;
/** How far the search for a post whose answer was lost reaches before its step began: the clocks may differ. */
const CLOCK_SKEW_MS = 5 * 60_000;
/** Pages of 100 of the account's recent posts read when looking for one; more, and nobody can tell. */
const SEARCH_PAGES = 5;

/**
 * Publishing a post, or a part of a thread, to Threads (developers.facebook.com, Threads API, "Posts"):
 *
 * 1. `quota`: the account's publishing limit, read from `threads_publishing_limit` (250 posts, or 1,000
 *    replies for a thread's later part, in a rolling day). Used up, the post waits, asked about again as
 *    a queued job, until the quota frees: it is never failed for it. Read first, so that no container
 *    is left waiting for it (a container lives a day).
 * 2. `item` (a carousel's media, one step each, `is_carousel_item`) and `items`, their processing.
 * 3. `container`: `POST /{user-id}/threads` with the text, the media (`image_url`, `video_url`, which
 *    Threads fetches from this server's signed URLs, or the carousel's `children`), `reply_control` from
 *    the post's settings and, for a thread's later part, `reply_to_id` (the part before it).
 * 4. `processing`: the container's status, asked about as a queued job until `FINISHED`; `ERROR` fails
 *    the post with Meta's `error_message`; `EXPIRED` (a container not published within a day) starts
 *    the attempt over, with new containers, as nothing was published.
 * 5. `publish`: `POST /{user-id}/threads_publish`, the irreversible point, recorded with the container
 *    id before it runs; the post's permalink is its `releaseUrl`.
 *
 * Threads publishes a container once, and says `PUBLISHED` of it then. After an answer that was lost
 * the container is asked about: not published, the step runs again; published, the post is looked for
 * among the account's recent threads (or replies, under the part before) by its text; not found there,
 * nobody can tell, and the post is `outcome_unknown`.
 */
export class ThreadsAdapter implements PublishingAdapter {
  // One publication at a time per account: a thread's replies go in order, and the quota read before a
  // publication holds until it is published.
  readonly limits = { concurrencyPerChannel: 1 };

  constructor(
    private readonly graph: GraphApi,
    private readonly tokens: ThreadsAccessTokens,
    private readonly clock: Clock,
  ) {}

  start(): Progress {
    return { step: 'quota', reference: { items: [] }, irreversible: false };
  }

  async run(input: PublicationInput, progress: Progress): Promise<StepResult> {
    const reference = progress.reference as ThreadsReference;
    switch (progress.step) {
      case 'quota':
        return this.quota(input, reference);
      case 'item':
        return this.item(input, reference);
      case 'items':
        return this.itemsProcessed(input, reference);
      case 'container':
        return this.container(input, reference);
      case 'processing':
        return this.processing(input, reference);
      case 'publish':
        return this.publish(input, reference);
      default:
        throw new PermanentPublishError('rejected_by_network', `unknown step ${progress.step}`);
    }
  }

  async lookup(input: PublicationInput, progress: Progress): Promise<Lookup> {
    const reference = progress.reference as ThreadsReference;
    if (progress.step !== 'publish' || !reference.container) return { status: 'absent' };
    const answer = await this.call<Container>(input, reference.container, {
      method: 'GET',
      params: { fields: 'id,status' },
    });
    const error = graphErrorOf(answer);
    if (error)
      return {
        status: 'unknown',
        message: `Threads did not say what became of the post's container (${error.message})`,
        logId: error.fbtraceId,
      };
    // Not published: a container is published once, and says so.
    if (answer.data.status !== 'PUBLISHED') return { status: 'absent' };
    return (
      (await this.find(input, reference)) ?? {
        status: 'unknown',
        message: 'Threads says the post was published, but it is not among the account’s recent posts',
      }
    );
  }

  private async quota(input: PublicationInput, reference: ThreadsReference): Promise<StepResult> {
    const reply = input.reply !== undefined;
    const fields = reply ? 'reply_quota_usage,reply_config' : 'quota_usage,config';
    const limit = this.ok(
      await this.call<PublishingLimit>(input, `${this.user(input)}/threads_publishing_limit`, {
        method: 'GET',
        params: { fields },
      }),
      'the reading of the publishing limit',
    ).data?.[0];
    const used = reply ? limit?.reply_quota_usage : limit?.quota_usage;
    const total = reply ? limit?.reply_config?.quota_total : limit?.config?.quota_total;
    if (used !== undefined && total !== undefined && used >= total)
      return { pending: { checkAgainInSeconds: QUOTA_CHECK_SECONDS, forQuota: true } };
    const next = input.media.length > 1 ? 'item' : 'container';
    return { next: { step: next, reference: { items: reference.items }, irreversible: false } };
  }

  /** Creates the container of the carousel's next media. */
  private async item(input: PublicationInput, reference: ThreadsReference): Promise<StepResult> {
    const media = input.media[reference.items.length]!;
    const created = this.ok(
      await this.call<Container>(input, `${this.user(input)}/threads`, {
        method: 'POST',
        params: { ...mediaParams(media), is_carousel_item: 'true' },
      }),
      `the carousel's media ${media.fileName}`,
    );
    const items = [...reference.items, idOf(created)];
    const step = items.length < input.media.length ? 'item' : 'items';
    return { next: { step, reference: { ...reference, items }, irreversible: false } };
  }

  /** The carousel's items once Threads has processed every one. */
  private async itemsProcessed(input: PublicationInput, reference: ThreadsReference): Promise<StepResult> {
    let waiting = false;
    for (const [index, id] of reference.items.entries()) {
      const status = await this.status(input, id);
      const settled = settledOf(status, `the carousel's media ${input.media[index]!.fileName}`);
      if (settled) return settled;
      if (status.status !== 'FINISHED') waiting = true;
    }
    if (waiting) return { pending: { checkAgainInSeconds: PROCESSING_CHECK_SECONDS } };
    return { next: { step: 'container', reference, irreversible: false } };
  }

  private async container(input: PublicationInput, reference: ThreadsReference): Promise<StepResult> {
    const settings = input.post.settings as StoredSettingsOf<'threads'> | null;
    const [single] = input.media;
    const params: Record<string, string> =
      input.media.length > 1
        ? { media_type: 'CAROUSEL', children: reference.items.join(',') }
        : single
          ? mediaParams(single)
          : { media_type: 'TEXT' };
    if (input.post.content !== '') params.text = input.post.content;
    params.reply_control = settings?.replyControl ?? 'everyone';
    if (input.reply) params.reply_to_id = input.reply.parent.releaseId;
    const created = this.ok(
      await this.call<Container>(input, `${this.user(input)}/threads`, { method: 'POST', params }),
      'the post',
    );
    return { next: { step: 'processing', reference: { ...reference, container: idOf(created) }, irreversible: false } };
  }

  private async processing(input: PublicationInput, reference: ThreadsReference): Promise<StepResult> {
    const status = await this.status(input, reference.container!);
    const settled = settledOf(status, 'the post');
    if (settled) return settled;
    if (status.status !== 'FINISHED') return { pending: { checkAgainInSeconds: PROCESSING_CHECK_SECONDS } };
    return {
      next: {
        step: 'publish',
        reference: { ...reference, startedAt: this.clock.now().toISOString() },
        irreversible: true,
      },
    };
  }

  private async publish(input: PublicationInput, reference: ThreadsReference): Promise<StepResult> {
    const answer = await this.call<{ id?: string }>(input, `${this.user(input)}/threads_publish`, {
      method: 'POST',
      params: { creation_id: reference.container! },
    });
    const error = graphErrorOf(answer);
    if (!error && answer.data.id) return { outcome: await this.published(input, answer.data.id) };
    // The quota was used up since it was read (another app of the account's): nothing was published; the
    // post waits for the quota again, and its containers are made anew once it frees.
    if (error?.subcode === 2207042) return { next: this.start() };
    // Threads answers "Media Not Found" for a container it will not publish: one published already (an
    // earlier answer lost), or expired.
    if (error?.code === 24) {
      const status = await this.status(input, reference.container!);
      if (status.status === 'PUBLISHED') {
        const found = await this.find(input, reference);
        if (found) return { outcome: found };
        throw new PermanentPublishError(
          'outcome_unknown',
          'Threads says the post was published, but it is not among the account’s recent posts; ' +
            'check the channel before scheduling it again.',
          error.fbtraceId,
        );
      }
      if (status.status === 'EXPIRED') return { restart: { reason: EXPIRED } };
    }
    const mapped = publishErrorOf(answer, 'the publication of the post', 'Threads');
    // A 5xx, or Meta's passing failure, may come after Threads published: asked about before anything
    // else. A rate limit says it was not.
    if (mapped instanceof TransientPublishError && mapped.retryAfterSeconds === undefined)
      throw new TransientPublishError(mapped.message, {
        answered: false,
        ...(mapped.logId ? { logId: mapped.logId } : {}),
      });
    throw mapped;
  }

  /** The published post with its permalink; without one when Threads does not give it (published all the same). */
  private async published(input: PublicationInput, id: string): Promise<Outcome & { status: 'published' }> {
    let releaseUrl: string | null = null;
    try {
      const answer = await this.call<{ permalink?: string }>(input, id, {
        method: 'GET',
        params: { fields: 'permalink' },
      });
      releaseUrl = answer.data.permalink ?? null;
    } catch {
      // Published all the same: the post's id is what counts.
    }
    return { status: 'published', releaseId: id, releaseUrl };
  }

  /**
   * The post among the account's recent threads (or, for a thread's later part, its replies, under the
   * part before), by its text, from when its publish step began; `undefined` when it is not there.
   */
  private async find(
    input: PublicationInput,
    reference: ThreadsReference,
  ): Promise<(Outcome & { status: 'published' }) | undefined> {
    const since = Math.floor((Date.parse(reference.startedAt!) - CLOCK_SKEW_MS) / 1000);
    const list = input.reply ? 'replies' : 'threads';
    let page: string | undefined = `${this.user(input)}/${list}`;
    let params: Record<string, string> | undefined = {
      fields: 'id,text,permalink,replied_to',
      since: String(since),
      limit: '100',
    };
    const text = input.post.content.trim();
    for (let read = 0; page && read < SEARCH_PAGES; read++) {
      const listed: MediaList = this.ok(
        await this.call<MediaList>(input, page, { method: 'GET', ...(params ? { params } : {}) }),
        `the reading of the account's ${list}`,
      );
      const match = (listed.data ?? []).findLast(
        (media) =>
          (media.text ?? '').trim() === text && (!input.reply || media.replied_to?.id === input.reply.parent.releaseId),
      );
      if (match) return { status: 'published', releaseId: match.id, releaseUrl: match.permalink ?? null };
      // `paging.next` repeats the request for the next page.
      page = listed.paging?.next;
      params = undefined;
    }
    return undefined;
  }

  private async status(input: PublicationInput, id: string): Promise<Container> {
    return this.ok(
      await this.call<Container>(input, id, { method: 'GET', params: { fields: 'id,status,error_message' } }),
      'the reading of a container',
    );
  }

  /** A call of the Threads API with the channel's access token. */
  private async call<T>(
    input: PublicationInput,
    path: string,
    request: Omit<GraphRequest, 'accessToken' | 'signal'>,
  ): Promise<GraphAnswer<T>> {
    const accessToken = await this.tokens.accessToken(input.channel);
    return this.graph.call<T>(path, { ...request, accessToken, signal: input.signal });
  }

  /** The answer's data, or the error it carries as what the publication does next. */
  private ok<T>(answer: GraphAnswer<T>, what: string): T {
    if (graphErrorOf(answer)) throw publishErrorOf(answer, what, 'Threads');
    return answer.data;
  }

  /** The account in a path: its Threads user id. */
  private user(input: PublicationInput): string {
    return input.channel.external_id ?? 'me';
  }
}

const EXPIRED = 'Threads let a container of the post expire (a container lives a day); it is made again';

/** What a container's settled status means for the post: an error fails it, expiry starts it over. */
function settledOf(container: Container, what: string): StepResult | undefined {
  if (container.status === 'ERROR')
    throw new PermanentPublishError(
      'rejected_by_network',
      `Threads could not process ${what}: ${container.error_message ?? 'no reason given'}`,
    );
  if (container.status === 'EXPIRED') return { restart: { reason: EXPIRED } };
  return undefined;
}

/** A container's media: an image or a video, at the signed URL Threads fetches it from, with its alt text. */
function mediaParams(media: PublishableMedia): Record<string, string> {
  const params: Record<string, string> =
    media.kind === 'video'
      ? { media_type: 'VIDEO', video_url: media.url }
      : { media_type: 'IMAGE', image_url: media.url };
  if (media.altText) params.alt_text = media.altText;
  return params;
}

function idOf(container: Container): string {
  if (!container.id) throw new TransientPublishError('Threads answered no container id', { answered: true });
  return container.id;
}
