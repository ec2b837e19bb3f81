import type { Clock } from '../../core/clock.js';
import type { StoredSettingsOf } from '../provider-adapter.js';
import {
  PermanentPublishError,
  type Lookup,
  type Outcome,
  type Progress,
  type PublicationInput,
  type PublishableMedia,
  type PublishingAdapter,
  type StepResult,
} from '../publishing-contract.js';
import { jsonOf, publishError, xMessage, type XApi } from './api.js';
import { SEGMENT_BYTES, type Processing, type UploadedMedia, type XMedia } from './media.js';
import type { SentPost, Window, XTimeline } from './timeline.js';
import type { XTokens } from './tokens.js';

type StoredXSettings = StoredSettingsOf<'x'>;

/** Creating a post answers within this, or the call is given up (and X asked about it). */
const POST_TIMEOUT_SECONDS = 30;
/**
 * How long after a post could have reached X its absence from the account's timeline is believed: X
 * shows a new post in the timeline after a moment, not always at once.
 */
const TIMELINE_SETTLE_SECONDS = 60;
/** How far the search reaches before the post step began: the two clocks, X's and this server's, may differ. */
const CLOCK_SKEW_MS = 2 * 60_000;
/** A media X forgets within this is uploaded again before the post rather than refused by X. */
const EXPIRY_MARGIN_MS = 5 * 60_000;

/** What a publication has done so far: the media X holds for it, and the video being uploaded. */
interface XReference extends Record<string, unknown> {
  media: UploadedMedia[];
  /** The video or GIF being uploaded in segments, and the segment the step sends. */
  upload?: UploadedMedia & { segment: number };
  /** When the post step was last recorded to be sent: a post whose lost answer is looked for from then on. */
  startedAt?: string;
}

/**
 * Publishing a post, or a part of a thread, to X (API v2). The media go up first, each call a step
 * of its own (see XMedia): an image at once, then its alt text; a video or GIF in segments, then X's
 * processing, asked about as a queued job, then a GIF's alt text. Then `POST /2/tweets` with the
 * text, the media's ids, the post it replies to (a thread's later part: the part before it) and the
 * reply settings: the irreversible point.
 *
 * X has no idempotency key, so a post step that may have reached X (its answer lost, a 5xx, which X
 * may answer after creating the post, or a worker that stopped) is never simply sent again: the
 * account's recent posts are searched for it first (see XTimeline), from the post replied to or from
 * when the step began. Found, the post is published. Not found, X is believed only once its timeline
 * had time to show the post (a minute after the call could have ended; until then the search is made
 * again later), and only if the search read the window to its end; then the post is sent again. Were
 * the timeline slower than that, X itself refuses the second copy as a duplicate (403, for the same
 * text), and a duplicate is searched for like a lost answer: the first copy, found, makes the post
 * published. A search that could not read the whole window (over 500 posts since) leaves the post
 * `outcome_unknown`.
 */
export class XAdapter implements PublishingAdapter {
  // X takes 100 posts per 15 minutes per account; one publication at a time per account keeps a
  // thread's replies and the searches after lost answers simple.
  readonly limits = { concurrencyPerChannel: 1 };

  constructor(
    private readonly api: XApi,
    private readonly tokens: XTokens,
    private readonly media: XMedia,
    private readonly timeline: XTimeline,
    private readonly clock: Clock,
  ) {}

  /**
   * The media's first step, or, for a post without media, `ready`, which leads to the post step at
   * once: the irreversible step is never a publication's first. The publisher records a thread part's
   * first step with the part before it, and asks the network about a recorded irreversible step before
   * it runs it; the post step, reached by a step, is recorded just before its call, when its search
   * window begins.
   */
  start(input: PublicationInput): Progress {
    if (input.media.length === 0) return { step: 'ready', reference: { media: [] }, irreversible: false };
    return this.afterMedia(input, { media: [] });
  }

