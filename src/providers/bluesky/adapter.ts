import { randomInt } from 'node:crypto';
import { TID } from '@atproto/common-web';
import type { components } from '../../../generated/public-v1.js';
import type { Clock } from '../../core/clock.js';
import type { Keyring } from '../../crypto/keyring.js';
import { imageDimensions, type ImageDimensions } from '../../media/image-dimensions.js';
import type { OutboundClient } from '../../net/outbound-client.js';
import { channelCredentials } from '../account-credentials.js';
import { graphemeCount } from '../text-rules.js';
import {
  PermanentPublishError,
  ReconnectNeededError,
  retryAfterSeconds,
  TransientPublishError,
  type Lookup,
  type Outcome,
  type Progress,
  type PublicationInput,
  type PublishedPart,
  type PublishingAdapter,
  type StepResult,
} from '../publishing-contract.js';
import {
  PdsAddressRefusedError,
  PdsUnreachableError,
  XrpcError,
  type BlobReference,
  type BlueskyApi,
  type BlueskySession,
} from './api.js';
import { blueskyCredentials } from './credentials.js';
import { facetsOf, firstLink } from './facets.js';
import { linkPreview } from './link-card.js';

type PostSettings = Partial<components['schemas']['StoredBlueskySettings']>;

const POST = 'app.bsky.feed.post';
/** The app.bsky.feed.post lexicon bounds `text` by its UTF-8 bytes too (300 emoji sequences may pass them). */
export const BLUESKY_TEXT_MAX_BYTES = 3000;
/** The app.bsky.embed.images lexicon: each image a blob of at most 1,000,000 bytes. */
export const BLUESKY_IMAGE_MAX_BYTES = 1_000_000;
/** The app.bsky.embed.video lexicon: one MP4 of at most 100,000,000 bytes, its alt text up to 1000 graphemes. */
export const BLUESKY_VIDEO_MAX_BYTES = 100_000_000;
export const BLUESKY_VIDEO_ALT_MAX = 1000;
/**
 * How long a session made for a publication serves it (its parts, their media). Sessions are never
 * stored: an app password its owner revoked stops the next publication, while an access token issued
 * before the revocation would go on working for up to two hours.
 */
const SESSION_LIFETIME_MS = 10 * 60_000;
/** The errors a PDS answers for an access or refresh token it no longer takes (XRPC's auth errors). */
const TOKEN_REFUSALS = new Set(['ExpiredToken', 'InvalidToken', 'AuthenticationRequired']);
/** A sign-in refused for the account's own reasons: no new app password changes them. */
const ACCOUNT_REFUSALS = new Set(['AccountTakedown', 'AccountDeactivated']);

/**
 * A post in the making: its record key and creation time, chosen when the publication starts and
 * recorded before anything is sent, so that the record put at the irreversible point is the same on
 * every try; then the account and its PDS, and the media uploaded so far.
 */
interface PostReference extends Record<string, unknown> {
  rkey: string;
  createdAt: string;
  did?: string;
  pds?: string;
  /**
   * The blob of each media file uploaded so far, in the post's order, and an image's width and height
   * (Bluesky's app lays images out by them before loading them).
   */
  blobs?: { blob: BlobReference; aspectRatio?: ImageDimensions }[];
  /** The card of the text's first link (app.bsky.embed.external), as read when the post was sent. */
  card?: { uri: string; title: string; description: string; thumb?: BlobReference };
}

interface HeldSession {
  session: BlueskySession;
  madeAt: number;
}

/**
 * Publishing to Bluesky (the AT Protocol): `session` signs in with the channel's app password, `upload`
 * sends each image (or the video) as a blob, `card` reads the card of the first link of a post without
 * media, and `post`, the irreversible point, writes the `app.bsky.feed.post` record with its text,
 * rich-text facets, languages, embed and, for a thread's part, the reply to its root and parent. The
 * record's key (a TID from the service's clock) and `createdAt` are chosen at the start and recorded
 * before the record is sent, and the record is put only where none is (`putRecord` with
 * `swapRecord: null`): a try after a lost answer writes nothing new, and asking for the record at its
 * key tells whether it was published.
 */
