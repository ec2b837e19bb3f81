import { fileTypeFromBuffer } from 'file-type';
import {
  type Answer,
  type FakeXContext,
  ID_PATTERN,
  invalidRequest,
  jsonBody,
  onlyProperties,
  type XRequest,
} from './fake-x-protocol.js';

// The media upload of X API v2 as docs.x.com documents it since the dedicated endpoints of 2025: the chunked
// upload (`POST /2/media/upload/initialize`, `/{id}/append`, `/{id}/finalize`, and `GET /2/media/upload?
// command=STATUS` while X processes a video or GIF), the one-shot upload of an image (`POST /2/media/upload`),
// and alt text (`POST /2/media/metadata`). Fields, answers and limits are those of the OpenAPI document and of
// the media pages ("Best practices": 5 MB an image, 15 MB a GIF, 512 MB a video; alt text up to 1,000
// characters, on images only, as the data dictionary says).

/** The categories of media for posts, the ones the fake models. */
export type FakeXMediaCategory = 'tweet_image' | 'tweet_gif' | 'tweet_video';

/** Where X's processing of a video or GIF is (`processing_info.state`). */
export type FakeXProcessingState = 'pending' | 'in_progress' | 'succeeded' | 'failed';

/** A media the account uploaded, as the fake holds it. */
export interface FakeXMedia {
  id: string;
  /** `3_…` a photo, `16_…` a GIF, `7_…` a video, as X names them. */
  mediaKey: string;
  /** The media object's `type`. */
  type: 'photo' | 'animated_gif' | 'video';
  /** The `media_type` announced at initialize (or found in the bytes of a one-shot upload). */
  mediaType: string;
  category: FakeXMediaCategory;
  /** How it came: initialize, append and finalize, or the one-shot upload. */
  upload: 'chunked' | 'one-shot';
  /** `total_bytes` announced at initialize. */
  totalBytes: number;
  /** The `segment_index` of every append X took, in order of arrival: one sent again is listed again. */
  appended: number[];
  /** Bytes that arrived in appends, counted again when a segment is sent again. */
  received: number;
  /** Bytes held: the latest copy of each segment. */
  stored: number;
  finalized: boolean;
  /** X's processing of a video or GIF; null for an image, which X does not process after finalize. */
  state: FakeXProcessingState | null;
  /** STATUS answers given. */
  statusChecks: number;
  altText: string | null;
  /** Pixels, for the images whose size the fake reads (PNG, GIF, JPEG). */
  width: number | null;
  height: number | null;
  /** When X forgets the upload (ms on the fake's clock): a day after it began. */
  expiresAt: number;
}

/** The media of a post, as the posts part needs them. */
export interface MediaForPost {
  mediaKey: string;
  type: FakeXMedia['type'];
}

const MB = 1024 * 1024;
const EXPIRES_AFTER_SECONDS = 86_400;
const MAX_BYTES: Record<FakeXMediaCategory, number> = {
  tweet_image: 5 * MB,
  tweet_gif: 15 * MB,
  tweet_video: 512 * MB,
};
/** The largest segment an append takes (X's chunked upload guide: segments of at most 5 MB). */
const MAX_SEGMENT_BYTES = 5 * MB;
const MAX_SEGMENTS = 1000;
const MEDIA_TYPES: Record<FakeXMediaCategory, string[]> = {
  tweet_image: ['image/jpeg', 'image/pjpeg', 'image/png', 'image/webp', 'image/gif'],
  tweet_gif: ['image/gif'],
  tweet_video: ['video/mp4', 'video/quicktime'],
};
/** Every `media_type` and `media_category` X's OpenAPI document lists; those beyond the fake's are refused. */
const DECLARED_MEDIA_TYPES = [
  'video/mp4',
  'video/webm',
  'video/mp2t',
  'video/quicktime',
  'text/srt',
  'text/vtt',
  'image/jpeg',
  'image/gif',
  'image/bmp',
  'image/png',
  'image/webp',
  'image/pjpeg',
  'image/tiff',
  'model/gltf-binary',
  'model/vnd.usdz+zip',
];
const DECLARED_CATEGORIES = [
  'amplify_video',
  'tweet_gif',
  'tweet_image',
  'tweet_video',
  'dm_gif',
  'dm_image',
  'dm_video',
  'subtitles',
];
const KEY_PREFIX: Record<FakeXMedia['type'], string> = { photo: '3', animated_gif: '16', video: '7' };
const TYPE_OF: Record<FakeXMediaCategory, FakeXMedia['type']> = {
  tweet_image: 'photo',
  tweet_gif: 'animated_gif',
  tweet_video: 'video',
};
const MEDIA_INVALID = 'Your media IDs are invalid.';

