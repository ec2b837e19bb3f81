import type { Clock } from '../../core/clock.js';
import type { NetworkAnswer } from '../network-call.js';
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
import { jsonOf, linkedinLogId, linkedinMessage, publishError, type LinkedInApi } from './api.js';
import { littleText } from './little-text.js';
import type { LinkedInTokens } from './tokens.js';

type StoredLinkedInSettings = StoredSettingsOf<'linkedin'>;

/** A post or a comment answers within this, or the call is given up (and LinkedIn asked about it). */
const POST_TIMEOUT_SECONDS = 30;
const UPLOAD_TIMEOUT_SECONDS = 600;
/** How long after a post could have reached LinkedIn its absence from the author's posts is believed. */
const SETTLE_SECONDS = 60;
/** How far a search reaches before the step began: LinkedIn's clock and this server's may differ. */
const CLOCK_SKEW_MS = 2 * 60_000;
/** How often a video or document LinkedIn is processing is asked about. */
const PROCESSING_POLL_SECONDS = 10;
/** The author's newest posts (or the post's comments) read in a search after a lost answer. */
const SEARCH_COUNT = 50;

/** A video being uploaded: LinkedIn's URN of it, the upload's token, its parts and the ETag of each part sent. */
interface VideoUpload {
  urn: string;
  uploadToken: string;
  parts: { uploadUrl: string; firstByte: number; lastByte: number }[];
  etags: string[];
}

/** What a publication has done so far. */
interface LinkedInReference extends Record<string, unknown> {
  /** LinkedIn's URNs of the media uploaded, in the post's order. */
  media: string[];
  video?: VideoUpload;
  /** LinkedIn's URN of the document uploaded, while LinkedIn processes it. */
  document?: string;
  /** When the post or comment step was last recorded to be sent: a lost one is sought from then. */
  startedAt?: string;
}

/** A post as the author's posts list it (Posts API, "Find Posts by Authors"). */
interface ListedPost {
  id?: string;
  commentary?: string;
  createdAt?: number;
  content?: { media?: { id?: string }; multiImage?: { images?: { id?: string }[] } };
}

interface ListedComment {
  id?: string;
  commentUrn?: string;
  actor?: string;
  message?: { text?: string };
  created?: { time?: number };
}

/**
 * Publishing to LinkedIn as a member or a company page (the Posts API, api.linkedin.com/rest). Media go
 * up first, each call a step of its own: an image with the Images API (`initializeUpload`, then its bytes
 * PUT to the upload URL); a video with the Videos API (`initializeUpload` with the file's size, which
 * answers the parts to PUT, each a step whose ETag is kept, then `finalizeUpload` with them, then
 * LinkedIn's processing, asked about as a queued job until AVAILABLE); a document (PDF) with the Documents
 * API (`initializeUpload`, its bytes PUT to the upload URL, then LinkedIn's processing, asked about like a
 * video's). Then `POST /rest/posts` with the commentary in little text (reserved characters escaped, so the
 * text is published as written), the visibility, and the media: one image, video or document (with its
 * title), or several images as a multi-image post. LinkedIn
 * answers 201 with the post's URN in `x-restli-id`. A first comment is a publication of its own: `POST
 * /rest/socialActions/{post}/comments` as the author.
 *
 * The post and the comment are the irreversible points: LinkedIn has no idempotency key, so after an
 * answer that may have been lost the author's newest posts (or the post's comments) are searched, from
 * when the step was recorded, for one with the same commentary and media that no post of the channel is
 * recorded at. Found, it is published; two such leave the outcome unknown; not found once LinkedIn would
 * list it, it is sent again, as a step of its own. A member's posts can be read only by an app
 * LinkedIn granted r_member_social: without it, the outcome is unknown rather than guessed.
 */
export class LinkedInAdapter implements PublishingAdapter {
  // One publication at a time per account keeps a post's first comment and the searches simple.
  readonly limits = { concurrencyPerChannel: 1 };

  constructor(
    private readonly api: LinkedInApi,
    private readonly tokens: LinkedInTokens,
    private readonly clock: Clock,
  ) {}

  /** The media's first step, or `ready`, which leads to the irreversible step (never a publication's first). */
  start(input: PublicationInput): Progress {
    if (input.comment || input.media.length === 0)
      return { step: 'ready', reference: { media: [] }, irreversible: false };
    return this.afterMedia(input, { media: [] });
  }

