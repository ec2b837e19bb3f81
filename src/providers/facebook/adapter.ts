import { randomBytes } from 'node:crypto';
import type { Clock } from '../../core/clock.js';
import type { Keyring } from '../../crypto/keyring.js';
import { channelCredentials } from '../account-credentials.js';
import { graphErrorOf, publishErrorOf, type GraphAnswer, type GraphApi, type GraphRequest } from '../meta/graph.js';
import type { StoredSettingsOf } from '../provider-adapter.js';
import {
  PermanentPublishError,
  ReconnectNeededError,
  TransientPublishError,
  type Lookup,
  type Outcome,
  type Progress,
  type PublicationInput,
  type PublishableMedia,
  type PublishingAdapter,
  type StepResult,
} from '../publishing-contract.js';
import { facebookUserToken } from './credentials.js';

const NETWORK = 'Facebook';
/** A post, photo, video or comment answers within this, or the call is given up (and Facebook asked about it). */
const PUBLISH_TIMEOUT_SECONDS = 60;
/** A transfer of the Resumable Upload API carries at most this much of a video; the next step sends the rest. */
export const TRANSFER_BYTES = 16 * 1024 * 1024;
const TRANSFER_TIMEOUT_SECONDS = 600;
/**
 * How long after a post could have reached Facebook its absence from the Page's posts is believed:
 * a moment for a post or a photo, longer for a video, which Facebook shows once it has processed it.
 */
const SETTLE_SECONDS = { post: 60, video: 15 * 60 };
/** How far the search reaches before the step began: Meta's clock and this server's may differ. */
const CLOCK_SKEW_MS = 2 * 60_000;
/** The Page's posts (or the post's comments) read at most, a page of 25 at a time, in a search. */
const SEARCH_PAGES = 4;

type StoredFacebookSettings = StoredSettingsOf<'facebook'>;

/** What a publication has done so far. */
interface FacebookReference extends Record<string, unknown> {
  /** The unpublished photos uploaded for a post of several, in the post's order. */
  photos?: string[];
  /** The video's upload session, how far it got, and the file's handle once every byte is in. */
  upload?: { session: string; handle?: string };
  /** When the irreversible step was last recorded to be sent: a post whose lost answer is sought from then. */
  startedAt?: string;
}

/** A post of the Page as `/{page-id}/posts` lists it. */
interface PagePost {
  id: string;
  message?: string;
  created_time?: string;
  permalink_url?: string;
  status_type?: string;
  attachments?: { data?: Attachment[] };
}
interface Attachment {
  target?: { id?: string };
  subattachments?: { data?: Attachment[] };
}

/** A comment as `/{object-id}/comments` lists it. */
interface PageComment {
  id: string;
  message?: string;
  created_time?: string;
  from?: { id?: string };
}

interface Listing<T> {
  data?: T[];
  paging?: { next?: string };
}

/**
 * Publishing to a Facebook Page (the Pages API, with the Page's access token). A post is one call to
 * the Page: `POST /{page-id}/feed` for text, with the settings' link (without one, Facebook previews the
 * first link of the text itself), `POST /{page-id}/photos` for a single photo, or, for several, each
 * photo uploaded unpublished (`published=false`) as a step of its own, then `/feed` with them as
 * `attached_media`. A video goes up with the Resumable Upload API (a session of the operator's app, with
 * the user token the Page's was derived from; transfers from the session's `file_offset`, so a cut
 * transfer resumes where Meta's bytes end), then `POST /{page-id}/videos` with the file's handle. A photo
 * carries its alt text as `alt_text_custom`. The first comment is a publication of its own: `POST
 * /{object-id}/comments` as the Page.
 *
 * The feed, photo, video and comment calls are the irreversible points: Meta has no idempotency key,
 * so after an answer that may have been lost the Page's recent posts (or the post's comments) are
 * searched, from when the step was recorded, for one with the publication's text and kind. Found, it
 * is published; not found once Facebook would show it, it is sent again; a search that could not reach
 * back to the step leaves it `outcome_unknown`. The release's URL is the post's `permalink_url`.
 */
export class FacebookAdapter implements PublishingAdapter {
  // One at a time per Page: a post's first comment and the searches after lost answers stay simple.
  readonly limits = { concurrencyPerChannel: 1 };

  constructor(
    private readonly graph: GraphApi,
    private readonly keyring: Keyring,
    /** The operator's Meta app, which holds video upload sessions. */
    private readonly appId: string,
    private readonly clock: Clock,
  ) {}

