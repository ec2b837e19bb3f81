import type { Clock } from '../../core/clock.js';
import type { components } from '../../../generated/public-v1.js';
import type { TikTokConfig } from '../../core/config.js';
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
import type { CreatorInfoSource } from '../provider-adapter.js';
import { TikTokError, TikTokUnreachableError, type TikTokApi } from './api.js';
import type { TikTokTokens } from './tokens.js';

type PostSettings = components['schemas']['TikTokSettings'];

const MB = 1024 * 1024;
/** A video under this size goes up in one chunk (TikTok's media transfer rules). */
const SINGLE_CHUNK_BELOW = 5 * MB;
const CHUNK_TIMEOUT_SECONDS = 300;
/** TikTok's wait after a refused rate, a minute window. */
const RATE_LIMIT_WAIT_SECONDS = 60;

/** A publication TikTok knows by its `publish_id`. */
interface PublishReference extends Record<string, unknown> {
  publishId: string;
  mode: 'direct' | 'inbox';
  /** Where the chunks go (FILE_UPLOAD only). */
  uploadUrl?: string;
  total: number;
  chunkSize: number;
  chunkCount: number;
  /** The chunk the `upload` step sends (0-based). */
  chunk: number;
  /** When the video was all sent: status checks are spaced by how long TikTok has had it. */
  sentAt?: string;
  /** The account's handle, for the post's URL. */
  username: string | null;
}

interface StatusAnswer {
  status?: string;
  fail_reason?: string;
  publicaly_available_post_id?: (string | number)[];
  uploaded_bytes?: number;
  downloaded_bytes?: number;
}

/** TikTok's `fail_reason`s, in words for the user. */
const FAIL_REASONS: Record<string, string> = {
  file_format_check_failed:
    'TikTok does not accept the video’s format (MP4, MOV or WebM with H.264, H.265, VP8 or VP9)',
  duration_check_failed: 'the video is longer than the account may post, or shorter than TikTok accepts',
  frame_rate_check_failed: 'TikTok does not accept the video’s frame rate (23 to 60 frames per second)',
  picture_size_check_failed: 'TikTok does not accept the video’s picture size (360 to 4096 pixels on each side)',
  internal: 'TikTok failed to process the video',
  video_pull_failed: 'TikTok could not download the video from this server’s storage',
  publish_cancelled: 'the post was cancelled on TikTok',
  auth_removed: 'the account removed this app’s access',
  spam_risk_too_many_posts: 'the account reached the number of posts TikTok allows it in a day',
  spam_risk_user_banned_from_posting: 'TikTok does not let this account post at the moment',
  spam_risk_text: 'TikTok refused the caption',
  spam_risk: 'TikTok refused the post as a spam risk',
};

/** Refusals of `video/init` that no retry changes, in words for the user. */
const INIT_REFUSALS: Record<string, string> = {
  spam_risk_too_many_posts:
    'the account reached the number of posts TikTok allows it in a day; schedule the post again tomorrow',
  spam_risk_user_banned_from_posting: 'TikTok does not let this account post at the moment',
  reached_active_user_cap:
    'the app reached the number of TikTok accounts that may post through it today; schedule the post again tomorrow',
  unaudited_client_can_only_post_to_private_accounts:
    'this server’s TikTok app is not audited by TikTok yet, so it may only post with privacy SELF_ONLY ' +
    '(the operator asks TikTok for an audit)',
  privacy_level_option_mismatch:
    'the chosen privacy level is not one the creator allows now; read the creator info and choose again',
  url_ownership_unverified:
    'TikTok has not verified this server’s media domain (TIKTOK_VERIFIED_MEDIA_HOSTS); ' +
    'the operator verifies it with TikTok or removes it',
};