  async run(input: PublicationInput, progress: Progress): Promise<StepResult> {
    const reference = progress.reference as LinkedInReference;
    switch (progress.step) {
      case 'ready':
        return { next: this.afterMedia(input, reference) };
      case 'image':
        return {
          next: this.afterMedia(input, { media: [...reference.media, await this.uploadImage(input, reference)] }),
        };
      case 'video-init':
        return { next: this.step('video-part', { ...reference, video: await this.initializeVideo(input, reference) }) };
      case 'video-part':
        return this.uploadPart(input, reference);
      case 'video-finalize':
        await this.finalizeVideo(input, reference.video!);
        return { next: this.step('video-status', reference) };
      case 'video-status':
        return this.videoStatus(input, reference);
      case 'document':
        return {
          next: this.step('document-status', { ...reference, document: await this.uploadDocument(input, reference) }),
        };
      case 'document-status':
        return this.documentStatus(input, reference);
      case 'post':
        return this.post(input, reference);
      case 'comment':
        return this.comment(input);
      default:
        throw new PermanentPublishError('rejected_by_network', `unknown step ${progress.step}`);
    }
  }

  async lookup(input: PublicationInput, progress: Progress): Promise<Lookup> {
    const reference = progress.reference as LinkedInReference;
    const found =
      progress.step === 'comment' ? await this.findComment(input, reference) : await this.findPost(input, reference);
    if ('status' in found) return found;
    if (found.id !== undefined) return this.published(found.id, input.comment !== undefined);
    const settledAt = Date.parse(reference.startedAt!) + (POST_TIMEOUT_SECONDS + SETTLE_SECONDS) * 1000;
    const wait = Math.ceil((settledAt - this.clock.now().getTime()) / 1000);
    if (wait > 0) return { status: 'pending', checkAgainInSeconds: wait };
    // Sent anew as a step of its own: a later look-up searches and waits from the new sending, not this one.
    return {
      status: 'absent',
      again: { ...progress, reference: { ...reference, startedAt: this.clock.now().toISOString() } },
    };
  }

  private step(step: string, reference: LinkedInReference, irreversible = false): Progress {
    return { step, reference, irreversible };
  }

  /** The next media's first step, or the post (or comment) once every media is up. */
  private afterMedia(input: PublicationInput, reference: LinkedInReference): Progress {
    const next = input.comment ? undefined : input.media[reference.media.length];
    if (next) return this.step(FIRST_STEP[next.kind], { media: reference.media });
    return this.step(
      input.comment ? 'comment' : 'post',
      { media: reference.media, startedAt: this.clock.now().toISOString() },
      true,
    );
  }

  private author(input: PublicationInput): string {
    const urn = input.channel.external_id;
    if (!urn) throw new PermanentPublishError('rejected_by_network', 'the channel names no LinkedIn member or page');
    return urn;
  }

  private call(input: PublicationInput, path: string, method: 'GET' | 'POST', json?: unknown, timeoutSeconds?: number) {
    return this.tokens.authorized(input.channel, (authorization) =>
      this.api.send(path, {
        method,
        authorization,
        ...(json === undefined ? {} : { body: { json } }),
        signal: input.signal,
        ...(timeoutSeconds ? { timeoutSeconds } : {}),
      }),
    );
  }

  private fail(answer: NetworkAnswer, what: string, options: { mayHaveApplied?: boolean } = {}) {
    return publishError(answer, what, this.clock, this.api.config.version, options);
  }

  private async uploadImage(input: PublicationInput, reference: LinkedInReference): Promise<string> {
    const image = input.media[reference.media.length]!;
    const answer = await this.call(input, '/rest/images?action=initializeUpload', 'POST', {
      initializeUploadRequest: { owner: this.author(input) },
    });
    const value = jsonOf<{ value?: { uploadUrl?: string; image?: string } }>(answer)?.value;
    if (answer.status !== 200 || !value?.uploadUrl || !value.image) throw this.fail(answer, 'image upload');
    await this.put(input, value.uploadUrl, await readAll(await image.open()), 'image');
    return value.image;
  }

  private async uploadDocument(input: PublicationInput, reference: LinkedInReference): Promise<string> {
    const document = input.media[reference.media.length]!;
    const answer = await this.call(input, '/rest/documents?action=initializeUpload', 'POST', {
      initializeUploadRequest: { owner: this.author(input) },
    });
    const value = jsonOf<{ value?: { uploadUrl?: string; document?: string } }>(answer)?.value;
    if (answer.status !== 200 || !value?.uploadUrl || !value.document) throw this.fail(answer, 'document upload');
    await this.put(input, value.uploadUrl, await readAll(await document.open()), 'document');
    return value.document;
  }