export class BlueskyAdapter implements PublishingAdapter {
  // bsky.social lets an account make 30 sessions in 5 minutes (and 300 a day); a publication makes one.
  readonly limits = { concurrencyPerChannel: 1, startsPerMinutePerChannel: 5 };
  private readonly sessions = new Map<string, HeldSession>();
  private lastMicros = 0;

  constructor(
    private readonly api: BlueskyApi,
    /** For the pages of links a card shows (URLs users wrote: the address policy applies). */
    private readonly outbound: OutboundClient,
    private readonly keyring: Keyring,
    private readonly clock: Clock,
  ) {}

  start(): Progress {
    const now = this.clock.now();
    // A TID is microseconds since the epoch and a 10-bit clock id. Publications started in the same
    // millisecond (a burst, a held test clock) differ by random microseconds and clock ids, and those this
    // process starts follow one another, so a thread's parts are in order.
    const micros = Math.max(now.getTime() * 1000 + randomInt(1000), this.lastMicros + 1);
    this.lastMicros = micros;
    const rkey = TID.fromTime(micros, randomInt(1024)).toString();
    const reference: PostReference = { rkey, createdAt: now.toISOString() };
    return { step: 'session', reference, irreversible: false };
  }

  async run(input: PublicationInput, progress: Progress): Promise<StepResult> {
    const reference = progress.reference as PostReference;
    if (progress.step === 'session') return this.signIn(input, reference);
    if (progress.step === 'upload') return this.upload(input, reference);
    if (progress.step === 'card') return this.card(input, reference);
    if (progress.step === 'post') return this.post(input, reference);
    throw new PermanentPublishError('rejected_by_network', `unknown step ${progress.step}`);
  }

  async lookup(input: PublicationInput, progress: Progress): Promise<Lookup> {
    const reference = progress.reference as PostReference;
    if (!reference.did || !reference.pds)
      return { status: 'unknown', message: 'the publication recorded no Bluesky account to ask' };
    const record = await this.stored(input, reference);
    return record ? this.published(reference, record.cid) : { status: 'absent' };
  }

  /** The record at the publication's key, if there is one. */
  private async stored(input: PublicationInput, reference: PostReference) {
    try {
      return await this.api.getRecord(reference.pds!, reference.did!, POST, reference.rkey, input.signal);
    } catch (error) {
      throw this.failure(error, 'the request for the post');
    }
  }

  private async signIn(input: PublicationInput, reference: PostReference): Promise<StepResult> {
    const bytes = Buffer.byteLength(input.post.content);
    if (bytes > BLUESKY_TEXT_MAX_BYTES)
      throw new PermanentPublishError(
        'rejected_by_network',
        `Bluesky takes a text of up to ${BLUESKY_TEXT_MAX_BYTES} bytes of UTF-8; this one has ${bytes}.`,
      );
    checkMedia(input);
    const session = await this.session(input, { fresh: false });
    const signedIn = { ...reference, did: session.did, pds: session.pds };
    if (input.media.length > 0)
      return { next: { step: 'upload', reference: { ...signedIn, blobs: [] }, irreversible: false } };
    const settings = (input.post.settings ?? {}) as PostSettings;
    if (settings.linkCard !== false && (await firstLink(input.post.content)))
      return { next: { step: 'card', reference: signedIn, irreversible: false } };
    return { next: postStep(signedIn) };
  }

  /**
   * The card of the text's first link, for a post without media: read from the page now and recorded,
   * with its image uploaded as a blob, so the record put is the same on every try. A page that cannot be
   * read leaves the post without a card, and an image Bluesky refuses leaves the card without one.
   */
  private async card(input: PublicationInput, reference: PostReference): Promise<StepResult> {
    const uri = await firstLink(input.post.content);
    const preview = uri ? await linkPreview(this.outbound, uri) : undefined;
    if (!preview) return { next: postStep(reference) };
    let thumb: BlobReference | undefined;
    if (preview.image) {
      const { bytes, contentType } = preview.image;
      try {
        thumb = await this.authorized(input, 'the image of the link’s card', (session) =>
          this.api.uploadBlob(session, bytes, contentType, input.signal),
        );
      } catch (error) {
        if (!(error instanceof PermanentPublishError)) throw error;
      }
    }
    const card = {
      uri: preview.uri,
      title: preview.title,
      description: preview.description,
      ...(thumb ? { thumb } : {}),
    };
    return { next: postStep({ ...reference, card }) };
  }

