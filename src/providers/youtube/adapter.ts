import type { Clock } from '../../core/clock.js';
import type { components } from '../../../generated/public-v1.js';
import type { OutboundClient } from '../../net/outbound-client.js';
import { callNetwork, type NetworkAnswer } from '../network-call.js';
import type { AccountTokens } from '../account-tokens.js';
import {
  PermanentPublishError,
  ReconnectNeededError,
  retryAfterSeconds,
  TransientPublishError,
  type Lookup,
  type Progress,
  type PublicationInput,
  type PublishingAdapter,
  type StepResult,
} from '../publishing-contract.js';
import { CREATE_CHANNEL_URL, signupRequired, type YouTubeSettings } from './connection.js';

type PostSettings = components['schemas']['YouTubeSettings'];

/** Chunks of a resumable upload are multiples of 256 KiB, but for the last. */
export const UPLOAD_CHUNK_UNIT = 256 * 1024;
const TIMEOUT_SECONDS = 120;
const MAX_ANSWER_BYTES = 256 * 1024;

type Answer = NetworkAnswer;

/** A call's answer, and the access token it was made with. */
interface Authorized {
  answer: Answer;
  token: string;
}

interface UploadReference extends Record<string, unknown> {
  /** The resumable session's URI, which is its own credential. */
  sessionUrl: string;
  total: number;
  /** Bytes YouTube holds so far. */
  offset: number;
}

/**
 * Publishing a video post to YouTube as a resumable upload (YouTube Data API v3, videos.insert):
 * `initiate` creates the upload session with the post's title, description, tags, privacy and
 * made-for-kids (its URI is recorded before the first byte goes); `upload` sends one chunk per step
 * (each recorded, so a resumed upload goes on from the `Range` YouTube reports instead of starting
 * over); `finish` sends the last chunk, the irreversible point: YouTube creates the video with it.
 * A `finish` whose answer was lost is asked about by querying the session, never sent again blindly.
 * Every request carries the channel's access token, as Google's resumable upload guide shows: one
 * YouTube refuses (it expired while a chunk went up) is refreshed once, and the upload goes on from
 * the byte the session reports. A session YouTube no longer knows (`404`: it expired) before the
 * video exists is started over with a new one, as the guide says.
 */
export class YouTubeAdapter implements PublishingAdapter {
  // YouTube allows a handful of uploads per channel per day; one at a time per channel is plenty.
  readonly limits = { concurrencyPerChannel: 1 };

  constructor(
    private readonly settings: YouTubeSettings,
    private readonly outbound: OutboundClient,
    private readonly tokens: AccountTokens,
    private readonly chunkBytes: number,
    private readonly clock: Clock,
  ) {}

  start(): Progress {
    return { step: 'initiate', reference: {}, irreversible: false };
  }

  async run(input: PublicationInput, progress: Progress): Promise<StepResult> {
    if (progress.step === 'initiate') return this.initiate(input);
    const reference = progress.reference as UploadReference;
    if (progress.step === 'upload') return this.sendChunk(input, reference);
    if (progress.step === 'finish') return this.sendChunk(input, reference);
    throw new PermanentPublishError('rejected_by_network', `unknown step ${progress.step}`);
  }

  async lookup(input: PublicationInput, progress: Progress): Promise<Lookup> {
    const reference = progress.reference as UploadReference;
    const { answer } = await this.askSession(input, reference);
    if (answer.status === 200 || answer.status === 201) return this.published(answer);
    // The session holds less than everything: the last chunk never arrived, so no video exists.
    if (answer.status === 308) return { status: 'absent' };
    if (answer.status === 404 || answer.status === 410)
      return { status: 'unknown', message: 'YouTube no longer knows the upload session', logId: requestIdOf(answer) };
    throw this.failure(answer);
  }

  private async initiate(input: PublicationInput): Promise<StepResult> {
    const video = input.media.find((m) => m.kind === 'video');
    if (!video) throw new PermanentPublishError('rejected_by_network', 'A YouTube post needs a video.');
    const settings = input.post.settings as PostSettings;
    const metadata = {
      snippet: {
        title: settings.title,
        description: settings.description ?? input.post.content,
        ...(settings.tags && settings.tags.length > 0 ? { tags: settings.tags } : {}),
      },
      status: { privacyStatus: settings.privacyStatus, selfDeclaredMadeForKids: settings.madeForKids },
    };
    const url = `${this.settings.apiUrl}/upload/youtube/v3/videos?uploadType=resumable&part=snippet,status`;
    const { answer } = await this.authorized(input, (token) =>
      this.send(
        input,
        'POST',
        url,
        {
          Authorization: `Bearer ${token}`,
          'Content-Type': 'application/json; charset=UTF-8',
          'X-Upload-Content-Length': String(video.size),
          'X-Upload-Content-Type': video.contentType,
        },
        JSON.stringify(metadata),
      ),
    );
    const location = answer.headers.location;
    if (answer.status !== 200 || typeof location !== 'string') throw this.failure(answer);
    const reference: UploadReference = { sessionUrl: location, total: video.size, offset: 0 };
    return { next: this.nextStep(reference) };
  }