  /** Where LinkedIn's processing of the document stands: available (on to the post), still going, or failed. */
  private async documentStatus(input: PublicationInput, reference: LinkedInReference): Promise<StepResult> {
    const urn = reference.document!;
    const answer = await this.call(input, `/rest/documents/${encodeURIComponent(urn)}`, 'GET');
    const document = jsonOf<{ status?: string }>(answer);
    if (answer.status !== 200 || !document) throw this.fail(answer, 'document');
    if (document.status === 'AVAILABLE') return { next: this.afterMedia(input, { media: [...reference.media, urn] }) };
    if (document.status === 'PROCESSING_FAILED')
      throw new PermanentPublishError(
        'rejected_by_network',
        'LinkedIn could not process the document (a damaged or protected PDF, or more than 300 pages)',
        linkedinLogId(answer),
      );
    return { pending: { checkAgainInSeconds: PROCESSING_POLL_SECONDS } };
  }

  private async initializeVideo(input: PublicationInput, reference: LinkedInReference): Promise<VideoUpload> {
    const video = input.media[reference.media.length]!;
    const answer = await this.call(input, '/rest/videos?action=initializeUpload', 'POST', {
      initializeUploadRequest: {
        owner: this.author(input),
        fileSizeBytes: video.size,
        uploadCaptions: false,
        uploadThumbnail: false,
      },
    });
    const value = jsonOf<{
      value?: { video?: string; uploadToken?: string; uploadInstructions?: VideoUpload['parts'] };
    }>(answer)?.value;
    if (answer.status !== 200 || !value?.video || !value.uploadInstructions?.length)
      throw this.fail(answer, 'video upload');
    return { urn: value.video, uploadToken: value.uploadToken ?? '', parts: value.uploadInstructions, etags: [] };
  }

  /** Sends the video's next part, as LinkedIn's instructions cut it, and keeps the ETag LinkedIn answers. */
  private async uploadPart(input: PublicationInput, reference: LinkedInReference): Promise<StepResult> {
    const upload = reference.video!;
    const part = upload.parts[upload.etags.length]!;
    const video = input.media[reference.media.length]!;
    const bytes = await readAll(await video.open({ start: part.firstByte, end: part.lastByte }));
    const answer = await this.put(input, part.uploadUrl, bytes, 'video part');
    const etag = answer.headers.etag;
    if (typeof etag !== 'string' || etag === '')
      throw new PermanentPublishError('rejected_by_network', 'LinkedIn answered a video part without its ETag');
    const sent: VideoUpload = { ...upload, etags: [...upload.etags, etag] };
    const done = sent.etags.length === upload.parts.length;
    return { next: this.step(done ? 'video-finalize' : 'video-part', { ...reference, video: sent }) };
  }

  private async finalizeVideo(input: PublicationInput, upload: VideoUpload): Promise<void> {
    const answer = await this.call(input, '/rest/videos?action=finalizeUpload', 'POST', {
      finalizeUploadRequest: { video: upload.urn, uploadToken: upload.uploadToken, uploadedPartIds: upload.etags },
    });
    if (answer.status !== 200) throw this.fail(answer, 'video upload');
  }

  /** Where LinkedIn's processing of the video stands: available (on to the post), still going, or failed. */
  private async videoStatus(input: PublicationInput, reference: LinkedInReference): Promise<StepResult> {
    const upload = reference.video!;
    const answer = await this.call(input, `/rest/videos/${encodeURIComponent(upload.urn)}`, 'GET');
    const video = jsonOf<{ status?: string; processingFailureReason?: string }>(answer);
    if (answer.status !== 200 || !video) throw this.fail(answer, 'video');
    if (video.status === 'AVAILABLE')
      return { next: this.afterMedia(input, { media: [...reference.media, upload.urn] }) };
    const reason = video.processingFailureReason;
    if (video.status === 'PROCESSING_FAILED')
      throw new PermanentPublishError(
        'rejected_by_network',
        `LinkedIn could not process the video${reason ? `: ${reason}` : ''}`,
        linkedinLogId(answer),
      );
    return { pending: { checkAgainInSeconds: PROCESSING_POLL_SECONDS } };
  }

  private async put(input: PublicationInput, url: string, bytes: Buffer, what: string): Promise<NetworkAnswer> {
    const answer = await this.tokens.authorized(input.channel, (authorization) =>
      this.api.upload(url, {
        method: 'PUT',
        authorization,
        body: { bytes, contentType: 'application/octet-stream' },
        signal: input.signal,
        timeoutSeconds: UPLOAD_TIMEOUT_SECONDS,
      }),
    );
    if (answer.status !== 200 && answer.status !== 201) throw this.fail(answer, what);
    return answer;
  }