  private async upload(input: PublicationInput, reference: PostReference): Promise<StepResult> {
    const blobs = reference.blobs ?? [];
    const media = input.media[blobs.length];
    if (!media) return { next: postStep(reference) };
    const bytes = await readAll(await media.open());
    const blob = await this.authorized(input, `the ${media.kind} ${media.fileName}`, (session) =>
      this.api.uploadBlob(session, bytes, media.contentType, input.signal),
    );
    const aspectRatio = media.kind === 'image' ? imageDimensions(bytes) : undefined;
    const uploaded = { ...reference, blobs: [...blobs, { blob, ...(aspectRatio ? { aspectRatio } : {}) }] };
    if (uploaded.blobs.length < input.media.length)
      return { next: { step: 'upload', reference: uploaded, irreversible: false } };
    return { next: postStep(uploaded) };
  }

  private async post(input: PublicationInput, reference: PostReference): Promise<StepResult> {
    const record = await this.record(input, reference);
    let cid: string;
    try {
      cid = (
        await this.authorized(input, 'the post', (session) =>
          this.api.putNewRecord(session, POST, reference.rkey, record, input.signal),
        )
      ).cid;
    } catch (error) {
      // Another record holds the key: this publication's, put by an earlier try whose record came out
      // otherwise (a mention resolved differently since), when it has the same text and creation time.
      if (!(error instanceof InvalidSwap)) throw error;
      const stored = await this.stored(input, reference);
      if (!stored || stored.value.text !== record.text || stored.value.createdAt !== record.createdAt)
        throw error.cause;
      return { outcome: this.done(input, this.published(reference, stored.cid)) };
    }
    return { outcome: this.done(input, this.published(reference, cid)) };
  }

  private done(input: PublicationInput, outcome: Outcome): Outcome {
    // The publication's last part is out: its session is of no more use.
    if (!input.reply || input.reply.part === input.reply.parts) this.sessions.delete(sessionKey(input));
    return outcome;
  }

  /** The app.bsky.feed.post record of the publication, the same on every try. */
  private async record(input: PublicationInput, reference: PostReference): Promise<Record<string, unknown>> {
    const settings = (input.post.settings ?? {}) as PostSettings;
    const facets = await facetsOf(input.post.content, async (handle) => {
      try {
        return await this.api.resolveHandle(reference.pds!, handle, input.signal);
      } catch (error) {
        throw this.failure(error, 'the resolution of a mention');
      }
    });
    const blobs = reference.blobs ?? [];
    const languages = settings.languages ?? [];
    return {
      $type: POST,
      text: input.post.content,
      createdAt: reference.createdAt,
      ...(facets.length > 0 ? { facets } : {}),
      ...(languages.length > 0 ? { langs: languages } : {}),
      ...mediaEmbed(input, blobs, reference.card),
      ...(input.reply ? { reply: { root: strongRef(input.reply.root), parent: strongRef(input.reply.parent) } } : {}),
    };
  }

  private published(reference: PostReference, cid: string): Outcome & { status: 'published' } {
    const did = reference.did!;
    return {
      status: 'published',
      releaseId: `at://${did}/${POST}/${reference.rkey}`,
      // Bluesky's web app shows a post of any PDS at this address.
      releaseUrl: `https://bsky.app/profile/${did}/post/${reference.rkey}`,
      reference: { cid },
    };
  }

