import { randomBytes } from 'node:crypto';
import type { Clock } from '../../core/clock.js';
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
import { jsonOf, pinterestMessage, publishError, type PinterestApi } from './api.js';
import type { PinterestTokens } from './tokens.js';

type StoredPinterestSettings = StoredSettingsOf<'pinterest'>;

/** Creating a pin answers within this, or the call is given up (and Pinterest asked about it). */
const PIN_TIMEOUT_SECONDS = 60;
/**
 * How long after a pin could have reached Pinterest its absence from the board is believed: a new pin
 * may take a moment to show among the board's pins.
 */
const BOARD_SETTLE_SECONDS = 60;
/** How far the search reaches before the pin step began: Pinterest's clock and this server's may differ. */
const CLOCK_SKEW_MS = 2 * 60_000;
/**
 * The board's pins are read this many a page (Pinterest's most), at most this many pages. Their order is
 * not relied on: every page is read, up to the last or this many.
 */
const LOOKUP_PAGE = 250;
const LOOKUP_PAGES = 4;
/** A video's processing is asked about again after this long, growing with the time it has taken. */
const POLL_MIN_SECONDS = 5;
const POLL_MAX_SECONDS = 60;

/** What a publication has done so far. */
interface PinterestReference extends Record<string, unknown> {
  /** The video registered with Pinterest, and where its bytes go. */
  video?: { mediaId: string; uploadUrl: string; parameters: Record<string, string>; uploadedAt?: string };
  /** When the pin step was last recorded to be sent: a pin whose lost answer is looked for from then on. */
  startedAt?: string;
}

/** A pin as Pinterest answers it, among a board's pins. */
interface PinAnswer {
  id: string;
  created_at?: string;
  board_section_id?: string | null;
  title?: string | null;
  description?: string | null;
  link?: string | null;
  alt_text?: string | null;
  /** Whether the account is the pin's owner (a group board shows its collaborators' pins too). */
  is_owner?: boolean;
  media?: { media_type?: string };
}

/**
 * Publishing a pin to Pinterest (API v5). An image pin or a carousel is created at once from its images:
 * by their signed URLs, which Pinterest downloads, or, where this server's media cannot be reached from
 * the internet, as base64 in the request (which Pinterest takes of JPEG and PNG, as the rules hold). A
 * video goes up first, each call a step of its own: registered (`POST /v5/media`), its bytes sent as the
 * S3 form Pinterest's answer describes, then its processing asked about as a queued job until it
 * `succeeded` (`failed` fails the post). Then `POST /v5/pins`, with the board and section, title,
 * description (the post's text), link and alt text: the irreversible point.
 *
 * Pinterest has no idempotency key, so a pin step that may have reached Pinterest (its answer lost, a
 * 5xx, a worker that stopped) is never simply sent again: the board's pins are read first, every page,
 * whatever their order. The account's own pin there, made since shortly before the step began, with the
 * same section, title, description, link, alt text and kind of media (image, video or carousel), and
 * recorded for no post of the channel, is taken as this one, and the post is published; two such pins
 * leave it `outcome_unknown`. Not found, Pinterest is believed only once its board had time to show the
 * pin (a minute after the call could have ended; until then the search is made again later), and only if
 * the search read the whole board; then the pin is sent again, as a step of its own. A board with more
 * pins than the search reads leaves the post `outcome_unknown`.
 */
export class PinterestAdapter implements PublishingAdapter {
  readonly limits = { concurrencyPerChannel: 1 };

  constructor(
    private readonly api: PinterestApi,
    private readonly tokens: PinterestTokens,
    private readonly clock: Clock,
    /** Whether Pinterest can download this server's media (see meta/media-reach.ts). */
    private readonly mediaReachable: boolean,
  ) {}

  /** The video's registration, or `ready`: the irreversible step is never a publication's first. */
  start(input: PublicationInput): Progress {
    if (input.media.some((media) => media.kind === 'video'))
      return { step: 'register', reference: {}, irreversible: false };
    return { step: 'ready', reference: {}, irreversible: false };
  }

  async run(input: PublicationInput, progress: Progress): Promise<StepResult> {
    const reference = progress.reference as PinterestReference;
    switch (progress.step) {
      case 'ready':
        return { next: this.pinStep(reference) };
      case 'register':
        return this.register(input);
      case 'upload':
        return this.upload(input, reference);
      case 'processing':
        return this.processing(input, reference);
      case 'pin':
        return this.pin(input, reference);
      default:
        throw new PermanentPublishError('rejected_by_network', `unknown step ${progress.step}`);
    }
  }