  private async post(input: PublicationInput, reference: LinkedInReference): Promise<StepResult> {
    const settings = settingsOf(input);
    const answer = await this.call(
      input,
      '/rest/posts',
      'POST',
      {
        author: this.author(input),
        commentary: littleText(input.post.content),
        visibility: settings.visibility,
        distribution: { feedDistribution: 'MAIN_FEED', targetEntities: [], thirdPartyDistributionChannels: [] },
        ...contentOf(input.media, reference.media, settings.documentTitle),
        lifecycleState: 'PUBLISHED',
        isReshareDisabledByAuthor: settings.disableReshare,
      },
      POST_TIMEOUT_SECONDS,
    );
    const urn = answer.headers['x-restli-id'];
    if (answer.status === 201 && typeof urn === 'string' && urn !== '') return { outcome: this.published(urn, false) };
    if (answer.status === 429) return throttled(answer);
    // A 5xx may come after LinkedIn created the post: asked about, never sent again blindly.
    throw this.fail(answer, 'post', { mayHaveApplied: true });
  }

  private async comment(input: PublicationInput): Promise<StepResult> {
    const on = input.comment!.on.releaseId;
    const answer = await this.call(
      input,
      `/rest/socialActions/${encodeURIComponent(on)}/comments`,
      'POST',
      { actor: this.author(input), object: on, message: { text: input.post.content } },
      POST_TIMEOUT_SECONDS,
    );
    const body = jsonOf<ListedComment>(answer);
    const header = answer.headers['x-restli-id'];
    const urn = body?.commentUrn ?? (typeof header === 'string' ? header : undefined);
    if (answer.status === 201 && urn) return { outcome: this.published(urn, true) };
    if (answer.status === 429) return throttled(answer);
    throw this.fail(answer, 'first comment', { mayHaveApplied: true });
  }

  /** The author's post sent by the step, among their newest: its URN, none, or what LinkedIn said instead. */
  private async findPost(
    input: PublicationInput,
    reference: LinkedInReference,
  ): Promise<{ id: string | undefined } | (Lookup & { status: 'unknown' })> {
    const query = new URLSearchParams({
      author: this.author(input),
      q: 'author',
      count: String(SEARCH_COUNT),
      sortBy: 'CREATED',
    });
    const answer = await this.call(input, `/rest/posts?${query.toString()}`, 'GET');
    if (answer.status === 403)
      return this.cannotRead(
        answer,
        'the author’s posts (a member’s posts need r_member_social, which LinkedIn grants few apps)',
      );
    if (answer.status !== 200) throw this.fail(answer, 'look-up of the author’s posts');
    const since = Date.parse(reference.startedAt!) - CLOCK_SKEW_MS;
    const commentary = littleText(input.post.content);
    const posts = jsonOf<{ elements?: ListedPost[] }>(answer)?.elements ?? [];
    const matching = posts.filter(
      (candidate) =>
        (candidate.createdAt ?? 0) >= since &&
        (candidate.commentary ?? '') === commentary &&
        mediaOf(candidate).join(',') === reference.media.join(','),
    );
    const found = await onlyOne(
      input,
      matching.map((candidate) => candidate.id).filter((id) => id !== undefined),
    );
    // A full page of posts all made since the step: the post may be among older ones not read.
    if (!('status' in found) && found.id === undefined && fullSince(posts, SEARCH_COUNT, since, (p) => p.createdAt))
      return {
        status: 'unknown',
        message: `the author published more than ${SEARCH_COUNT} posts since, too many to search for this one`,
      };
    return found;
  }

  private async findComment(
    input: PublicationInput,
    reference: LinkedInReference,
  ): Promise<{ id: string | undefined } | (Lookup & { status: 'unknown' })> {
    const on = input.comment!.on.releaseId;
    const query = new URLSearchParams({ count: String(SEARCH_COUNT) });
    const answer = await this.call(
      input,
      `/rest/socialActions/${encodeURIComponent(on)}/comments?${query.toString()}`,
      'GET',
    );
    if (answer.status === 403) return this.cannotRead(answer, 'the post’s comments');
    if (answer.status !== 200) throw this.fail(answer, 'look-up of the post’s comments');
    const since = Date.parse(reference.startedAt!) - CLOCK_SKEW_MS;
    const author = this.author(input);
    const comments = jsonOf<{ elements?: ListedComment[] }>(answer)?.elements ?? [];
    const matching = comments.filter(
      (candidate) =>
        candidate.actor === author &&
        (candidate.created?.time ?? 0) >= since &&
        candidate.message?.text === input.post.content,
    );
    const found = await onlyOne(
      input,
      matching.map((candidate) => candidate.commentUrn).filter((id) => id !== undefined),
    );
    // A full page of comments all made since the step: the comment may be among older ones not read.
    if (
      !('status' in found) &&
      found.id === undefined &&
      fullSince(comments, SEARCH_COUNT, since, (c) => c.created?.time)
    )
      return {
        status: 'unknown',
        message: `the post has more than ${SEARCH_COUNT} comments since, too many to search for this one`,
      };
    return found;
  }