  /**
   * The media's first step, or `ready`, which leads to the irreversible step at once: that step is
   * never a publication's first, so that it is recorded (with the time its search begins) just before
   * its call.
   */
  start(input: PublicationInput): Progress {
    const first = this.afterMedia(input, {});
    if (first.irreversible) return { step: 'ready', reference: {}, irreversible: false };
    return first;
  }

  async run(input: PublicationInput, progress: Progress): Promise<StepResult> {
    const reference = progress.reference as FacebookReference;
    switch (progress.step) {
      case 'ready':
        return { next: this.afterMedia(input, reference) };
      case 'photo-upload':
        return this.uploadPhoto(input, reference);
      case 'upload-session':
        return this.startUpload(input, reference);
      case 'upload-transfer':
        return this.transfer(input, reference);
      case 'feed':
        return { outcome: await this.feed(input, reference) };
      case 'photo':
        return { outcome: await this.photo(input) };
      case 'video':
        return { outcome: await this.video(input, reference) };
      case 'comment':
        return { outcome: await this.comment(input) };
      default:
        throw new PermanentPublishError('rejected_by_network', `unknown step ${progress.step}`);
    }
  }

  async lookup(input: PublicationInput, progress: Progress): Promise<Lookup> {
    const reference = progress.reference as FacebookReference;
    const since = Date.parse(reference.startedAt ?? this.clock.now().toISOString()) - CLOCK_SKEW_MS;
    const search =
      progress.step === 'comment'
        ? await this.findComment(input, since)
        : await this.findPost(input, progress.step, reference, since);
    if (search.found) return search.found;
    if (!search.complete)
      return {
        status: 'unknown',
        message:
          progress.step === 'comment'
            ? 'the post has too many comments since the comment was sent to find it among them'
            : 'the Page posted too often since the post was sent to find it among its posts',
      };
    const settle = progress.step === 'video' ? SETTLE_SECONDS.video : SETTLE_SECONDS.post;
    const settledAt = since + CLOCK_SKEW_MS + (PUBLISH_TIMEOUT_SECONDS + settle) * 1000;
    const wait = Math.ceil((settledAt - this.clock.now().getTime()) / 1000);
    // Not among the Page's posts yet: Facebook may not show it yet; asked again once it would.
    if (wait > 0) return { status: 'pending', checkAgainInSeconds: wait };
    // Sent anew as a step of its own: a later look-up searches and waits from the new sending, not this one.
    return {
      status: 'absent',
      again: { ...progress, reference: { ...reference, startedAt: this.clock.now().toISOString() } },
    };
  }

  /** The step after the media the reference holds: the next media's, or the irreversible one. */
  private afterMedia(input: PublicationInput, reference: FacebookReference): Progress {
    const irreversible = (step: string): Progress => ({
      step,
      reference: { ...reference, startedAt: this.clock.now().toISOString() },
      irreversible: true,
    });
    if (input.comment) return irreversible('comment');
    const video = input.media.find((media) => media.kind === 'video');
    if (video) {
      if (!reference.upload) return { step: 'upload-session', reference, irreversible: false };
      if (!reference.upload.handle) return { step: 'upload-transfer', reference, irreversible: false };
      return irreversible('video');
    }
    if (input.media.length === 1) return irreversible('photo');
    const photos = reference.photos ?? [];
    if (photos.length < input.media.length)
      return { step: 'photo-upload', reference: { ...reference, photos }, irreversible: false };
    return irreversible('feed');
  }

  // ---- the steps ----

  /** One photo of several, uploaded unpublished to be attached to the post. */
  private async uploadPhoto(input: PublicationInput, reference: FacebookReference): Promise<StepResult> {
    const photos = reference.photos ?? [];
    const media = input.media[photos.length]!;
    const answer = await this.send(input, 'POST', `${pageIdOf(input)}/photos`, 'a photo of the post', {
      bytes: await photoForm(media, { published: 'false' }),
    });
    const id = stringOf(answer.data.id);
    if (!id) throw unexpected('a photo upload');
    return { next: this.afterMedia(input, { ...reference, photos: [...photos, id] }) };
  }

  /** A post with one photo: the photo published on the Page, with the text as its message. */
  private async photo(input: PublicationInput): Promise<Outcome> {
    const fields: Record<string, string> = { published: 'true' };
    if (input.post.content) fields.message = input.post.content;
    const answer = await this.send(
      input,
      'POST',
      `${pageIdOf(input)}/photos`,
      'the post',
      { bytes: await photoForm(input.media[0]!, fields), timeoutSeconds: PUBLISH_TIMEOUT_SECONDS },
      { irreversible: true },
    );
    const postId = stringOf(answer.data.post_id) ?? stringOf(answer.data.id);
    if (!postId) throw unexpected('the photo post');
    return this.published(input, postId);
  }

