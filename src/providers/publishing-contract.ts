import type { Channel } from '../channels/tables.js';
import type { MediaContentType, MediaKind } from '../core/contract.js';

/** A media file of a post, as an adapter reads it to send it to a network. */
export interface PublishableMedia {
  id: string;
  fileName: string;
  contentType: MediaContentType;
  kind: MediaKind;
  size: number;
  /** What the image shows, for people who cannot see it; absent when the post gives none. */
  altText?: string;
  /** A signed URL that serves the bytes for a while (a network can pull from it). */
  url: string;
  /** Opens the bytes, or a range of them, from storage. */
  open(range?: { start: number; end: number }): Promise<NodeJS.ReadableStream>;
}

/** What a publication sends: one post to its channel, or one part of a thread. */
export interface PublicationInput {
  post: {
    id: string;
    /** The publishing attempt: each time the post is published anew, a new number. */
    attempt: number;
    /** The text of the part published (the post's own, or a thread part's). */
    content: string;
    settings: unknown;
  };
  channel: Channel;
  /** The media of the part published (the post's own, or a thread part's). */
  media: PublishableMedia[];
  /** For a part of a thread after the first: which part, and the published parts it replies to. */
  reply?: ThreadReply;
  /**
   * For a post's first comment (on a network with comments): the published post it comments on, and
   * which part of the post's publication it is, from 1 (the post's own content). The input's content
   * is the comment's; it has no media.
   */
  comment?: { on: PublishedPart; part: number };
  /** Aborted when the worker stops: a step should end its exchange with the network. */
  signal: AbortSignal;
  /**
   * Which of these ids of the network's posts or comments a post of the channel is already recorded as
   * published at (by the ledger): a look-up never takes one of them for the one it searches.
   */
  released?: (ids: string[]) => Promise<Set<string>>;
}

/** A published part of a thread, as a reply to it names it. */
export interface PublishedPart {
  releaseId: string;
  releaseUrl: string | null;
  /** What the network answered besides the id that a reply needs (e.g. a content hash); `{}` when nothing. */
  reference: Record<string, unknown>;
}

/**
 * Where a part of a thread goes: a reply to `parent`, the part just before it, in the thread that
 * `root`, the post's own part, began. `part` counts from 1, the post's own content.
 */
export interface ThreadReply {
  part: number;
  parts: number;
  root: PublishedPart;
  parent: PublishedPart;
}

/**
 * Where a publication stands: the step it is at and the network's reference for it (an upload
 * session, a publish id), recorded by the worker before it moves on. A step marked `irreversible`
 * is the point of no return (the last chunk of an upload, a publish call): it is recorded before it
 * runs, and a publication that may have crossed it is never sent again, only asked about.
 */
export interface Progress {
  step: string;
  reference: Record<string, unknown>;
  irreversible: boolean;
}

export type Outcome =
  | {
      status: 'published';
      releaseId: string;
      releaseUrl: string | null;
      /** What the network said besides, e.g. that the creator finishes the post in the app. */
      note?: string;
      /** What a reply to it needs besides its id (a network with threads), see `PublishedPart`. */
      reference?: Record<string, unknown>;
    }
  | { status: 'failed'; code: string; message: string; logId?: string };

/**
 * What running a step leads to: the next step (recorded before it runs), the end, a wait while
 * the network processes what it was sent (the publication is asked about with `lookup` afterwards,
 * as a job of the queue, not by a waiting worker; `forQuota` when what is awaited is the account's
 * publishing limit freeing, which may take longer than any processing and is never given up), or
 * starting over: the network no longer holds what the attempt sent it (an upload URL or session that
 * expired) and says nothing was published, so the attempt begins again from its first step after a
 * retry's wait, as a new start (`reason` says why, in the post's history).
 */
export type StepResult =
  | { next: Progress }
  | { outcome: Outcome }
  | { pending: { checkAgainInSeconds: number; forQuota?: boolean } }
  | { restart: { reason: string } };

/** What a network says about a publication that may have crossed its irreversible point. */
export type Lookup =
  | Outcome
  /** Still being processed: ask again later. */
  | { status: 'pending'; checkAgainInSeconds: number }
  /**
   * The network knows nothing of it: nothing was published, and the step may be run again. `again` is
   * the step to run instead, when its record must change before it is sent anew (a new beginning, from
   * which a later look-up searches and waits): the publisher records it before running it.
   */
  | { status: 'absent'; again?: Progress }
  /** The network cannot tell; `logId` is its own id of the answer that said so. */
  | { status: 'unknown'; message: string; logId?: string | undefined };

/**
 * How one network publishes. The worker drives the steps, records each one's progress before going
 * on, retries passing failures only before the irreversible point, and after a crash resumes from
 * the recorded progress or asks `lookup`.
 */
export interface PublishingAdapter {
  /** At most this many publications of one channel at once, and at most this many started per minute. */
  readonly limits: { concurrencyPerChannel: number; startsPerMinutePerChannel?: number };
  /** The first step of a publication. */
  start(input: PublicationInput): Progress;
  /** Runs the step `progress` names. Throws a `PublishError` when it does not get through. */
  run(input: PublicationInput, progress: Progress): Promise<StepResult>;
  /** What became of a publication from its recorded reference (after its irreversible point). */
  lookup(input: PublicationInput, progress: Progress): Promise<Lookup>;
}

/** A step that did not get through. */
export abstract class PublishError extends Error {
  constructor(
    message: string,
    /** The network's reference of the exchange, for its support. */
    readonly logId?: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** A passing failure (the network unreachable or overloaded, a 5xx, a 429): trying again later may work. */
export class TransientPublishError extends PublishError {
  /** When the network asks to wait (429, 503 with Retry-After). */
  readonly retryAfterSeconds: number | undefined;
  /**
   * The network answered, and its answer says the step was not taken (a 429, a 503): even an
   * irreversible step may run again. Without an answer (a cut connection, a timeout) the step may
   * have got through, and an irreversible one is asked about before anything else.
   */
  readonly answered: boolean;

  constructor(message: string, options: { answered: boolean; retryAfterSeconds?: number; logId?: string }) {
    super(message, options.logId);
    this.answered = options.answered;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/** The network refused the post for good; `code` is one of the contract's `PostError` codes. */
export class PermanentPublishError extends PublishError {
  constructor(
    readonly code: string,
    message: string,
    logId?: string,
  ) {
    super(message, logId);
  }
}

/** The network refused the channel's credentials: a user must reconnect the channel. */
export class ReconnectNeededError extends PublishError {}

/**
 * The wait a `Retry-After` header asks for, in seconds (a number of seconds or an HTTP date), or
 * nothing when it is missing or unreadable.
 */
export function retryAfterSeconds(header: string | string[] | undefined, now: Date): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now.getTime()) / 1000));
}
