import { GraphError } from './fake-graph-protocol.js';

// How a Meta host of the fakes (Threads, Instagram with Instagram Login) publishes: media containers filled
// from the URL they are given and polled until they settle, and the rolling day's publishing quota.

/** Images are at most 8 MiB on both hosts (Instagram's error reference, code 36000, subcode 2207004). */
export const MAX_IMAGE_BYTES = 8 * 1024 * 1024;

export function imageTooLarge(type: string): GraphError {
  return new GraphError(400, {
    message: 'The image size is too large.',
    type,
    code: 36000,
    error_subcode: 2207004,
    is_transient: false,
    error_user_title: 'Image size too large',
    error_user_msg: 'The image is too large to download. It should be less than 8 MiB.',
  });
}
export type FakeGraphContainerStatus = 'IN_PROGRESS' | 'FINISHED' | 'ERROR' | 'EXPIRED' | 'PUBLISHED';

/** What the fake did when it fetched a container's media from the URL it was given. */
export interface FakeGraphDownload {
  url: string;
  /** The HTTP status, or null when nothing answered. */
  status: number | null;
  /** `image/jpeg`, `image/png`, `video/mp4` or `video/quicktime` from the bytes; null when they are none of them. */
  sniffed: string | null;
  bytes: number;
}

/** A media container: what was asked, how far Meta got with it, and the media it became. */
export interface FakeGraphContainer {
  id: string;
  /** As sent (`TEXT`, `IMAGE`, `VIDEO`, `CAROUSEL`, `REELS`, `STORIES`), `IMAGE` when Instagram's was left out. */
  mediaType: string;
  /** Every parameter the request carried but the token. */
  params: Record<string, string>;
  isCarouselItem: boolean;
  /** The item containers of a carousel, in order. */
  children: string[];
  /** ms on the fake's clock. */
  createdAt: number;
  status: FakeGraphContainerStatus;
  /** Why it ended in ERROR (Threads' `error_message`, Instagram's error code). */
  errorMessage: string | null;
  /** Status reads that still answer IN_PROGRESS. */
  pollsLeft: number;
  /** Status reads the container had. */
  polls: number;
  /** How it ends once the polls are done: FINISHED, or ERROR or EXPIRED by a switch. */
  ending: { status: 'FINISHED' | 'ERROR' | 'EXPIRED'; errorMessage: string | null };
  download: FakeGraphDownload | null;
  /** The media it was published as. */
  mediaId: string | null;
}

/** Containers live a day: one not published by then is EXPIRED (both hosts' publishing pages). */
export const CONTAINER_LIFETIME_SECONDS = 86_400;

/**
 * Containers as both hosts keep them. A container is settled on each status read: it answers IN_PROGRESS for
 * its polls, then what it ends as; one not published within a day is EXPIRED.
 */
export class ContainerStore {
  readonly containers: FakeGraphContainer[] = [];
  private nextEnding: FakeGraphContainer['ending'][] = [];
  /** Polls a container answers IN_PROGRESS from now on, or the host's default for its kind when undefined. */
  polls: number | undefined;

  constructor(
    private readonly now: () => number,
    private readonly newId: () => string,
  ) {}

  /** The next container created ends so once its polls are done. */
  endNext(status: 'ERROR' | 'EXPIRED', errorMessage: string | null): void {
    this.nextEnding.push({ status, errorMessage });
  }

  create(init: {
    mediaType: string;
    params: Record<string, string>;
    isCarouselItem: boolean;
    children: string[];
    defaultPolls: number;
    download: FakeGraphDownload | null;
    /** The download failed in a way Meta finds out while processing: the container ends ERROR so. */
    failure?: string;
  }): FakeGraphContainer {
    const ending = this.nextEnding.shift() ?? {
      status: init.failure === undefined ? 'FINISHED' : 'ERROR',
      errorMessage: init.failure ?? null,
    };
    const container: FakeGraphContainer = {
      id: this.newId(),
      mediaType: init.mediaType,
      params: init.params,
      isCarouselItem: init.isCarouselItem,
      children: init.children,
      createdAt: this.now(),
      status: 'IN_PROGRESS',
      errorMessage: null,
      pollsLeft: this.polls ?? init.defaultPolls,
      polls: 0,
      ending,
      download: init.download,
      mediaId: null,
    };
    this.containers.push(container);
    this.advance(container);
    return container;
  }

  find(id: string): FakeGraphContainer | undefined {
    const container = this.containers.find((c) => c.id === id);
    if (container) this.advance(container);
    return container;
  }

  /** A status read: IN_PROGRESS while polls are left, what the container ended as after. */
  poll(container: FakeGraphContainer): void {
    container.polls += 1;
    if (container.pollsLeft > 0) container.pollsLeft -= 1;
    else this.advance(container);
  }

  private advance(container: FakeGraphContainer): void {
    this.expire(container);
    if (container.status === 'IN_PROGRESS' && container.pollsLeft === 0) {
      container.status = container.ending.status;
      container.errorMessage = container.ending.errorMessage;
    }
  }

  private expire(container: FakeGraphContainer): void {
    if (container.status === 'PUBLISHED' || container.status === 'ERROR') return;
    if (this.now() - container.createdAt >= CONTAINER_LIFETIME_SECONDS * 1000) container.status = 'EXPIRED';
  }
}

/** Sniffs what media the bytes are, as Meta decides by the bytes rather than the declared type. */
export function sniffMedia(bytes: Buffer): string | null {
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
  if (bytes.length >= 8 && bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])))
    return 'image/png';
  if (bytes.length >= 12 && bytes.subarray(4, 8).toString('latin1') === 'ftyp')
    return bytes.subarray(8, 12).toString('latin1') === 'qt  ' ? 'video/quicktime' : 'video/mp4';
  return null;
}

/**
 * Fetches a container's media from the URL given, as Meta's crawler does ("we cURL media used in publishing
 * attempts so the media must be hosted on a publicly accessible server at the time of the attempt"). Every
 * download is recorded; a URL nothing answers at is a download with a null status.
 */
export async function downloadMedia(url: string, downloads: FakeGraphDownload[]): Promise<FakeGraphDownload> {
  let download: FakeGraphDownload;
  try {
    const response = await fetch(url, { redirect: 'follow', signal: AbortSignal.timeout(10_000) });
    const bytes = Buffer.from(await response.arrayBuffer());
    download = { url, status: response.status, sniffed: response.ok ? sniffMedia(bytes) : null, bytes: bytes.length };
  } catch {
    download = { url, status: null, sniffed: null, bytes: 0 };
  }
  downloads.push(download);
  return download;
}

// ---- the publishing quota ----

export const QUOTA_DURATION_SECONDS = 86_400;

/** A rolling 24-hour publishing quota: what was published within the last day counts against it. */
export class PublishingQuota {
  private readonly uses: number[] = [];

  constructor(
    private readonly now: () => number,
    public total: number,
  ) {}

  usage(): number {
    const since = this.now() - QUOTA_DURATION_SECONDS * 1000;
    return this.uses.filter((at) => at > since).length;
  }

  full(): boolean {
    return this.usage() >= this.total;
  }

  take(): void {
    this.uses.push(this.now());
  }

  /** `count` publications counted now, as if they had been made. */
  fill(count: number): void {
    for (let i = 0; i < count; i++) this.uses.push(this.now());
  }
}