  async lookup(input: PublicationInput, progress: Progress): Promise<Lookup> {
    const reference = progress.reference as PinterestReference;
    const search = await this.search(input, reference);
    if (search.found.length > 1)
      return {
        status: 'unknown',
        message: `pins ${search.found.join(', ')} of the board match it, none recorded for another post`,
      };
    if (search.found.length === 1) return this.published(search.found[0]!);
    if (!search.complete)
      return {
        status: 'unknown',
        message: `the board has more than ${LOOKUP_PAGE * LOOKUP_PAGES} pins, too many to search for the pin`,
      };
    const settledAt = startedAt(reference) + (PIN_TIMEOUT_SECONDS + BOARD_SETTLE_SECONDS) * 1000;
    const wait = Math.ceil((settledAt - this.clock.now().getTime()) / 1000);
    if (wait > 0) return { status: 'pending', checkAgainInSeconds: wait };
    // Sent anew as a step of its own: a later look-up searches and waits from the new sending, not this one.
    return {
      status: 'absent',
      again: { ...progress, reference: { ...reference, startedAt: this.clock.now().toISOString() } },
    };
  }

  private pinStep(reference: PinterestReference): Progress {
    return { step: 'pin', reference: { ...reference, startedAt: this.clock.now().toISOString() }, irreversible: true };
  }

  private async register(input: PublicationInput): Promise<StepResult> {
    const answer = await this.call(input, '/v5/media', { json: { media_type: 'video' } });
    const body = jsonOf<{ media_id?: string; upload_url?: string; upload_parameters?: Record<string, string> }>(answer);
    if ((answer.status !== 201 && answer.status !== 200) || !body?.media_id || !body.upload_url)
      throw publishError(answer, 'registration of the video', this.clock);
    const video = { mediaId: body.media_id, uploadUrl: body.upload_url, parameters: body.upload_parameters ?? {} };
    return { next: { step: 'upload', reference: { video }, irreversible: false } };
  }