  /** A post of text (with its link), or of the photos uploaded for it. */
  private async feed(input: PublicationInput, reference: FacebookReference): Promise<Outcome> {
    const params: Record<string, string> = {};
    if (input.post.content) params.message = input.post.content;
    const link = (input.post.settings as StoredFacebookSettings | null)?.link;
    if (link) params.link = link;
    (reference.photos ?? []).forEach((id, index) => {
      params[`attached_media[${index}]`] = JSON.stringify({ media_fbid: id });
    });
    const answer = await this.send(
      input,
      'POST',
      `${pageIdOf(input)}/feed`,
      'the post',
      { params, timeoutSeconds: PUBLISH_TIMEOUT_SECONDS },
      { irreversible: true },
    );
    const id = stringOf(answer.data.id);
    if (!id) throw unexpected('the post');
    return this.published(input, id);
  }

  /** The video's upload session, held by the operator's app for the user the Page's token came from. */
  private async startUpload(input: PublicationInput, reference: FacebookReference): Promise<StepResult> {
    const video = input.media.find((media) => media.kind === 'video')!;
    const answer = await this.send(input, 'POST', `${this.appId}/uploads`, 'the video’s upload', {
      params: { file_name: video.fileName, file_length: String(video.size), file_type: video.contentType },
      token: 'user',
    });
    const session = stringOf(answer.data.id);
    if (!session) throw unexpected('the video’s upload session');
    return { next: { step: 'upload-transfer', reference: { ...reference, upload: { session } }, irreversible: false } };
  }

  /**
   * Bytes of the video from where Meta's end (the session's `file_offset`, asked first: a transfer cut
   * short keeps what arrived), up to TRANSFER_BYTES; the file's handle once every byte is in.
   */
  private async transfer(input: PublicationInput, reference: FacebookReference): Promise<StepResult> {
    const video = input.media.find((media) => media.kind === 'video')!;
    const { session } = reference.upload!;
    // The Resumable Upload API's guide sends the user token as `OAuth`.
    const status = await this.send(input, 'GET', session, 'the video’s upload', { token: 'user', scheme: 'OAuth' });
    const offset = Number(status.data.file_offset);
    if (!Number.isSafeInteger(offset) || offset < 0 || offset > video.size) throw unexpected('the video’s upload');
    const end = Math.min(video.size, offset + TRANSFER_BYTES);
    const body = await bytesOf(video, offset, end);
    const answer = await this.send(input, 'POST', session, 'the video’s upload', {
      bytes: { body, headers: { 'Content-Type': 'application/octet-stream', file_offset: String(offset) } },
      token: 'user',
      scheme: 'OAuth',
      timeoutSeconds: TRANSFER_TIMEOUT_SECONDS,
    });
    const handle = stringOf(answer.data.h);
    const upload = { session, ...(handle ? { handle } : {}) };
    return { next: this.afterMedia(input, { ...reference, upload }) };
  }

  /** The uploaded video published on the Page, with the text as its description. */
  private async video(input: PublicationInput, reference: FacebookReference): Promise<Outcome> {
    const params: Record<string, string> = { fbuploader_video_file_chunk: reference.upload!.handle! };
    if (input.post.content) params.description = input.post.content;
    const answer = await this.send(
      input,
      'POST',
      `${pageIdOf(input)}/videos`,
      'the video',
      { params, timeoutSeconds: PUBLISH_TIMEOUT_SECONDS },
      { irreversible: true },
    );
    const videoId = stringOf(answer.data.id);
    if (!videoId) throw unexpected('the video');
    // The video's post and its permalink (relative to www.facebook.com, unlike a post's).
    const read = await this.readNode(input, videoId, 'permalink_url,post_id');
    const postId = stringOf(read?.post_id) ?? `${pageIdOf(input)}_${videoId}`;
    const permalink = stringOf(read?.permalink_url);
    return {
      status: 'published',
      releaseId: postId,
      releaseUrl: permalink ? new URL(permalink, 'https://www.facebook.com').href : fallbackUrl(postId),
    };
  }

