import type { Channel } from '../../channels/tables.js';
import type { Clock } from '../../core/clock.js';
import type { Keyring } from '../../crypto/keyring.js';
import type { Db } from '../../db/database.js';
import { channelCredentials } from '../account-credentials.js';
import type { SettingsOf } from '../provider-adapter.js';
import {
  PermanentPublishError,
  ReconnectNeededError,
  TransientPublishError,
  type Lookup,
  type Progress,
  type PublicationInput,
  type PublishableMedia,
  type PublishingAdapter,
  type StepResult,
} from '../publishing-contract.js';
import { MastodonError, publishErrorOf, type MastodonApi } from './api.js';
import { mastodonCredentials, type MastodonCredentials } from './connection.js';

/** Where the media of a part stand: the instance's ids of those uploaded, in order, and of those it still processes. */
interface MediaReference extends Record<string, unknown> {
  uploaded: string[];
  processing: string[];
  /** When the last one was sent, while some are processed: polls are spaced by how long the instance has had them. */
  sentAt?: string;
}

/** The status about to be created: its Idempotency-Key, the media it carries, and when it was planned. */
interface StatusReference extends Record<string, unknown> {
  idempotencyKey: string;
  mediaIds: string[];
  plannedAt: string;
}

interface StatusAnswer {
  id?: string;
  url?: string | null;
  uri?: string;
}

/**
 * Mastodon keeps an Idempotency-Key for an hour from the status it created (docs.joinmastodon.org,
 * `POST /api/v1/statuses`). A status planned longer ago than this may be past it: its key is no
 * longer trusted to find it, and the post's outcome is unknown rather than risking a second status.
 */
const IDEMPOTENCY_TRUSTED_MS = 50 * 60_000;
const UPLOAD_TIMEOUT_SECONDS = 300;

/**
 * Publishing a status to a Mastodon instance (docs.joinmastodon.org). Each media of the part goes
 * up as a step of its own (`POST /api/v2/media`, with its alt text as `description`); an instance
 * that processes one after the upload (`202`, videos) is polled (`GET /api/v1/media/:id`) as a job
 * of the queue until it is ready (`200`; `206` while processing). Then the status is created (`POST
 * /api/v1/statuses`: text, media, visibility, content warning, sensitive, language, and
 * `in_reply_to_id` for a thread's part after the first), the irreversible point. Every status
 * carries an `Idempotency-Key` made of the post, the attempt and the part: the instance answers the
 * first status again to the same key from the same account for an hour, so a status whose answer
 * was lost is asked about by sending it again with its key, which creates nothing twice.
 */
export class MastodonAdapter implements PublishingAdapter {
  // A few posts of an account at once (each thread goes part after part); the instance's rate limits
  // (30 media uploads in 30 minutes, 300 statuses in 3 hours) answer 429 with when to come back.
  readonly limits = { concurrencyPerChannel: 2 };

  constructor(
    private readonly api: MastodonApi,
    private readonly db: Db,
    private readonly keyring: Keyring,
    private readonly clock: Clock,
  ) {}

  start(input: PublicationInput): Progress {
    if (input.media.length === 0) return this.statusStep(input, []);
    const reference: MediaReference = { uploaded: [], processing: [] };
    return { step: 'media', reference, irreversible: false };
  }

  async run(input: PublicationInput, progress: Progress): Promise<StepResult> {
    const account = await this.account(input.channel);
    switch (progress.step) {
      case 'media':
        return this.upload(input, account, progress.reference as MediaReference);
      case 'processing':
        return this.poll(input, account, progress.reference as MediaReference);
      case 'status':
        return { outcome: await this.createStatus(input, account, progress.reference as StatusReference) };
      default:
        throw new PermanentPublishError('rejected_by_network', `unknown step ${progress.step}`);
    }
  }

  /**
   * After a status whose answer was lost (or a worker stopped while it was sent): the status is sent
   * again with its Idempotency-Key, which answers the status the instance created then, or creates it
   * now if the first request never arrived; once the key may have expired, nobody can tell.
   */
  async lookup(input: PublicationInput, progress: Progress): Promise<Lookup> {
    if (progress.step !== 'status') return { status: 'absent' };
    const reference = progress.reference as StatusReference;
    const plannedAt = Date.parse(reference.plannedAt);
    if (!(this.clock.now().getTime() - plannedAt < IDEMPOTENCY_TRUSTED_MS)) {
      return {
        status: 'unknown',
        message:
          'the status was sent over an hour ago without an answer, and the instance keeps its Idempotency-Key ' +
          'for an hour only',
      };
    }
    try {
      return await this.createStatus(input, await this.account(input.channel), reference);
    } catch (error) {
      if (error instanceof PermanentPublishError) return { status: 'failed', code: error.code, message: error.message };
      if (error instanceof ReconnectNeededError) {
        const why = `the instance refused the account's token (${error.message})`;
        return { status: 'unknown', message: `${why}, so it cannot be asked about the status` };
      }
      throw error;
    }
  }

  /** The status step, with the key that makes sending it again safe. */
  private statusStep(input: PublicationInput, mediaIds: string[]): Progress {
    const reference: StatusReference = {
      idempotencyKey: `${input.post.id}-${input.post.attempt}-${input.reply?.part ?? 1}`,
      mediaIds,
      plannedAt: this.clock.now().toISOString(),
    };
    return { step: 'status', reference, irreversible: true };
  }