interface Upload extends FakeXMedia {
  segments: Map<number, Buffer>;
  /** STATUS answers left that say `in_progress` before processing settles. */
  checksLeft: number;
  /** What the bytes are, found at finalize. */
  sniffed: string | undefined;
}

/** `image/pjpeg` is a JPEG too. */
const sameType = (a: string | undefined, b: string) =>
  a !== undefined && a.replace('pjpeg', 'jpeg') === b.replace('pjpeg', 'jpeg');

/** Width and height from the header of a PNG, GIF or JPEG; undefined for what the fake does not read. */
function imageSize(bytes: Buffer, type: string): { width: number; height: number } | undefined {
  if (type === 'image/png' && bytes.length >= 24)
    return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
  if (type === 'image/gif' && bytes.length >= 10)
    return { width: bytes.readUInt16LE(6), height: bytes.readUInt16LE(8) };
  if (type === 'image/jpeg') {
    // The first start-of-frame marker (SOF0–SOF15 but DHT, JPG and DAC) carries the size.
    let at = 2;
    while (at + 9 < bytes.length && bytes[at] === 0xff) {
      const marker = bytes[at + 1]!;
      if (marker >= 0xc0 && marker <= 0xcf && ![0xc4, 0xc8, 0xcc].includes(marker))
        return { width: bytes.readUInt16BE(at + 7), height: bytes.readUInt16BE(at + 5) };
      at += 2 + bytes.readUInt16BE(at + 2);
    }
  }
  return undefined;
}

/** The media part of the fake X: its state, its switches, and the handlers of its endpoints. */
export class MediaStore {
  readonly media: Upload[] = [];
  private checksAfterFinalize = 1;
  private failNext = false;

  constructor(private readonly context: FakeXContext) {}

  /** STATUS answers a video or GIF gets as `in_progress` before it settles (default 1). */
  processingChecks(count: number): void {
    this.checksAfterFinalize = count;
  }

  /** The next video or GIF to settle fails its processing. */
  failNextProcessing(): void {
    this.failNext = true;
  }

  bytes(id: string): Buffer | undefined {
    const upload = this.media.find((m) => m.id === id);
    if (!upload) return undefined;
    return Buffer.concat([...upload.segments.entries()].sort(([a], [b]) => a - b).map(([, chunk]) => chunk));
  }

  byKey(mediaKey: string): FakeXMedia | undefined {
    return this.media.find((m) => m.mediaKey === mediaKey);
  }

  /** The media of a post, checked as X checks them at creation, or its 400. */
  forPost(ids: string[]): MediaForPost[] {
    const found = ids.map((id) => this.media.find((m) => m.id === id));
    const unusable = ids.filter((id, i) => {
      const upload = found[i];
      return (
        !upload ||
        !upload.finalized ||
        upload.expiresAt <= this.context.now() ||
        (upload.state !== null && upload.state !== 'succeeded')
      );
    });
    if (unusable.length > 0) throw invalidRequest(MEDIA_INVALID, { 'media.media_ids': unusable });
    const media = found.map((upload) => ({ mediaKey: upload!.mediaKey, type: upload!.type }));
    // "You may attach up to 4 photos, 1 animated GIF or 1 video in a Post" (docs.x.com, media best practices).
    if (media.length > 1 && media.some((m) => m.type !== 'photo'))
      throw invalidRequest('A post takes up to 4 photos, or 1 GIF, or 1 video.', { 'media.media_ids': ids });
    return media;
  }

  private find(id: string, parameter: string): Upload {
    const upload = ID_PATTERN.test(id) ? this.media.find((m) => m.id === id) : undefined;
    if (!upload || upload.expiresAt <= this.context.now())
      throw invalidRequest(`The media ${id} does not exist or has expired.`, { [parameter]: [id] });
    return upload;
  }