  async run(input: PublicationInput, progress: Progress): Promise<StepResult> {
    const reference = progress.reference as XReference;
    switch (progress.step) {
      case 'ready':
        return { next: this.afterMedia(input, reference) };
      case 'upload':
        return this.uploadImage(input, reference);
      case 'describe': {
        const index = reference.media.length - 1;
        await this.media.describe(input, reference.media[index]!.id, altTextOf(input.media[index]!)!);
        return { next: this.afterMedia(input, reference) };
      }
      case 'initialize': {
        const upload = await this.media.initialize(input, this.current(input, reference));
        return {
          next: { step: 'append', reference: { ...reference, upload: { ...upload, segment: 0 } }, irreversible: false },
        };
      }
      case 'append':
        return this.append(input, reference);
      case 'finalize':
        return this.processed(input, reference, await this.media.finalize(input, reference.upload!.id), 'finalize');
      case 'processing':
        return this.processed(input, reference, await this.media.status(input, reference.upload!.id), 'processing');
      case 'post':
        return this.post(input, reference);
      default:
        throw new PermanentPublishError('rejected_by_network', `unknown step ${progress.step}`);
    }
  }

  async lookup(input: PublicationInput, progress: Progress): Promise<Lookup> {
    const reference = progress.reference as XReference;
    const search = await this.search(input, reference);
    if (search.found !== undefined) return this.published(input, search.found);
    if (!search.complete)
      return {
        status: 'unknown',
        message: 'the account posted more than 500 times since, too many to search for the post',
      };
    const settledAt = startedAt(reference) + (POST_TIMEOUT_SECONDS + TIMELINE_SETTLE_SECONDS) * 1000;
    const wait = Math.ceil((settledAt - this.clock.now().getTime()) / 1000);
    // Not in the timeline yet: X may not show it yet; asked again once it would.
    if (wait > 0) return { status: 'pending', checkAgainInSeconds: wait };
    // Sent anew as a step of its own: a later look-up searches and waits from the new sending, not this one.
    return {
      status: 'absent',
      again: { ...progress, reference: { ...reference, startedAt: this.clock.now().toISOString() } },
    };
  }

  /** The next media's first step, or the post once every media is up. */
  private afterMedia(input: PublicationInput, reference: XReference): Progress {
    const next = input.media[reference.media.length];
    if (next)
      return {
        step: inSegments(next) ? 'initialize' : 'upload',
        reference: { media: reference.media },
        irreversible: false,
      };
    return {
      step: 'post',
      reference: { media: reference.media, startedAt: this.clock.now().toISOString() },
      irreversible: true,
    };
  }

  /** The media the steps work on: the first one X does not hold yet. */
  private current(input: PublicationInput, reference: XReference): PublishableMedia {
    return input.media[reference.media.length]!;
  }

  private async uploadImage(input: PublicationInput, reference: XReference): Promise<StepResult> {
    const image = this.current(input, reference);
    const uploaded = await this.media.uploadImage(input, image);
    const withIt: XReference = { media: [...reference.media, uploaded] };
    if (altTextOf(image)) return { next: { step: 'describe', reference: withIt, irreversible: false } };
    return { next: this.afterMedia(input, withIt) };
  }

  private async append(input: PublicationInput, reference: XReference): Promise<StepResult> {
    const video = this.current(input, reference);
    const upload = reference.upload!;
    await this.media.append(input, video, upload.id, upload.segment);
    const last = (upload.segment + 1) * SEGMENT_BYTES >= video.size;
    if (last) return { next: { step: 'finalize', reference, irreversible: false } };
    return {
      next: {
        step: 'append',
        reference: { ...reference, upload: { ...upload, segment: upload.segment + 1 } },
        irreversible: false,
      },
    };
  }

  /** Where the video stands after finalize or a STATUS: processed, still processing, or refused. */
  private processed(
    input: PublicationInput,
    reference: XReference,
    processing: Processing,
    step: 'finalize' | 'processing',
  ): StepResult {
    if (processing.state === 'failed') throw new PermanentPublishError('rejected_by_network', processing.message);
    if (processing.state === 'waiting') {
      if (step === 'finalize') return { next: { step: 'processing', reference, irreversible: false } };
      return { pending: { checkAgainInSeconds: processing.checkAfterSeconds } };
    }
    const { id, expiresAt } = reference.upload!;
    const withIt: XReference = { media: [...reference.media, { id, expiresAt }] };
    // X takes alt text on images and GIFs, not on videos.
    const media = this.current(input, reference);
    if (media.kind === 'image' && altTextOf(media))
      return { next: { step: 'describe', reference: withIt, irreversible: false } };
    return { next: this.afterMedia(input, withIt) };
  }