  /**
   * The video's bytes as the form of an S3 POST policy: every upload parameter as a field, the file last
   * (S3 ignores fields after it). The policy is signed for one upload only, so it is sent whole, in one
   * request.
   */
  private async upload(input: PublicationInput, reference: PinterestReference): Promise<StepResult> {
    const video = reference.video!;
    const media = input.media.find((one) => one.kind === 'video')!;
    const bytes = await readAll(media);
    const boundary = `----pin-upload-${randomBytes(16).toString('hex')}`;
    const parts: Buffer[] = [];
    for (const [name, value] of Object.entries(video.parameters))
      parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
    parts.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${media.fileName.replace(/["\r\n\\]/g, '_')}"` +
          `\r\nContent-Type: ${media.contentType}\r\n\r\n`,
      ),
      bytes,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    );
    const answer = await this.api.sendTo(video.uploadUrl, {
      method: 'POST',
      raw: { contentType: `multipart/form-data; boundary=${boundary}`, bytes: Buffer.concat(parts) },
      signal: input.signal,
      // At least a megabyte a second, and a minute besides.
      timeoutSeconds: Math.min(3600, 60 + Math.ceil(bytes.length / (1024 * 1024))),
    });
    if (answer.status >= 200 && answer.status < 300)
      return {
        next: {
          step: 'processing',
          reference: { video: { ...video, uploadedAt: this.clock.now().toISOString() } },
          irreversible: false,
        },
      };
    if (answer.status >= 500)
      throw new TransientPublishError(`Pinterest's upload failed (${answer.status})`, { answered: true });
    // The upload's policy expired or was refused: a new registration gives a new one.
    return { restart: { reason: `Pinterest's upload of the video was refused (${answer.status}); it is sent again` } };
  }

  private async processing(input: PublicationInput, reference: PinterestReference): Promise<StepResult> {
    const video = reference.video!;
    const answer = await this.tokens.authorized(input.channel, (authorization) =>
      this.api.send(`/v5/media/${encodeURIComponent(video.mediaId)}`, {
        method: 'GET',
        authorization,
        signal: input.signal,
      }),
    );
    const status = jsonOf<{ status?: string }>(answer)?.status;
    if (answer.status !== 200 || !status) throw publishError(answer, 'status of the video', this.clock);
    if (status === 'succeeded') return { next: this.pinStep(reference) };
    if (status === 'failed')
      throw new PermanentPublishError('rejected_by_network', 'Pinterest could not process the video (status failed)');
    const since = video.uploadedAt ? Date.parse(video.uploadedAt) : this.clock.now().getTime();
    const elapsed = (this.clock.now().getTime() - since) / 1000;
    return {
      pending: { checkAgainInSeconds: Math.round(Math.min(POLL_MAX_SECONDS, Math.max(POLL_MIN_SECONDS, elapsed / 3))) },
    };
  }

  private async pin(input: PublicationInput, reference: PinterestReference): Promise<StepResult> {
    const settings = settingsOf(input);
    const body = {
      board_id: settings.boardId,
      ...(settings.boardSectionId ? { board_section_id: settings.boardSectionId } : {}),
      ...(settings.title ? { title: settings.title } : {}),
      ...(input.post.content ? { description: input.post.content } : {}),
      ...(settings.link ? { link: settings.link } : {}),
      ...(input.media.length === 1 && input.media[0]!.altText ? { alt_text: input.media[0]!.altText } : {}),
      media_source: await this.mediaSource(input, reference, settings),
    };
    const answer = await this.call(input, '/v5/pins', { json: body }, PIN_TIMEOUT_SECONDS);
    const id = jsonOf<{ id?: string }>(answer)?.id;
    if ((answer.status === 201 || answer.status === 200) && id) return { outcome: this.published(id) };
    // A 5xx may come after Pinterest created the pin: asked about, never sent again blindly.
    throw publishError(answer, 'pin', this.clock, { mayHaveApplied: true });
  }

  private async mediaSource(
    input: PublicationInput,
    reference: PinterestReference,
    settings: StoredPinterestSettings,
  ): Promise<Record<string, unknown>> {
    if (reference.video)
      return {
        source_type: 'video_id',
        media_id: reference.video.mediaId,
        cover_image_key_frame_time: settings.coverImageKeyFrameTime ?? 0,
      };
    const images = input.media;
    if (images.length === 1) {
      const image = images[0]!;
      if (this.mediaReachable) return { source_type: 'image_url', url: image.url };
      return {
        source_type: 'image_base64',
        content_type: image.contentType,
        data: (await readAll(image)).toString('base64'),
      };
    }
    if (this.mediaReachable)
      return { source_type: 'multiple_image_urls', items: images.map((image) => ({ url: image.url })) };
    const items: Record<string, string>[] = [];
    for (const image of images)
      items.push({ content_type: image.contentType, data: (await readAll(image)).toString('base64') });
    return { source_type: 'multiple_image_base64', items };
  }

  private call(input: PublicationInput, path: string, body: { json: unknown }, timeoutSeconds?: number) {
    return this.tokens.authorized(input.channel, (authorization) =>
      this.api.send(path, {
        method: 'POST',
        authorization,
        body,
        signal: input.signal,
        ...(timeoutSeconds ? { timeoutSeconds } : {}),
      }),
    );
  }

  /**
   * The account's pins of the board that match the one sent, made since shortly before the step and
   * recorded for no post (of the channel), and whether the search read every pin of the board.
   */
  private async search(
    input: PublicationInput,
    reference: PinterestReference,
  ): Promise<{ found: string[]; complete: boolean }> {
    const settings = settingsOf(input);
    const since = startedAt(reference) - CLOCK_SKEW_MS;
    const query = new URLSearchParams({ page_size: String(LOOKUP_PAGE) });
    const path = `/v5/boards/${encodeURIComponent(settings.boardId)}/pins`;
    const candidates = new Set<string>();
    let complete = false;
    for (let page = 0; page < LOOKUP_PAGES && !complete; page += 1) {
      const answer = await this.tokens.authorized(input.channel, (authorization) =>
        this.api.send(`${path}?${query.toString()}`, { method: 'GET', authorization, signal: input.signal }),
      );
      const body = jsonOf<{ items?: PinAnswer[]; bookmark?: string | null }>(answer);
      if (answer.status !== 200 || !body)
        throw publishError(answer, `look-up of the board's recent pins (${pinterestMessage(answer)})`, this.clock);
      for (const pin of body.items ?? [])
        if (createdAt(pin) >= since && pin.is_owner !== false && isSent(pin, input, reference, settings))
          candidates.add(pin.id);
      // The board's order is not relied on: a pin older than the step says nothing of the next page's.
      if (body.bookmark) query.set('bookmark', body.bookmark);
      else complete = true;
    }
    const released = input.released ? await input.released([...candidates]) : new Set<string>();
    return { found: [...candidates].filter((id) => !released.has(id)), complete };
  }

  private published(id: string): Outcome & { status: 'published' } {
    return {
      status: 'published',
      releaseId: id,
      releaseUrl: `https://www.pinterest.com/pin/${encodeURIComponent(id)}/`,
    };
  }
}

function settingsOf(input: PublicationInput): StoredPinterestSettings {
  return input.post.settings as StoredPinterestSettings;
}

/** When the pin step was last recorded to be sent, in ms. */
function startedAt(reference: PinterestReference): number {
  return Date.parse(reference.startedAt!);
}

/** A pin's creation time in ms; Pinterest writes it in UTC, without a zone. */
function createdAt(pin: PinAnswer): number {
  if (!pin.created_at) return Number.NaN;
  return Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(pin.created_at) ? pin.created_at : `${pin.created_at}Z`);
}

/** Whether a pin of the board is the one this publication sent (see PinterestAdapter). */
function isSent(
  pin: PinAnswer,
  input: PublicationInput,
  reference: PinterestReference,
  settings: StoredPinterestSettings,
): boolean {
  const kind = reference.video ? 'video' : input.media.length > 1 ? 'multiple_images' : 'image';
  const altText = input.media.length === 1 ? input.media[0]!.altText || null : null;
  return (
    (pin.board_section_id ?? null) === (settings.boardSectionId ?? null) &&
    (pin.title || null) === (settings.title || null) &&
    (pin.description || null) === (input.post.content || null) &&
    (pin.link || null) === (settings.link || null) &&
    (pin.alt_text || null) === altText &&
    pin.media?.media_type === kind
  );
}

async function readAll(media: PublishableMedia): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of await media.open()) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return Buffer.concat(chunks);
}