  private create(
    category: FakeXMediaCategory,
    mediaType: string,
    totalBytes: number,
    upload: FakeXMedia['upload'],
  ): Upload {
    const id = this.context.newId();
    const type = TYPE_OF[category];
    const created: Upload = {
      id,
      mediaKey: `${KEY_PREFIX[type]}_${id}`,
      type,
      mediaType,
      category,
      upload,
      totalBytes,
      appended: [],
      received: 0,
      stored: 0,
      finalized: false,
      state: null,
      statusChecks: 0,
      altText: null,
      width: null,
      height: null,
      expiresAt: this.context.now() + EXPIRES_AFTER_SECONDS * 1000,
      segments: new Map(),
      checksLeft: 0,
      sniffed: undefined,
    };
    this.media.push(created);
    return created;
  }

  /** Whole seconds left, rounded up: a day for an upload that has just begun, however long the answer took. */
  private expiresAfter(upload: Upload): number {
    return Math.max(0, Math.min(EXPIRES_AFTER_SECONDS, Math.ceil((upload.expiresAt - this.context.now()) / 1000)));
  }

  /** The media's data in X's answers to finalize, STATUS and the one-shot upload. */
  private describe(upload: Upload): Record<string, unknown> {
    const data: Record<string, unknown> = {
      id: upload.id,
      media_key: upload.mediaKey,
      size: upload.stored,
      expires_after_secs: this.expiresAfter(upload),
    };
    if (upload.state !== null) {
      const progress: Record<FakeXProcessingState, number> = {
        pending: 0,
        in_progress: Math.min(99, 10 + upload.statusChecks * 30),
        succeeded: 100,
        failed: Math.min(99, 10 + upload.statusChecks * 30),
      };
      data.processing_info = {
        state: upload.state,
        ...(upload.state === 'pending' || upload.state === 'in_progress' ? { check_after_secs: 1 } : {}),
        progress_percent: progress[upload.state],
      };
    }
    if (upload.type === 'photo')
      data.image = {
        image_type: upload.mediaType,
        ...(upload.width !== null ? { w: upload.width, h: upload.height } : {}),
      };
    if (upload.type === 'video') data.video = { video_type: upload.mediaType };
    return data;
  }

  // ---- POST /2/media/upload/initialize ----

  initialize(request: XRequest): Answer {
    const body = jsonBody(request);
    onlyProperties(
      body,
      '',
      ['media_type', 'total_bytes', 'media_category'],
      ['additional_owners', 'media_category', 'media_type', 'shared', 'total_bytes'],
    );
    const { media_type: mediaType, total_bytes: totalBytes } = body;
    if (typeof mediaType !== 'string' || !DECLARED_MEDIA_TYPES.includes(mediaType))
      throw invalidRequest(`media_type must be one of [${DECLARED_MEDIA_TYPES.join(', ')}].`, {
        media_type: [mediaType],
      });
    if (!Number.isSafeInteger(totalBytes) || (totalBytes as number) < 1)
      throw invalidRequest('total_bytes must be a positive integer.', { total_bytes: [totalBytes] });
    // Without a category, X takes the media for a post, by its type (docs.x.com, media best practices).
    const category =
      body.media_category ??
      (mediaType === 'image/gif' ? 'tweet_gif' : mediaType.startsWith('video/') ? 'tweet_video' : 'tweet_image');
    if (typeof category !== 'string' || !DECLARED_CATEGORIES.includes(category))
      throw invalidRequest(`media_category must be one of [${DECLARED_CATEGORIES.join(', ')}].`, {
        media_category: [category],
      });
    if (!(category in MEDIA_TYPES))
      throw invalidRequest(`The fake X models the media of posts only, not ${category}.`, {
        media_category: [category],
      });
    const postCategory = category as FakeXMediaCategory;
    if (!MEDIA_TYPES[postCategory].includes(mediaType))
      throw invalidRequest(`media_type ${mediaType} is not one of ${postCategory}.`, { media_type: [mediaType] });
    if ((totalBytes as number) > MAX_BYTES[postCategory])
      throw invalidRequest(`File size exceeds ${MAX_BYTES[postCategory]} bytes.`, { total_bytes: [totalBytes] });
    const upload = this.create(postCategory, mediaType, totalBytes as number, 'chunked');
    return {
      status: 200,
      body: { data: { id: upload.id, media_key: upload.mediaKey, expires_after_secs: this.expiresAfter(upload) } },
    };
  }

  // ---- POST /2/media/upload/{id}/append ----