/**
 * Publishing a video to TikTok (Content Posting API). `init` asks TikTok for a publication —
 * `post/publish/video/init` for a direct post, with the post's caption, privacy and interactions,
 * checked against fresh creator info first, or `post/publish/inbox/video/init` to send it to the
 * creator's inbox — and records the `publish_id` before the first byte goes. The video then goes up
 * in chunks as TikTok requires (`Content-Range` on each PUT; chunks of TIKTOK_UPLOAD_CHUNK_BYTES, the
 * last taking the remainder, a video under 5 MB in one), each step recorded; the last chunk is the
 * irreversible point. A video on a host the operator verified with TikTok is pulled by TikTok instead
 * (`PULL_FROM_URL`), the init then being the irreversible point. Afterwards `post/publish/status/fetch`
 * is asked, as a job of the queue spaced out over time, until TikTok says the post is published, in
 * the creator's inbox, or failed.
 */
export class TikTokAdapter implements PublishingAdapter {
  // TikTok allows 6 video inits a minute per account; one upload at a time per account is plenty.
  readonly limits = { concurrencyPerChannel: 1, startsPerMinutePerChannel: 6 };

  constructor(
    private readonly config: TikTokConfig,
    private readonly api: TikTokApi,
    private readonly tokens: TikTokTokens,
    private readonly creators: CreatorInfoSource,
    private readonly clock: Clock,
  ) {}

  start(input: PublicationInput): Progress {
    const video = input.media.find((m) => m.kind === 'video');
    // Pulled by TikTok: the init publishes, and is the irreversible point.
    return { step: 'init', reference: {}, irreversible: video !== undefined && this.pulled(video) };
  }

  async run(input: PublicationInput, progress: Progress): Promise<StepResult> {
    if (progress.step === 'init') return this.init(input);
    const reference = progress.reference as PublishReference;
    if (progress.step === 'upload') return this.sendChunk(input, reference);
    if (progress.step === 'status') return this.check(input, reference);
    throw new PermanentPublishError('rejected_by_network', `unknown step ${progress.step}`);
  }

  async lookup(input: PublicationInput, progress: Progress): Promise<Lookup> {
    const reference = progress.reference as PublishReference;
    // An init whose answer was lost: TikTok's publish_id never reached us, so there is nothing to ask.
    if (typeof reference.publishId !== 'string')
      return {
        status: 'unknown',
        message: 'TikTok’s answer to the publication request was lost, and it cannot be asked without it',
      };
    const status = await this.status(input, reference);
    // The last chunk never completed the upload: nothing was published, and the chunk may go again.
    if (
      progress.step === 'upload' &&
      status.status === 'PROCESSING_UPLOAD' &&
      (status.uploaded_bytes ?? 0) < reference.total
    )
      return { status: 'absent' };
    const result = this.settle(reference, status);
    if ('pending' in result) return { status: 'pending', checkAgainInSeconds: result.pending.checkAgainInSeconds };
    if ('outcome' in result) return result.outcome;
    return { status: 'unknown', message: 'TikTok answered an unexpected status' };
  }

  private pulled(video: PublishableMedia): boolean {
    return this.config.verifiedMediaHosts.includes(new URL(video.url).host.toLowerCase());
  }

  private async init(input: PublicationInput): Promise<StepResult> {
    const video = input.media.find((m) => m.kind === 'video');
    if (!video) throw new PermanentPublishError('rejected_by_network', 'A TikTok post needs a video.');
    const settings = input.post.settings as PostSettings;
    const mode = settings.postMode;
    const pulled = this.pulled(video);
    const plan = chunking(video.size, this.config.uploadChunkBytes);
    const source = sourceInfo(video, pulled, plan);
    const { body, username } =
      mode === 'direct'
        ? await this.directPost(input, settings, source)
        : { body: { source_info: source }, username: input.channel.username };
    const path = mode === 'direct' ? '/v2/post/publish/video/init/' : '/v2/post/publish/inbox/video/init/';
    const { data } = await this.call<{ publish_id?: string; upload_url?: string }>(input, path, body, 'init');
    if (!data.publish_id) throw new TransientPublishError('TikTok answered no publish_id', { answered: true });
    const reference: PublishReference = {
      publishId: data.publish_id,
      mode,
      total: video.size,
      chunkSize: plan.chunkSize,
      chunkCount: plan.chunkCount,
      chunk: 0,
      username,
    };
    if (pulled)
      return {
        next: {
          step: 'status',
          reference: { ...reference, sentAt: this.clock.now().toISOString() },
          irreversible: true,
        },
      };
    if (!data.upload_url) throw new TransientPublishError('TikTok answered no upload_url', { answered: true });
    return { next: this.uploadStep({ ...reference, uploadUrl: data.upload_url }) };
  }