  /** Sends the chunk after `offset`; the next step, or the video when it was the last. */
  private async sendChunk(input: PublicationInput, recorded: UploadReference): Promise<StepResult> {
    const video = input.media.find((m) => m.kind === 'video')!;
    // Where YouTube stands, not where this worker last heard it stood: after an interrupted chunk it
    // may hold part of it, and the upload goes on from the byte it reports.
    const asked = await this.askSession(input, recorded);
    const stands = this.standing(asked.answer);
    if (!('offset' in stands)) return stands;
    const reference = { ...recorded, offset: stands.offset };
    const end = Math.min(reference.offset + this.chunkBytes, reference.total) - 1;
    const bytes = await readRange(await video.open({ start: reference.offset, end }));
    const answer = await this.send(
      input,
      'PUT',
      reference.sessionUrl,
      {
        Authorization: `Bearer ${asked.token}`,
        'Content-Range': `bytes ${reference.offset}-${end}/${reference.total}`,
        'Content-Type': video.contentType,
      },
      bytes,
    );
    if (answer.status === 200 || answer.status === 201) return { outcome: this.published(answer) };
    if (answer.status === 308) return { next: this.nextStep({ ...reference, offset: storedBytes(answer) }) };
    if (answer.status === 401 && !signupRequired(answer.status, answer.body)) {
      // The token expired while the chunk went up: refreshed once, then the session says how far it got.
      const fresh = await this.tokens.afterRefusal(input.channel, asked.token);
      const again = await this.send(input, 'PUT', reference.sessionUrl, statusQuery(reference, fresh));
      if (again.status === 401) throw this.failure(again);
      const after = this.standing(again);
      return 'offset' in after ? { next: this.nextStep({ ...reference, offset: after.offset }) } : after;
    }
    // The session expired (YouTube keeps one a week) and never made the video: a new one starts over.
    if (answer.status === 404 || answer.status === 410) return sessionGone();
    // A passing failure mid-upload: the session says how far it got, and the upload goes on from there.
    if (answer.status >= 500 || answer.status === 429) {
      throw new TransientPublishError(`YouTube answered ${answer.status} to a chunk`, {
        answered: true,
        retryAfterSeconds: retryAfterSeconds(answer.headers['retry-after'], this.clock.now()),
        logId: requestIdOf(answer),
      });
    }
    throw this.failure(answer);
  }

  /**
   * Asks the upload session how far it got (`PUT` with `Content-Range: bytes *\/TOTAL`), with the
   * channel's token, refreshed once if YouTube refuses it; the answer, and the token that worked.
   */
  private askSession(input: PublicationInput, reference: UploadReference): Promise<Authorized> {
    return this.authorized(input, (token) =>
      this.send(input, 'PUT', reference.sessionUrl, statusQuery(reference, token)),
    );
  }

  /**
   * What the session's answer to a status query says: the video exists, the session is gone (it
   * holds nothing and the upload starts over), or how many bytes it holds.
   */
  private standing(answer: Answer): StepResult | { offset: number } {
    if (answer.status === 200 || answer.status === 201) return { outcome: this.published(answer) };
    // Asked before the last chunk went (or after YouTube said it never arrived): no video exists.
    if (answer.status === 404 || answer.status === 410) return sessionGone();
    if (answer.status !== 308) throw this.failure(answer);
    return { offset: storedBytes(answer) };
  }

  /** The step that sends the chunk after `offset`: `finish` when it is the last, the irreversible one. */
  private nextStep(reference: UploadReference): Progress {
    const last = reference.total - reference.offset <= this.chunkBytes;
    return { step: last ? 'finish' : 'upload', reference, irreversible: last };
  }

  private published(answer: Answer): Lookup & { status: 'published' } {
    const video = JSON.parse(answer.body) as { id: string };
    return {
      status: 'published',
      releaseId: video.id,
      releaseUrl: `https://www.youtube.com/watch?v=${encodeURIComponent(video.id)}`,
    };
  }