  async append(request: XRequest, id: string): Promise<Answer> {
    const upload = this.find(id, 'id');
    const { segmentIndex, media } = await this.segmentOf(request);
    if (upload.finalized) throw invalidRequest('The upload was finalized: it takes no more segments.', { id: [id] });
    if (media.length > MAX_SEGMENT_BYTES)
      throw invalidRequest(`A segment may be at most ${MAX_SEGMENT_BYTES} bytes.`, { media: [media.length] });
    const held = upload.stored - (upload.segments.get(segmentIndex)?.length ?? 0);
    upload.received += media.length;
    if (held + media.length > upload.totalBytes)
      throw invalidRequest('The segments are more than total_bytes.', { segment_index: [segmentIndex] });
    upload.segments.set(segmentIndex, media);
    upload.stored = held + media.length;
    upload.appended.push(segmentIndex);
    return { status: 200, body: { data: { expires_at: Math.floor(upload.expiresAt / 1000) } } };
  }

  /** `segment_index` and `media` of an append, from a multipart form (raw bytes) or JSON (base64). */
  private async segmentOf(request: XRequest): Promise<{ segmentIndex: number; media: Buffer }> {
    const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    let index: unknown;
    let media: Buffer | undefined;
    if (type === 'multipart/form-data') {
      const form = await formOf(request);
      onlyProperties(Object.fromEntries([...form.keys()].map((key) => [key, true])), '', ['media', 'segment_index']);
      const field = form.get('segment_index');
      index = typeof field === 'string' && /^\d+$/.test(field) ? Number(field) : field;
      const part = form.get('media');
      if (part !== null) media = typeof part === 'string' ? Buffer.from(part) : Buffer.from(await part.arrayBuffer());
    } else {
      const body = jsonBody(request);
      onlyProperties(body, '', ['media', 'segment_index']);
      index = body.segment_index;
      if (typeof body.media === 'string') media = Buffer.from(body.media, 'base64');
    }
    if (!Number.isInteger(index) || (index as number) < 0 || (index as number) >= MAX_SEGMENTS)
      throw invalidRequest(`segment_index must be an integer from 0 to ${MAX_SEGMENTS - 1}.`, {
        segment_index: [index],
      });
    if (!media || media.length === 0) throw invalidRequest('media is required.', { media: [] });
    return { segmentIndex: index as number, media };
  }

  // ---- POST /2/media/upload/{id}/finalize ----

  async finalize(id: string): Promise<Answer> {
    const upload = this.find(id, 'id');
    if (upload.finalized) throw invalidRequest('The upload was finalized already.', { id: [id] });
    const indexes = [...upload.segments.keys()].sort((a, b) => a - b);
    if (upload.stored !== upload.totalBytes || indexes.some((index, i) => index !== i))
      throw invalidRequest('Segments do not add up to provided total file size.', { id: [id] });
    const bytes = this.bytes(id)!;
    upload.sniffed = (await fileTypeFromBuffer(bytes))?.mime;
    if (upload.type === 'photo') {
      // X reads an image at once: bytes that are not the announced image are refused here.
      if (!sameType(upload.sniffed, upload.mediaType))
        throw invalidRequest(`The media is not a valid ${upload.mediaType}.`, { id: [id] });
      const size = imageSize(bytes, upload.mediaType.replace('pjpeg', 'jpeg'));
      upload.width = size?.width ?? null;
      upload.height = size?.height ?? null;
    } else {
      // A video or GIF is processed after finalize: STATUS says how far.
      upload.state = 'pending';
      upload.checksLeft = this.checksAfterFinalize;
    }
    upload.finalized = true;
    return { status: 200, body: { data: this.describe(upload) } };
  }

  // ---- GET /2/media/upload?command=STATUS ----

  status(query: URLSearchParams): Answer {
    const command = query.get('command');
    if (command !== null && command !== 'STATUS')
      throw invalidRequest('command must be STATUS.', { command: [command] });
    const upload = this.find(query.get('media_id') ?? '', 'media_id');
    if (!upload.finalized) throw invalidRequest('The upload has not been finalized.', { media_id: [upload.id] });
    if (upload.state === 'pending' || upload.state === 'in_progress') {
      upload.statusChecks += 1;
      if (upload.checksLeft > 0) {
        upload.checksLeft -= 1;
        upload.state = 'in_progress';
      } else if (this.failNext || !sameType(upload.sniffed, upload.mediaType)) {
        this.failNext = false;
        upload.state = 'failed';
      } else upload.state = 'succeeded';
    }
    return { status: 200, body: { data: this.describe(upload) } };
  }

  // ---- POST /2/media/upload (one-shot, images) ----