  /** Uploads the next media of the part, with its alt text. */
  private async upload(
    input: PublicationInput,
    account: MastodonCredentials,
    reference: MediaReference,
  ): Promise<StepResult> {
    const media: PublishableMedia | undefined = input.media[reference.uploaded.length];
    if (!media) return this.afterUploads(input, reference);
    const form = new FormData();
    const bytes = await readAll(await media.open());
    form.append('file', new Blob([new Uint8Array(bytes)], { type: media.contentType }), media.fileName);
    if (media.altText) form.append('description', media.altText);
    const focus = (input.post.settings as SettingsOf<'mastodon'> | null)?.focus?.[media.id];
    if (focus) form.append('focus', `${focus.x},${focus.y}`);
    let answer;
    try {
      answer = await this.api.call<{ id?: string }>(account.site, '/api/v2/media', {
        method: 'POST',
        accessToken: account.accessToken,
        multipart: form,
        signal: input.signal,
        timeoutSeconds: UPLOAD_TIMEOUT_SECONDS,
      });
    } catch (error) {
      throw publishErrorOf(error, `the file ${media.fileName}`, this.clock.now());
    }
    if (!answer.data.id) throw new TransientPublishError('the instance answered no media id', { answered: true });
    const next: MediaReference = {
      uploaded: [...reference.uploaded, answer.data.id],
      // 202: the instance processes it after answering (videos); its `url` is null until then.
      processing: answer.status === 202 ? [...reference.processing, answer.data.id] : reference.processing,
    };
    if (next.uploaded.length < input.media.length)
      return { next: { step: 'media', reference: next, irreversible: false } };
    return this.afterUploads(input, next);
  }

  private afterUploads(input: PublicationInput, reference: MediaReference): StepResult {
    if (reference.processing.length === 0) return { next: this.statusStep(input, reference.uploaded) };
    return {
      next: {
        step: 'processing',
        reference: { ...reference, sentAt: this.clock.now().toISOString() },
        irreversible: false,
      },
    };
  }

  /** Asks the instance about each media it still processes: the status follows once every one is ready. */
  private async poll(
    input: PublicationInput,
    account: MastodonCredentials,
    reference: MediaReference,
  ): Promise<StepResult> {
    let waiting = false;
    for (const id of reference.processing) {
      try {
        const { status } = await this.api.call<unknown>(account.site, `/api/v1/media/${encodeURIComponent(id)}`, {
          method: 'GET',
          accessToken: account.accessToken,
          signal: input.signal,
        });
        if (status === 206) waiting = true;
      } catch (error) {
        // The instance no longer has it (it drops media left unattached): nothing was published, so the
        // part starts over with its uploads.
        if (error instanceof MastodonError && error.status === 404)
          return { restart: { reason: 'the instance no longer has a media of the post it was processing' } };
        throw publishErrorOf(error, 'a media of the post', this.clock.now());
      }
    }
    if (!waiting) return { next: this.statusStep(input, reference.uploaded) };
    // Asked again later the longer the instance has had them: every few seconds at first, at most every 30.
    const elapsed = reference.sentAt ? (this.clock.now().getTime() - Date.parse(reference.sentAt)) / 1000 : 0;
    return { pending: { checkAgainInSeconds: Math.round(Math.min(30, Math.max(2, elapsed / 3))) } };
  }

  private async createStatus(
    input: PublicationInput,
    account: MastodonCredentials,
    reference: StatusReference,
  ): Promise<{ status: 'published'; releaseId: string; releaseUrl: string | null }> {
    const settings = input.post.settings as SettingsOf<'mastodon'>;
    const body = {
      status: input.post.content,
      ...(reference.mediaIds.length > 0 ? { media_ids: reference.mediaIds } : {}),
      visibility: settings.visibility ?? 'public',
      ...(settings.spoilerText ? { spoiler_text: settings.spoilerText } : {}),
      sensitive: settings.sensitive ?? false,
      ...(settings.language ? { language: settings.language } : {}),
      ...(input.reply ? { in_reply_to_id: input.reply.parent.releaseId } : {}),
    };
    let answer;
    try {
      answer = await this.api.call<StatusAnswer>(account.site, '/api/v1/statuses', {
        method: 'POST',
        accessToken: account.accessToken,
        json: body,
        idempotencyKey: reference.idempotencyKey,
        signal: input.signal,
      });
    } catch (error) {
      const mapped = publishErrorOf(error, 'the status', this.clock.now());
      // A 500, 502 or 504 may come after the instance created the status: asked about (sent again with
      // its key) before anything else, within the key's hour. A 429 or 503 says it was not created.
      if (
        mapped instanceof TransientPublishError &&
        error instanceof MastodonError &&
        error.status >= 500 &&
        error.status !== 503
      )
        throw new TransientPublishError(mapped.message, { answered: false });
      throw mapped;
    }
    if (!answer.data.id) throw new TransientPublishError('the instance answered no status id', { answered: false });
    return { status: 'published', releaseId: answer.data.id, releaseUrl: answer.data.url ?? answer.data.uri ?? null };
  }

  /** The channel's account, read as stored now (a reconnection may have replaced it). */
  private async account(channel: Channel): Promise<MastodonCredentials> {
    const row = await this.db.selectFrom('channels').selectAll().where('id', '=', channel.id).executeTakeFirst();
    const credentials = row && channelCredentials(this.keyring, row);
    const account = credentials && mastodonCredentials(credentials);
    if (!account)
      throw new ReconnectNeededError(
        `the channel ${channel.name} holds no credentials; connect it in Settings → Channels`,
      );
    return account;
  }
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return Buffer.concat(chunks);
}