  private async post(input: PublicationInput, reference: XReference): Promise<StepResult> {
    // A post that waited long (X's daily cap) would carry media X has forgotten: they go up again.
    const soon = this.clock.now().getTime() + EXPIRY_MARGIN_MS;
    if (reference.media.some((media) => Date.parse(media.expiresAt) < soon))
      return { restart: { reason: 'X forgets uploaded media after a day; the post’s media are uploaded again' } };
    const replySettings = replySettingsOf(input.post.settings);
    const body = {
      text: input.post.content,
      ...(reference.media.length > 0 ? { media: { media_ids: reference.media.map((media) => media.id) } } : {}),
      ...(input.reply ? { reply: { in_reply_to_tweet_id: input.reply.parent.releaseId } } : {}),
      // `everyone` is X's default, and not among the values it takes.
      ...(replySettings !== 'everyone' ? { reply_settings: replySettings } : {}),
    };
    const answer = await this.tokens.authorized(input.channel, (authorization) =>
      this.api.send('/2/tweets', {
        method: 'POST',
        authorization,
        body: { json: body },
        signal: input.signal,
        timeoutSeconds: POST_TIMEOUT_SECONDS,
      }),
    );
    const id = jsonOf<{ data?: { id?: string } }>(answer)?.data?.id;
    if ((answer.status === 201 || answer.status === 200) && id) return { outcome: this.published(input, id) };
    if (answer.status === 403 && /duplicate/i.test(xMessage(answer))) {
      // The same text as one of the account's recent posts: this one, if an earlier try created it.
      const search = await this.search(input, reference);
      if (search.found !== undefined) return { outcome: this.published(input, search.found) };
      throw new PermanentPublishError(
        'rejected_by_network',
        `X refused the post as a duplicate of one of the account’s recent posts: ${xMessage(answer)}`,
      );
    }
    // A 5xx may come after X created the post: asked about, never sent again blindly.
    throw publishError(answer, 'post', this.clock, { mayHaveApplied: true });
  }

  private search(input: PublicationInput, reference: XReference) {
    const sent: SentPost = {
      text: input.post.content,
      mediaIds: reference.media.map((media) => media.id),
      inReplyTo: input.reply?.parent.releaseId ?? null,
    };
    // A reply comes after the post it answers, and X's ids grow with time; a first post, from when its step began.
    const window: Window = input.reply
      ? { sinceId: input.reply.parent.releaseId }
      : { startTime: new Date(startedAt(reference) - CLOCK_SKEW_MS) };
    return this.timeline.find(input.channel, sent, window, input.signal);
  }

  private published(input: PublicationInput, id: string): Outcome & { status: 'published' } {
    const handle = input.channel.username;
    return {
      status: 'published',
      releaseId: id,
      releaseUrl: handle
        ? `https://x.com/${encodeURIComponent(handle)}/status/${id}`
        : `https://x.com/i/web/status/${id}`,
    };
  }
}

/** When the post step was last recorded to be sent, in ms. */
function startedAt(reference: XReference): number {
  return Date.parse(reference.startedAt!);
}

/** The post's reply settings: `everyone` for a post without settings (X takes none of its own). */
function replySettingsOf(settings: unknown): StoredXSettings['replySettings'] {
  return (settings as StoredXSettings | null)?.replySettings ?? 'everyone';
}

/**
 * Whether the media goes up in segments: a video, and a GIF, which X takes as an animated GIF
 * (`tweet_gif`, up to 15 MB, processed like a video) rather than as an image of up to 5 MB.
 */
function inSegments(media: PublishableMedia): boolean {
  return media.kind === 'video' || media.contentType === 'image/gif';
}

/** The image's alternative text, if it has one. */
function altTextOf(media: PublishableMedia): string | undefined {
  return media.altText || undefined;
}