  /**
   * The init's body of a direct post, with the post's caption, privacy and interactions, and the
   * creator's username as TikTok has it now. TikTok requires the creator info to be read before every
   * direct post: the account may have reached its daily cap, or changed what it allows, since the post
   * was scheduled.
   */
  private async directPost(
    input: PublicationInput,
    settings: PostSettings,
    source: SourceInfo,
  ): Promise<{ body: unknown; username: string | null }> {
    const creator = await this.creatorInfo(input);
    if (!creator.canPost)
      throw new PermanentPublishError(
        'rejected_by_network',
        `The TikTok account cannot post now: ${creator.cannotPostReason ?? 'TikTok gave no reason'}.`,
      );
    if (!creator.privacyLevelOptions.includes(settings.privacyLevel)) {
      throw new PermanentPublishError(
        'rejected_by_network',
        `The TikTok account no longer allows the privacy level ${settings.privacyLevel} ` +
          `(it allows ${creator.privacyLevelOptions.join(', ') || 'none'}); edit the post and schedule it again.`,
      );
    }
    const body = {
      post_info: {
        title: input.post.content,
        privacy_level: settings.privacyLevel,
        disable_comment: settings.disableComment ?? false,
        disable_duet: settings.disableDuet ?? false,
        disable_stitch: settings.disableStitch ?? false,
        brand_content_toggle: settings.brandContentToggle ?? false,
        brand_organic_toggle: settings.brandOrganicToggle ?? false,
        is_aigc: settings.isAiGenerated ?? false,
      },
      source_info: source,
    };
    return { body, username: creator.creatorUsername || input.channel.username };
  }

  /** The step that sends chunk `reference.chunk`; irreversible when it is the last. */
  private uploadStep(reference: PublishReference): Progress {
    return { step: 'upload', reference, irreversible: reference.chunk === reference.chunkCount - 1 };
  }

  private async sendChunk(input: PublicationInput, reference: PublishReference): Promise<StepResult> {
    const video = input.media.find((m) => m.kind === 'video')!;
    const start = reference.chunk * reference.chunkSize;
    const last = reference.chunk === reference.chunkCount - 1;
    const end = last ? reference.total - 1 : start + reference.chunkSize - 1;
    const bytes = await readRange(await video.open({ start, end }));
    let answer;
    try {
      answer = await this.api.send(reference.uploadUrl!, {
        method: 'PUT',
        headers: {
          'Content-Type': video.contentType,
          'Content-Length': String(bytes.length),
          'Content-Range': `bytes ${start}-${end}/${reference.total}`,
        },
        body: bytes,
        signal: input.signal,
        timeoutSeconds: CHUNK_TIMEOUT_SECONDS,
      });
    } catch (error) {
      if (error instanceof TikTokUnreachableError) throw new TransientPublishError(error.message, { answered: false });
      throw error;
    }
    if (answer.status === 201 || answer.status === 206 || answer.status === 200) {
      if (!last) return { next: this.uploadStep({ ...reference, chunk: reference.chunk + 1 }) };
      return {
        next: {
          step: 'status',
          reference: { ...reference, sentAt: this.clock.now().toISOString() },
          irreversible: true,
        },
      };
    }
    if (answer.status === 429 || answer.status >= 500)
      throw new TransientPublishError(`TikTok answered ${answer.status} to a chunk of the video`, { answered: true });
    // 416: the chunk is not the one TikTok expects (it stored this one before, and its answer was
    // lost); 403: the upload URL expired (it lasts an hour); 404: TikTok no longer knows it. TikTok's
    // status of the publication says how far the upload got.
    if (answer.status === 416 || answer.status === 403 || answer.status === 404)
      return this.afterRefusedChunk(input, reference, answer.status);
    throw new PermanentPublishError('rejected_by_network', `TikTok refused a chunk of the video (${answer.status}).`);
  }