  /** The post's first comment, made as the Page. */
  private async comment(input: PublicationInput): Promise<Outcome> {
    const on = input.comment!.on;
    const answer = await this.send(
      input,
      'POST',
      `${on.releaseId}/comments`,
      'the first comment',
      { params: { message: input.post.content }, timeoutSeconds: PUBLISH_TIMEOUT_SECONDS },
      { irreversible: true },
    );
    const id = stringOf(answer.data.id);
    if (!id) throw unexpected('the comment');
    return this.commentPublished(input, id);
  }

  // ---- after a lost answer ----

  /**
   * The Page's post this publication made, among its posts since `since` (newest first): the same
   * text, and the same kind (the photos attached, a photo, a video, or neither).
   */
  private async findPost(
    input: PublicationInput,
    step: string,
    reference: FacebookReference,
    since: number,
  ): Promise<{ found?: Outcome; complete: boolean }> {
    const fields = 'id,message,created_time,permalink_url,status_type,attachments{target,subattachments}';
    let url: string | undefined = `${pageIdOf(input)}/posts`;
    let params: Record<string, string> | undefined = { fields, limit: '25' };
    for (let page = 0; page < SEARCH_PAGES && url; page++) {
      const answer: GraphAnswer<Listing<PagePost>> = await this.send<Listing<PagePost>>(
        input,
        'GET',
        url,
        'the search for the post',
        params ? { params } : {},
      );
      for (const post of answer.data.data ?? []) {
        const at = timeOf(post.created_time);
        if (at !== undefined && at < since) return { complete: true };
        if (at === undefined || (post.message ?? '') !== input.post.content) continue;
        if (!sameKind(post, step, reference)) continue;
        return {
          found: {
            status: 'published',
            releaseId: post.id,
            releaseUrl: post.permalink_url
              ? new URL(post.permalink_url, 'https://www.facebook.com').href
              : fallbackUrl(post.id),
          },
          complete: true,
        };
      }
      url = answer.data.paging?.next;
      params = undefined;
    }
    return { complete: url === undefined };
  }

  /** The Page's comment on the post with the comment's text, made since `since`. */
  private async findComment(input: PublicationInput, since: number): Promise<{ found?: Outcome; complete: boolean }> {
    let url: string | undefined = `${input.comment!.on.releaseId}/comments`;
    let params: Record<string, string> | undefined = {
      fields: 'id,message,created_time,from',
      filter: 'stream',
      limit: '25',
    };
    for (let page = 0; page < SEARCH_PAGES && url; page++) {
      const answer: GraphAnswer<Listing<PageComment>> = await this.send<Listing<PageComment>>(
        input,
        'GET',
        url,
        'the search for the comment',
        params ? { params } : {},
      );
      const found = (answer.data.data ?? []).find(
        (comment) =>
          comment.from?.id === pageIdOf(input) &&
          (comment.message ?? '') === input.post.content &&
          (timeOf(comment.created_time) ?? 0) >= since,
      );
      if (found) return { found: this.commentPublished(input, found.id), complete: true };
      url = answer.data.paging?.next;
      params = undefined;
    }
    return { complete: url === undefined };
  }

  // ---- calls ----

  /**
   * A call of the Graph API with the Page's token (or the user's, for an upload session); a refusal
   * as what it means for the publication. An irreversible call that Meta answered with a failure of
   * its own (a 5xx, an unknown error) may still have made the post: it is asked about, not sent again.
   */
  private async send<T = Record<string, unknown>>(
    input: PublicationInput,
    method: GraphRequest['method'],
    path: string,
    what: string,
    request: Omit<GraphRequest, 'method' | 'accessToken' | 'signal'> & { token?: 'page' | 'user' } = {},
    options: { irreversible?: boolean } = {},
  ): Promise<GraphAnswer<T>> {
    const { token = 'page', ...rest } = request;
    const answer = await this.graph.call<T>(path, {
      ...rest,
      method,
      accessToken: this.tokenOf(input, token),
      signal: input.signal,
    });
    if (!graphErrorOf(answer)) return answer;
    const error = publishErrorOf(answer, what, NETWORK);
    // A rate limit names a wait: Meta did not take the call.
    if (options.irreversible && error instanceof TransientPublishError && error.retryAfterSeconds === undefined)
      throw new TransientPublishError(error.message, {
        answered: false,
        ...(error.logId ? { logId: error.logId } : {}),
      });
    throw error;
  }

  private tokenOf(input: PublicationInput, which: 'page' | 'user'): string {
    const credentials = input.channel.credentials ? channelCredentials(this.keyring, input.channel) : undefined;
    if (!credentials?.accessToken)
      throw new ReconnectNeededError(
        `the channel ${input.channel.name} holds no Facebook Page token; connect it again`,
      );
    if (which === 'page') return credentials.accessToken;
    const user = facebookUserToken(credentials);
    if (!user)
      throw new ReconnectNeededError(
        `the channel ${input.channel.name} holds no Facebook user token (a video’s upload needs one); connect it again`,
      );
    return user;
  }