  /**
   * Runs a call with the publication's session; when the PDS no longer takes its access token, once more
   * with a session refreshed (or, the refresh refused, made anew from the app password).
   */
  private async authorized<T>(
    input: PublicationInput,
    what: string,
    call: (session: BlueskySession) => Promise<T>,
  ): Promise<T> {
    const session = await this.session(input, { fresh: false });
    try {
      return await call(session);
    } catch (error) {
      if (!(error instanceof XrpcError && isTokenRefusal(error))) throw this.failure(error, what);
    }
    const renewed = await this.renewed(input, session);
    try {
      return await call(renewed);
    } catch (error) {
      if (error instanceof XrpcError && isTokenRefusal(error))
        throw new ReconnectNeededError(`Bluesky refused a new session of the account (${error.error})`);
      throw this.failure(error, what);
    }
  }

  /** The publication's session: the one it made a moment ago, or a new one. */
  private async session(input: PublicationInput, options: { fresh: boolean }): Promise<BlueskySession> {
    const now = this.clock.now().getTime();
    for (const [key, held] of this.sessions) if (now - held.madeAt >= SESSION_LIFETIME_MS) this.sessions.delete(key);
    const held = options.fresh ? undefined : this.sessions.get(sessionKey(input));
    if (held) return held.session;
    const credentials = input.channel.credentials ? channelCredentials(this.keyring, input.channel) : undefined;
    const account = credentials && blueskyCredentials(credentials);
    if (!account)
      throw new ReconnectNeededError(`the channel ${input.channel.name} holds no Bluesky account; connect it again`);
    let session: BlueskySession;
    try {
      session = await this.api.createSession(account.service, account.identifier, account.appPassword, input.signal);
    } catch (error) {
      throw this.signInFailure(error);
    }
    if (session.status)
      throw new PermanentPublishError('rejected_by_network', `The Bluesky account is ${session.status}.`);
    this.sessions.set(sessionKey(input), { session, madeAt: now });
    return session;
  }

  private async renewed(input: PublicationInput, session: BlueskySession): Promise<BlueskySession> {
    try {
      const refreshed = await this.api.refreshSession(session.pds, session.refreshJwt, input.signal);
      this.sessions.set(sessionKey(input), { session: refreshed, madeAt: this.clock.now().getTime() });
      return refreshed;
    } catch (error) {
      if (!(error instanceof XrpcError && isTokenRefusal(error))) throw this.failure(error, 'the session’s refresh');
    }
    return this.session(input, { fresh: true });
  }

  private signInFailure(error: unknown): Error {
    if (error instanceof XrpcError && error.status < 500 && error.status !== 429) {
      if (ACCOUNT_REFUSALS.has(error.error))
        return new PermanentPublishError('rejected_by_network', `Bluesky refused the account: ${error.message}`);
      return new ReconnectNeededError(`Bluesky refused the app password (${error.error}: ${error.message})`);
    }
    return this.failure(error, 'the sign-in');
  }

  /** A failed call as the publisher judges it: passing (unreachable, 429, 5xx) or for good. */
  private failure(error: unknown, what: string): Error {
    if (error instanceof PdsUnreachableError) return new TransientPublishError(error.message, { answered: false });
    if (error instanceof PdsAddressRefusedError) return new PermanentPublishError('rejected_by_network', error.message);
    if (!(error instanceof XrpcError)) return error as Error;
    if (error.status === 429 || error.status >= 500) {
      const wait = this.waitOf(error);
      return new TransientPublishError(`Bluesky answered ${error.status} to ${what} (${error.error})`, {
        answered: true,
        ...(wait !== undefined ? { retryAfterSeconds: wait } : {}),
      });
    }
    if (isTokenRefusal(error))
      return new ReconnectNeededError(`Bluesky refused the account’s session (${error.error})`);
    if (error.error === 'InvalidSwap') return new InvalidSwap(error);
    return new PermanentPublishError(
      'rejected_by_network',
      `Bluesky refused ${what}: ${error.message} (${error.error}).`,
    );
  }

  /**
   * The wait a 429 asks for: `Retry-After`, or else until the reset of the rate limit it hit
   * (`RateLimit-Reset`, in seconds since the epoch, as Bluesky's PDS sends it).
   */
  private waitOf(error: XrpcError): number | undefined {
    const now = this.clock.now();
    const asked = retryAfterSeconds(error.headers['retry-after'], now);
    if (asked !== undefined) return asked;
    const reset = Number(error.headers['ratelimit-reset']);
    if (!Number.isFinite(reset) || reset <= 0) return undefined;
    return Math.max(0, Math.ceil(reset - now.getTime() / 1000));
  }
}