  /**
   * Where an upload stands after TikTok refused a chunk, from `status/fetch` (its `uploaded_bytes`):
   * after a 416 the upload goes on with the first chunk TikTok lacks; after a 403 or 404, the upload
   * URL is dead and nothing was published, so the post starts over with a new init. A video TikTok
   * holds whole, or a publication past its upload, is asked about as a sent video.
   */
  private async afterRefusedChunk(
    input: PublicationInput,
    reference: PublishReference,
    refusal: number,
  ): Promise<StepResult> {
    const status = await this.status(input, reference);
    const uploaded = status.uploaded_bytes ?? 0;
    if (status.status !== 'PROCESSING_UPLOAD' || uploaded >= reference.total)
      return {
        next: {
          step: 'status',
          reference: { ...reference, sentAt: this.clock.now().toISOString() },
          irreversible: true,
        },
      };
    if (refusal !== 416) {
      return {
        restart: {
          reason:
            `TikTok no longer takes the video’s upload (${refusal}: its upload URL lasts an hour) and published ` +
            'nothing; the post starts over with a new upload',
        },
      };
    }
    // TikTok stores whole chunks, in order: it holds chunks 0 to `uploaded / chunkSize - 1`.
    const next = uploaded / reference.chunkSize;
    if (!Number.isInteger(next) || next >= reference.chunkCount || next === reference.chunk) {
      throw new PermanentPublishError(
        'rejected_by_network',
        `TikTok refused chunk ${reference.chunk + 1} of ${reference.chunkCount} of the video (416) ` +
          `and holds ${uploaded} of its ${reference.total} bytes.`,
      );
    }
    return { next: this.uploadStep({ ...reference, chunk: next }) };
  }

  private async check(input: PublicationInput, reference: PublishReference): Promise<StepResult> {
    return this.settle(reference, await this.status(input, reference));
  }

  private async status(input: PublicationInput, reference: PublishReference): Promise<StatusAnswer> {
    const { data } = await this.call<StatusAnswer>(
      input,
      '/v2/post/publish/status/fetch/',
      { publish_id: reference.publishId },
      'status',
    );
    return data;
  }

  /** What TikTok's status of a publication means for the post. */
  private settle(reference: PublishReference, answer: StatusAnswer): StepResult {
    switch (answer.status) {
      case 'PUBLISH_COMPLETE': {
        const postId = answer.publicaly_available_post_id?.[0];
        const id = postId === undefined ? reference.publishId : String(postId);
        const url =
          postId !== undefined && reference.username
            ? `https://www.tiktok.com/@${encodeURIComponent(reference.username)}/video/${id}`
            : null;
        const note =
          postId === undefined
            ? 'TikTok published the post; it gives no public post id for a post that is not public.'
            : undefined;
        return { outcome: { status: 'published', releaseId: id, releaseUrl: url, ...(note ? { note } : {}) } };
      }
      case 'SEND_TO_USER_INBOX':
        return {
          outcome: {
            status: 'published',
            releaseId: reference.publishId,
            releaseUrl: null,
            note: 'The video is in the creator’s TikTok inbox: they finish the post in the TikTok app.',
          },
        };
      case 'FAILED':
        return { outcome: failedOutcome(answer.fail_reason) };
      default: {
        // PROCESSING_UPLOAD, PROCESSING_DOWNLOAD: asked again, later the longer TikTok has had it.
        const elapsed = reference.sentAt ? (this.clock.now().getTime() - Date.parse(reference.sentAt)) / 1000 : 0;
        return { pending: { checkAgainInSeconds: Math.round(Math.min(60, Math.max(3, elapsed / 3))) } };
      }
    }
  }