  /** An object's fields, or undefined when Meta does not answer them (the post is made either way). */
  private async readNode(input: PublicationInput, id: string, fields: string) {
    try {
      return (await this.send(input, 'GET', id, 'the post', { params: { fields } })).data;
    } catch {
      return undefined;
    }
  }

  /** The published post, with its permalink (`permalink_url`; the post's id on facebook.com if Meta gives none). */
  private async published(input: PublicationInput, postId: string): Promise<Outcome> {
    const permalink = stringOf((await this.readNode(input, postId, 'permalink_url'))?.permalink_url);
    return {
      status: 'published',
      releaseId: postId,
      releaseUrl: permalink ? new URL(permalink, 'https://www.facebook.com').href : fallbackUrl(postId),
    };
  }

  /** The comment, shown at the post's permalink with its id (`comment_id`, the part after the post's). */
  private commentPublished(input: PublicationInput, id: string): Outcome {
    const on = input.comment!.on;
    let releaseUrl: string | null = null;
    if (on.releaseUrl) {
      const url = new URL(on.releaseUrl);
      url.searchParams.set('comment_id', id.includes('_') ? id.split('_').at(-1)! : id);
      releaseUrl = url.href;
    }
    return { status: 'published', releaseId: id, releaseUrl };
  }
}

// ---- helpers ----

function pageIdOf(input: PublicationInput): string {
  const id = input.channel.external_id;
  if (!id) throw new ReconnectNeededError(`the channel ${input.channel.name} is not connected to a Facebook Page`);
  return id;
}

const stringOf = (value: unknown) =>
  typeof value === 'string' && value !== '' ? value : typeof value === 'number' ? String(value) : undefined;

const unexpected = (what: string) =>
  new TransientPublishError(`Facebook answered ${what} without what it documents`, { answered: true });

/** facebook.com shows a post at its id: where a post is when Meta gives no permalink. */
const fallbackUrl = (postId: string) => `https://www.facebook.com/${postId}`;

/** Meta's times (`2026-11-27T12:00:00+0000`) in ms. */
function timeOf(value: string | undefined): number | undefined {
  if (!value) return undefined;
  const at = Date.parse(value.replace(/([+-]\d{2})(\d{2})$/, '$1:$2'));
  return Number.isNaN(at) ? undefined : at;
}

/** Whether a post of the Page is of the kind the step makes. */
function sameKind(post: PagePost, step: string, reference: FacebookReference): boolean {
  if (step === 'video') return post.status_type === 'added_video';
  if (step === 'photo') return post.status_type === 'added_photos';
  const photos = reference.photos ?? [];
  if (photos.length === 0) return post.status_type !== 'added_photos' && post.status_type !== 'added_video';
  const attached = new Set(targetsOf(post.attachments?.data ?? []));
  return photos.some((id) => attached.has(id));
}

function targetsOf(attachments: Attachment[]): string[] {
  return attachments.flatMap((attachment) => [
    ...(attachment.target?.id ? [attachment.target.id] : []),
    ...targetsOf(attachment.subattachments?.data ?? []),
  ]);
}

async function bytesOf(media: PublishableMedia, start: number, end: number): Promise<Buffer> {
  if (end <= start) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  for await (const chunk of await media.open({ start, end: end - 1 }))
    chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return Buffer.concat(chunks);
}

/** A photo as a multipart form (`source`, the Photo reference's file upload), with its alt text and `fields`. */
async function photoForm(
  media: PublishableMedia,
  fields: Record<string, string>,
): Promise<{ body: Buffer; headers: Record<string, string> }> {
  const boundary = `----facebook-${randomBytes(12).toString('hex')}`;
  const all = { ...fields, ...(media.altText ? { alt_text_custom: media.altText } : {}) };
  const parts: Buffer[] = Object.entries(all).map(([name, value]) =>
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`),
  );
  parts.push(
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="source"; filename="${media.fileName.replace(/["\r\n]/g, '_')}"\r\n` +
        `Content-Type: ${media.contentType}\r\n\r\n`,
    ),
    await bytesOf(media, 0, media.size),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  );
  return { body: Buffer.concat(parts), headers: { 'Content-Type': `multipart/form-data; boundary=${boundary}` } };
}