  /**
   * Runs a call with the channel's access token, once more with a fresh one if YouTube refuses it
   * (a refusal because the account has no YouTube channel is no token's fault: it is answered as is).
   */
  private async authorized(input: PublicationInput, call: (token: string) => Promise<Answer>): Promise<Authorized> {
    const token = await this.tokens.accessToken(input.channel);
    const answer = await call(token);
    if (answer.status !== 401 || signupRequired(answer.status, answer.body)) return { answer, token };
    const fresh = await this.tokens.afterRefusal(input.channel, token);
    const again = await call(fresh);
    if (again.status === 401 && !signupRequired(again.status, again.body))
      throw new ReconnectNeededError('YouTube refused the channel’s access token', requestIdOf(again));
    return { answer: again, token: fresh };
  }

  private send(
    input: PublicationInput,
    method: string,
    url: string,
    headers: Record<string, string>,
    body?: Buffer | string,
  ): Promise<Answer> {
    return callNetwork(this.outbound, 'YouTube', url, {
      method,
      headers: { Accept: 'application/json', ...headers },
      ...(body !== undefined ? { body } : {}),
      signal: input.signal,
      timeoutSeconds: TIMEOUT_SECONDS,
      maxResponseBytes: MAX_ANSWER_BYTES,
    });
  }

  /** YouTube's error, as something a user can act on, with Google's id of the answer. */
  private failure(answer: Answer): Error {
    const logId = requestIdOf(answer);
    let reason: string | undefined;
    let message = `YouTube answered ${answer.status}`;
    try {
      const error = (
        JSON.parse(answer.body) as { error?: { message?: string; errors?: { reason?: string; message?: string }[] } }
      ).error;
      reason = error?.errors?.[0]?.reason;
      message = error?.message ?? error?.errors?.[0]?.message ?? message;
    } catch {
      // Not JSON: the status says it.
    }
    if (reason === 'youtubeSignupRequired') {
      return new PermanentPublishError(
        'channel_needs_reconnect',
        `The Google account of this channel has no YouTube channel (${reason}). Create one with that account ` +
          `at ${CREATE_CHANNEL_URL}, or reconnect the channel with the Google account that owns it; then ` +
          'schedule the post again.',
        logId,
      );
    }
    if (answer.status === 401) return new ReconnectNeededError(message, logId);
    if (reason === 'quotaExceeded' || reason === 'uploadLimitExceeded' || reason === 'dailyLimitExceeded') {
      return new PermanentPublishError(
        'quota_exceeded',
        `YouTube's quota for this channel is used up (${reason}); it resets at midnight Pacific Time. ` +
          `Schedule the post again after that. ${message}`,
        logId,
      );
    }
    if (answer.status === 429 || answer.status >= 500) {
      return new TransientPublishError(message, {
        answered: true,
        retryAfterSeconds: retryAfterSeconds(answer.headers['retry-after'], this.clock.now()),
        logId,
      });
    }
    return new PermanentPublishError(
      'rejected_by_network',
      `YouTube refused the video${reason ? ` (${reason})` : ''}: ${message}`,
      logId,
    );
  }
}

/**
 * Google's id of an answer of its upload server (`X-GUploader-UploadID`: on a resumable upload, the
 * session's id), which Google's support asks for; none when the answer has no such header.
 */
function requestIdOf(answer: Answer): string | undefined {
  const id = answer.headers['x-guploader-uploadid'];
  return typeof id === 'string' && id !== '' ? id : undefined;
}

/** The headers of a status query on an upload session: an empty PUT with `Content-Range: bytes *\/TOTAL`. */
function statusQuery(reference: UploadReference, token: string): Record<string, string> {
  return { Authorization: `Bearer ${token}`, 'Content-Range': `bytes */${reference.total}`, 'Content-Length': '0' };
}

/** A session YouTube no longer knows, before the video exists: the attempt starts over with a new one. */
function sessionGone(): StepResult {
  return {
    restart: {
      reason: 'YouTube no longer knows the upload session (it expired); the upload starts over with a new session',
    },
  };
}

/** How many bytes the session holds, from the `Range: bytes=0-N` of a 308 (none without it). */
function storedBytes(answer: Answer): number {
  const range = answer.headers.range;
  const match = typeof range === 'string' ? /^bytes=0-(\d+)$/.exec(range) : null;
  return match ? Number(match[1]) + 1 : 0;
}

async function readRange(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return Buffer.concat(chunks);
}