  private async creatorInfo(input: PublicationInput) {
    try {
      return await this.creators.creatorInfo(input.channel);
    } catch (error) {
      const status = (error as { status?: number }).status;
      // The creator info source speaks in API errors: 422 is the account, 502 TikTok.
      if (status === 422) {
        const refusal = (error as Error).cause;
        throw new ReconnectNeededError(
          (error as Error).message,
          refusal instanceof ReconnectNeededError ? refusal.logId : undefined,
        );
      }
      throw new TransientPublishError(`TikTok's creator info could not be read (${(error as Error).message})`, {
        answered: true,
      });
    }
  }

  /** Calls TikTok's API with the account's token; its errors as the publisher's. */
  private async call<T>(
    input: PublicationInput,
    path: string,
    body: unknown,
    step: 'init' | 'status',
  ): Promise<{ data: T }> {
    try {
      return await this.tokens.authorized(input.channel, (accessToken) =>
        this.api.call<T>(path, { accessToken, body, signal: input.signal }),
      );
    } catch (error) {
      if (error instanceof TikTokUnreachableError) throw new TransientPublishError(error.message, { answered: false });
      if (!(error instanceof TikTokError)) throw error;
      const logId = error.logId;
      if (error.code === 'rate_limit_exceeded' || error.status === 429) {
        throw new TransientPublishError(`TikTok’s rate limit for the account is reached (${error.code})`, {
          answered: true,
          retryAfterSeconds: RATE_LIMIT_WAIT_SECONDS,
          ...(logId ? { logId } : {}),
        });
      }
      if (error.status >= 500 || error.code === 'internal_error')
        throw new TransientPublishError(`TikTok failed (${error.code}: ${error.message})`, {
          answered: true,
          ...(logId ? { logId } : {}),
        });
      if (step === 'init' && error.code in INIT_REFUSALS) {
        const code =
          error.code === 'spam_risk_too_many_posts' || error.code === 'reached_active_user_cap'
            ? 'quota_exceeded'
            : 'rejected_by_network';
        throw new PermanentPublishError(code, `TikTok refused the post: ${INIT_REFUSALS[error.code]}.`, logId);
      }
      throw new PermanentPublishError(
        'rejected_by_network',
        `TikTok refused the ${step === 'init' ? 'post' : 'status request'} (${error.code}: ${error.message}).`,
        logId,
      );
    }
  }
}

/** Where TikTok takes the video from: pulled from its URL, or uploaded in the chunks of `plan`. */
type SourceInfo = ReturnType<typeof sourceInfo>;

function sourceInfo(video: PublishableMedia, pulled: boolean, plan: { chunkSize: number; chunkCount: number }) {
  return pulled
    ? { source: 'PULL_FROM_URL', video_url: video.url }
    : {
        source: 'FILE_UPLOAD',
        video_size: video.size,
        chunk_size: plan.chunkSize,
        total_chunk_count: plan.chunkCount,
      };
}

/** How a video of `size` bytes is cut: chunks of `preferred` bytes, the last taking the remainder; one under 5 MB. */
export function chunking(size: number, preferred: number): { chunkSize: number; chunkCount: number } {
  if (size < SINGLE_CHUNK_BELOW) return { chunkSize: size, chunkCount: 1 };
  const chunkSize = Math.min(preferred, size);
  return { chunkSize, chunkCount: Math.floor(size / chunkSize) };
}

function failedOutcome(reason: string | undefined): Outcome {
  const words = (reason && FAIL_REASONS[reason]) ?? `TikTok could not publish the video`;
  if (reason === 'auth_removed')
    return {
      status: 'failed',
      code: 'channel_needs_reconnect',
      message: `TikTok did not publish the post: ${words}. Reconnect the channel, then schedule the post again.`,
    };
  const code = reason === 'spam_risk_too_many_posts' ? 'quota_exceeded' : 'rejected_by_network';
  return {
    status: 'failed',
    code,
    message: `TikTok did not publish the post: ${words}${reason ? ` (${reason})` : ''}.`,
  };
}

async function readRange(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return Buffer.concat(chunks);
}
