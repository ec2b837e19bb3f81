import type { Clock } from '../../core/clock.js';
import type { NetworkAnswer } from '../network-call.js';
import { PermanentPublishError, type PublicationInput, type PublishableMedia } from '../publishing-contract.js';
import { jsonOf, publishError, type XApi, type XBody } from './api.js';
import type { XTokens } from './tokens.js';

/** A segment of a chunked upload: X takes at most 5 MB in one append. */
export const SEGMENT_BYTES = 4 * 1024 * 1024;
/** An image or video goes up in up to this long (an image of 5 MB, a segment of 4 MiB). */
const UPLOAD_TIMEOUT_SECONDS = 300;
/** X forgets an upload a day after it began, unless it says otherwise. */
const DEFAULT_EXPIRY_SECONDS = 86_400;

/** A media X holds for the account: its id, and when X forgets it (ISO 8601). */
export interface UploadedMedia {
  id: string;
  expiresAt: string;
}

/** Where X's processing of a video stands after finalize (`processing_info`): none for what X does not process. */
export type Processing =
  { state: 'done' } | { state: 'waiting'; checkAfterSeconds: number } | { state: 'failed'; message: string };

interface MediaData {
  id?: string;
  expires_after_secs?: number;
  processing_info?: {
    state?: string;
    check_after_secs?: number;
    error?: { message?: string; name?: string };
  };
}

/**
 * X's media upload (API v2, docs.x.com): an image in one request (`POST /2/media/upload`, category
 * `tweet_image`), a video or an animated GIF in segments (`initialize` with category `tweet_video`
 * or `tweet_gif`, `append` each, `finalize`, then `STATUS` while X processes it), and alt text
 * (`POST /2/media/metadata`). Each call is a step of its own: none of them publishes anything, and
 * one whose answer was lost is simply made again (a segment sent again replaces itself; an upload made
 * again leaves the first one to expire unused).
 */
export class XMedia {
  constructor(
    private readonly api: XApi,
    private readonly tokens: XTokens,
    private readonly clock: Clock,
  ) {}

  async uploadImage(input: PublicationInput, media: PublishableMedia): Promise<UploadedMedia> {
    const bytes = await readAll(await media.open());
    const answer = await this.call(input, 'POST', '/2/media/upload', 'image', {
      multipart: {
        fields: { media_category: 'tweet_image' },
        file: { name: media.fileName, contentType: media.contentType, bytes },
      },
    });
    return this.uploaded(jsonOf<{ data?: MediaData }>(answer)?.data, 'image');
  }

  async initialize(input: PublicationInput, video: PublishableMedia): Promise<UploadedMedia> {
    const answer = await this.call(input, 'POST', '/2/media/upload/initialize', 'video', {
      json: {
        media_type: video.contentType,
        total_bytes: video.size,
        media_category: video.contentType === 'image/gif' ? 'tweet_gif' : 'tweet_video',
      },
    });
    return this.uploaded(jsonOf<{ data?: MediaData }>(answer)?.data, 'video');
  }

  /** Sends segment `segment` (from 0) of the video to the upload `id`. */
  async append(input: PublicationInput, video: PublishableMedia, id: string, segment: number): Promise<void> {
    const start = segment * SEGMENT_BYTES;
    const end = Math.min(start + SEGMENT_BYTES, video.size) - 1;
    const bytes = await readAll(await video.open({ start, end }));
    await this.call(input, 'POST', `/2/media/upload/${encodeURIComponent(id)}/append`, 'video', {
      multipart: {
        fields: { segment_index: String(segment) },
        file: { name: video.fileName, contentType: 'application/octet-stream', bytes },
      },
    });
  }

  /**
   * Ends the upload of the video: X then processes it. A finalize whose answer was lost is refused
   * when made again (the upload is finalized already), so a refusal is checked against STATUS, which
   * answers for a finalized upload only.
   */
  async finalize(input: PublicationInput, id: string): Promise<Processing> {
    try {
      const answer = await this.call(input, 'POST', `/2/media/upload/${encodeURIComponent(id)}/finalize`, 'video');
      return processing(jsonOf<{ data?: MediaData }>(answer)?.data);
    } catch (error) {
      if (!(error instanceof PermanentPublishError)) throw error;
      const status = await this.authorized(input, 'GET', statusPath(id));
      if (status.status !== 200) throw error;
      return processing(jsonOf<{ data?: MediaData }>(status)?.data);
    }
  }

  async status(input: PublicationInput, id: string): Promise<Processing> {
    const answer = await this.call(input, 'GET', statusPath(id), 'video');
    return processing(jsonOf<{ data?: MediaData }>(answer)?.data);
  }

  async describe(input: PublicationInput, id: string, altText: string): Promise<void> {
    await this.call(input, 'POST', '/2/media/metadata', 'image’s alt text', {
      json: { id, metadata: { alt_text: { text: altText } } },
    });
  }

  private uploaded(data: MediaData | undefined, what: string): UploadedMedia {
    if (!data?.id) throw new PermanentPublishError('rejected_by_network', `X answered no id for the ${what}.`);
    const seconds = data.expires_after_secs ?? DEFAULT_EXPIRY_SECONDS;
    return { id: data.id, expiresAt: new Date(this.clock.now().getTime() + seconds * 1000).toISOString() };
  }

  /** A call of the media upload; X's refusal as the publisher's error. */
  private async call(
    input: PublicationInput,
    method: 'GET' | 'POST',
    path: string,
    what: string,
    body?: XBody,
  ): Promise<NetworkAnswer> {
    const answer = await this.authorized(input, method, path, body);
    if (answer.status !== 200 && answer.status !== 201) throw publishError(answer, what, this.clock);
    return answer;
  }

  private authorized(input: PublicationInput, method: 'GET' | 'POST', path: string, body?: XBody) {
    return this.tokens.authorized(input.channel, (authorization) =>
      this.api.send(path, {
        method,
        authorization,
        ...(body ? { body } : {}),
        signal: input.signal,
        timeoutSeconds: UPLOAD_TIMEOUT_SECONDS,
      }),
    );
  }
}

const statusPath = (id: string) => `/2/media/upload?command=STATUS&media_id=${encodeURIComponent(id)}`;

function processing(data: MediaData | undefined): Processing {
  const info = data?.processing_info;
  if (!info || info.state === 'succeeded') return { state: 'done' };
  if (info.state === 'failed') {
    const reason = info.error?.message ?? info.error?.name;
    return { state: 'failed', message: `X could not process the video${reason ? ` (${reason})` : ''}.` };
  }
  return { state: 'waiting', checkAfterSeconds: Math.min(60, Math.max(1, info.check_after_secs ?? 5)) };
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return Buffer.concat(chunks);
}