  private cannotRead(answer: NetworkAnswer, what: string): Lookup & { status: 'unknown' } {
    return {
      status: 'unknown',
      message: `LinkedIn does not let this app read ${what}: ${linkedinMessage(answer)}`,
      logId: linkedinLogId(answer),
    };
  }

  private published(urn: string, comment: boolean): Outcome & { status: 'published' } {
    // A comment's URN names its post: urn:li:comment:(urn:li:activity:…,id).
    const post = comment ? (/^urn:li:comment:\((urn:li:[^,]+),/.exec(urn)?.[1] ?? urn) : urn;
    return { status: 'published', releaseId: urn, releaseUrl: `https://www.linkedin.com/feed/update/${post}/` };
  }
}

/**
 * The one id among `ids` (the posts or comments that match the one sent) that no post of the channel is
 * recorded at; none; or, when several are left, that LinkedIn cannot tell which is this one.
 */
async function onlyOne(
  input: PublicationInput,
  ids: string[],
): Promise<{ id: string | undefined } | (Lookup & { status: 'unknown' })> {
  const released = input.released ? await input.released(ids) : new Set<string>();
  const left = [...new Set(ids)].filter((id) => !released.has(id));
  if (left.length > 1)
    return { status: 'unknown', message: `${left.join(', ')} match it, none recorded for another post` };
  return { id: left[0] };
}

/** Whether a page of `count` items was read whole and every one was made since `since`: more may be older. */
function fullSince<T>(items: T[], count: number, since: number, time: (item: T) => number | undefined): boolean {
  return items.length >= count && items.every((item) => (time(item) ?? 0) >= since);
}

/**
 * LinkedIn's 429 to the post or the comment: the call was refused, nothing was made. It starts the
 * publication again after a retry's wait rather than failing as a step that may have got through, which
 * would have the author's posts searched first (a member's cannot be read without r_member_social, and
 * the outcome would be called unknown).
 */
function throttled(answer: NetworkAnswer): StepResult {
  return { restart: { reason: `LinkedIn's rate limit is reached: ${linkedinMessage(answer)}` } };
}

function settingsOf(input: PublicationInput): StoredLinkedInSettings {
  const settings = input.post.settings as Partial<StoredLinkedInSettings> | null;
  return {
    __type: 'linkedin',
    visibility: settings?.visibility ?? 'PUBLIC',
    disableReshare: settings?.disableReshare ?? false,
    ...(settings?.documentTitle === undefined ? {} : { documentTitle: settings.documentTitle }),
  };
}

/** The first step of uploading each kind of media. */
const FIRST_STEP: Record<PublishableMedia['kind'], string> = {
  image: 'image',
  video: 'video-init',
  document: 'document',
};

/** A document post's title: the one chosen, else the file's name without its extension. */
export function documentTitleOf(fileName: string, chosen: string | undefined): string {
  if (chosen) return chosen;
  const dot = fileName.lastIndexOf('.');
  const name = (dot > 0 ? fileName.slice(0, dot) : fileName).trim();
  return (name || fileName).slice(0, 400);
}

/**
 * The post's `content`: none, one image or video, or several images together, each with its alt text; or a
 * document with its title.
 */
function contentOf(
  media: PublishableMedia[],
  urns: string[],
  documentTitle: string | undefined,
): { content?: unknown } {
  if (urns.length === 0) return {};
  const first = media[0];
  if (first?.kind === 'document')
    return { content: { media: { id: urns[0]!, title: documentTitleOf(first.fileName, documentTitle) } } };
  const item = (index: number) => ({
    id: urns[index]!,
    ...(media[index]?.altText ? { altText: media[index].altText } : {}),
  });
  if (urns.length === 1) return { content: { media: item(0) } };
  return { content: { multiImage: { images: urns.map((_, index) => item(index)) } } };
}

/** The URNs of a listed post's media, in order. */
function mediaOf(post: ListedPost): string[] {
  if (post.content?.multiImage) return (post.content.multiImage.images ?? []).map((image) => image.id ?? '');
  return post.content?.media?.id ? [post.content.media.id] : [];
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return Buffer.concat(chunks);
}