/**
 * The PDS refused a record at the key because one is there already (`InvalidSwap`): this publication's
 * own, when the key is its own; `cause` is the refusal as the publisher would take it otherwise.
 */
class InvalidSwap extends Error {
  override readonly cause: PermanentPublishError;
  constructor(error: XrpcError) {
    super(error.message);
    this.cause = new PermanentPublishError(
      'rejected_by_network',
      `Bluesky holds another record where the post goes (${error.message}).`,
    );
  }
}

function isTokenRefusal(error: XrpcError): boolean {
  return error.status === 401 || TOKEN_REFUSALS.has(error.error);
}

function postStep(reference: PostReference): Progress {
  return { step: 'post', reference, irreversible: true };
}

/** A session serves one publication: a post and the parts of its thread, in one attempt. */
function sessionKey(input: PublicationInput): string {
  return `${input.channel.id}:${input.post.id}:${input.post.attempt}`;
}

/** What a reply names of the part it replies to: its record's URI and cid. */
function strongRef(part: PublishedPart): { uri: string; cid: string } {
  const cid = part.reference.cid;
  if (typeof cid !== 'string')
    throw new PermanentPublishError('rejected_by_network', `the part ${part.releaseId} replied to has no recorded cid`);
  return { uri: part.releaseId, cid };
}

/**
 * The post's embed: its images with their alt texts, its video (the documented simple way: a blob of the
 * account, which Bluesky's video service processes once the post is out), or the card of its first link.
 */
function mediaEmbed(
  input: PublicationInput,
  blobs: NonNullable<PostReference['blobs']>,
  card: PostReference['card'],
): { embed?: Record<string, unknown> } {
  const [first] = input.media;
  if (first?.kind === 'video' && blobs[0]) {
    return {
      embed: { $type: 'app.bsky.embed.video', video: blobs[0].blob, ...(first.altText ? { alt: first.altText } : {}) },
    };
  }
  if (blobs.length > 0) {
    return {
      embed: {
        $type: 'app.bsky.embed.images',
        images: blobs.map(({ blob, aspectRatio }, i) => ({
          image: blob,
          alt: input.media[i]?.altText ?? '',
          ...(aspectRatio ? { aspectRatio } : {}),
        })),
      },
    };
  }
  return card ? { embed: { $type: 'app.bsky.embed.external', external: card } } : {};
}

/** What Bluesky cannot take, refused before anything is sent. */
function checkMedia(input: PublicationInput): void {
  for (const media of input.media) {
    if (media.kind === 'video') {
      if (input.media.length > 1)
        throw new PermanentPublishError('rejected_by_network', 'A Bluesky post carries one video alone.');
      if (media.contentType !== 'video/mp4')
        throw new PermanentPublishError(
          'rejected_by_network',
          `Bluesky takes videos as MP4; ${media.fileName} is ${media.contentType}.`,
        );
      if (media.size > BLUESKY_VIDEO_MAX_BYTES)
        throw new PermanentPublishError(
          'rejected_by_network',
          `Bluesky takes videos of up to ${BLUESKY_VIDEO_MAX_BYTES} bytes; ${media.fileName} has ${media.size}.`,
        );
      if (media.altText && graphemeCount(media.altText) > BLUESKY_VIDEO_ALT_MAX)
        throw new PermanentPublishError(
          'rejected_by_network',
          `Bluesky takes a video's alt text of up to ${BLUESKY_VIDEO_ALT_MAX} characters; ` +
            `that of ${media.fileName} has ${graphemeCount(media.altText)}.`,
        );
      continue;
    }
    if (media.size > BLUESKY_IMAGE_MAX_BYTES)
      throw new PermanentPublishError(
        'rejected_by_network',
        `Bluesky takes images of up to ${BLUESKY_IMAGE_MAX_BYTES} bytes; ${media.fileName} has ${media.size}.`,
      );
  }
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return Buffer.concat(chunks);
}