  async uploadWhole(request: XRequest): Promise<Answer> {
    const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    let category: unknown;
    let media: Buffer | undefined;
    const declared = ['additional_owners', 'media', 'media_category'];
    if (type === 'multipart/form-data') {
      const form = await formOf(request);
      // The command-style INIT/APPEND/FINALIZE of this path is gone: its schema takes these fields only.
      onlyProperties(
        Object.fromEntries([...form.keys()].map((key) => [key, true])),
        '',
        ['media', 'media_category'],
        declared,
      );
      category = form.get('media_category');
      const part = form.get('media');
      if (part !== null) media = typeof part === 'string' ? Buffer.from(part) : Buffer.from(await part.arrayBuffer());
    } else {
      const body = jsonBody(request);
      onlyProperties(body, '', ['media', 'media_category'], declared);
      category = body.media_category;
      if (typeof body.media === 'string') media = Buffer.from(body.media, 'base64');
    }
    if (typeof category !== 'string' || !DECLARED_CATEGORIES.includes(category))
      throw invalidRequest('media_category is required: tweet_image, tweet_video, tweet_gif, …', {
        media_category: [category],
      });
    if (category !== 'tweet_image')
      throw invalidRequest('The one-shot upload takes images; a GIF or video goes through initialize.', {
        media_category: [category],
      });
    if (!media || media.length === 0) throw invalidRequest('media is required.', { media: [] });
    if (media.length > MAX_BYTES.tweet_image)
      throw invalidRequest(`File size exceeds ${MAX_BYTES.tweet_image} bytes.`, { media: [media.length] });
    const sniffed = (await fileTypeFromBuffer(media))?.mime;
    if (sniffed === undefined || !MEDIA_TYPES.tweet_image.includes(sniffed))
      throw invalidRequest('The media is not a JPEG, PNG, GIF or WebP image.', { media: [] });
    const upload = this.create('tweet_image', sniffed, media.length, 'one-shot');
    upload.segments.set(0, media);
    upload.stored = media.length;
    upload.sniffed = sniffed;
    upload.finalized = true;
    const size = imageSize(media, sniffed);
    upload.width = size?.width ?? null;
    upload.height = size?.height ?? null;
    return { status: 200, body: { data: this.describe(upload) } };
  }

  // ---- POST /2/media/metadata ----

  metadata(request: XRequest): Answer {
    const body = jsonBody(request);
    onlyProperties(body, '', ['id', 'metadata']);
    if (typeof body.id !== 'string') throw invalidRequest('id is required.', { id: [body.id] });
    const metadata = body.metadata;
    if (!metadata || typeof metadata !== 'object' || Array.isArray(metadata))
      throw invalidRequest('metadata is required.', { metadata: [metadata] });
    onlyProperties(metadata as Record<string, unknown>, 'metadata', ['alt_text'], METADATA_DECLARED);
    const altText = (metadata as { alt_text?: unknown }).alt_text;
    const text = (altText as { text?: unknown } | undefined)?.text;
    if (typeof text !== 'string')
      throw invalidRequest('metadata.alt_text.text is required.', { 'metadata.alt_text.text': [text] });
    if ([...text].length > 1000)
      throw invalidRequest('metadata.alt_text.text may be at most 1000 characters.', {
        'metadata.alt_text.text': [text],
      });
    const upload = this.find(body.id, 'id');
    if (!upload.finalized) throw invalidRequest('The upload has not been finalized.', { id: [upload.id] });
    if (upload.type === 'video') throw invalidRequest('Alt text can only be added to images.', { id: [upload.id] });
    upload.altText = text;
    return { status: 200, body: { data: { id: upload.id, associated_metadata: { alt_text: { text } } } } };
  }
}

const METADATA_DECLARED = [
  'allow_download_status',
  'alt_text',
  'audience_policy',
  'content_expiration',
  'domain_restrictions',
  'found_media_origin',
  'geo_restrictions',
  'management_info',
  'preview_image',
  'sensitive_media_warning',
  'shared_info',
  'sticker_info',
  'upload_source',
];

/** A multipart body's form, as the platform's own parser reads it; X's 400 when it cannot be read. */
async function formOf(request: XRequest): Promise<FormData> {
  try {
    return await new Response(request.body, {
      headers: { 'content-type': request.headers['content-type'] ?? '' },
    }).formData();
  } catch {
    throw invalidRequest('The multipart body could not be read.');
  }
}
