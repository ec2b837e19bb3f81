import { randomBytes } from 'node:crypto';
import type { FakeMetaPage, FakeMetaToken } from './fake-meta-login.js';
import {
  type Answer,
  fieldsOf,
  graphError,
  type GraphRequest,
  invalidParameter,
  pageOf,
  pick,
  unsupported,
} from './fake-meta-protocol.js';

// Publishing to a Facebook Page as the Pages API documents it ("Posts", "Page Feed", "Page Photos", the Video
// API's "Publish with the Video API" and the Graph API's "Resumable Upload API"): a post with a message and a
// link (`POST /{page-id}/feed`), photos (`POST /{page-id}/photos`, by `url` or a multipart `source`;
// `published=false` uploads one to attach with `attached_media` to a feed post), a video (the file uploaded
// with the Resumable Upload API — `POST /{app-id}/uploads`, `POST /upload:{session}` from `file_offset`,
// `GET /upload:{session}` to resume — then `POST /{page-id}/videos` with `fbuploader_video_file_chunk`), the
// post's `permalink_url`, a comment on it (`POST /{object-id}/comments`) and its comments (`GET`), and the Page's
// recent posts.

/** A post on the Page's feed. */
export interface FakeMetaPost {
  /** `{page-id}_{post-id}`, as Meta names Page posts. */
  id: string;
  pageId: string;
  kind: 'status' | 'link' | 'photo' | 'video';
  message: string | null;
  link: string | null;
  /** The photos it shows: attached unpublished photos, or the one photo of a photo post. */
  photoIds: string[];
  videoId: string | null;
  /** ms on the fake's clock. */
  createdAt: number;
  permalinkUrl: string;
  /** Its answer was lost on the way back: the caller does not know it exists. */
  answerLost: boolean;
}

/** A photo uploaded to the Page. */
export interface FakeMetaPhoto {
  id: string;
  pageId: string;
  published: boolean;
  /** The post that shows it: its own (a published photo), or the feed post it was attached to. */
  postId: string | null;
  caption: string | null;
  /** What the photo shows, as `alt_text_custom` gave it (the Photo reference's field). */
  altText: string | null;
  /** The URL Meta fetched it from, or null for a multipart `source`. */
  url: string | null;
  bytes: Buffer;
  createdAt: number;
}

/** A video published on the Page. */
export interface FakeMetaVideo {
  id: string;
  pageId: string;
  title: string | null;
  description: string | null;
  bytes: Buffer;
  /** How its bytes came: the Resumable Upload API's handle, a `file_url`, or a multipart `source`. */
  via: 'handle' | 'file_url' | 'source';
  postId: string;
  createdAt: number;
}

/** A session of the Resumable Upload API. */
export interface FakeMetaUploadSession {
  /** `upload:…`, as `POST /{app-id}/uploads` answers it. */
  id: string;
  fileName: string;
  fileLength: number;
  fileType: string;
  /** Bytes received so far: where the next transfer must start (`file_offset`). */
  offset: number;
  /** The file handle, once every byte arrived. */
  handle: string | null;
  /** Transfers that arrived, with the offset each started at. */
  transfers: number[];
}

/** A comment the app made on a Page post (or photo, or video). */
export interface FakeMetaComment {
  id: string;
  /** The post (or media) commented on. */
  objectId: string;
  message: string;
  createdAt: number;
  answerLost: boolean;
  /** Who commented, as `from` names it: the Page, for a comment made with its token. */
  from?: { id: string; name: string };
}

export interface PagesContext {
  now(): number;
  newId(): string;
  appId: string;
  pages: FakeMetaPage[];
  scopesOf(token: FakeMetaToken): string[];
  /** Fetches a URL as Meta's servers would; the bytes and their type, or null when it cannot be had. */
  fetchMedia(url: string): Promise<{ bytes: Buffer; type: string | undefined } | null>;
  sniff(bytes: Buffer): Promise<string | undefined>;
}

/** The file types the Resumable Upload API takes (its guide's list). */
const UPLOAD_TYPES = ['application/pdf', 'image/jpeg', 'image/jpg', 'image/png', 'video/mp4'];
const PHOTO_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/bmp', 'image/tiff'];
const VIDEO_TYPES = ['video/mp4', 'video/quicktime'];

/** `pfbid0…`: the opaque id of a post's permalink, which cannot be derived from the post's id. */
const pfbid = () => `pfbid0${randomBytes(24).toString('base64url').replace(/[-_]/g, 'x')}`;

/** `attached_media` as the docs send it (`attached_media[0]={"media_fbid":"…"}`) or as one JSON array. */
function attachedMedia(params: Record<string, string>): string[] {
  const entries: string[] = [];
  if (params.attached_media !== undefined) {
    try {
      const parsed = JSON.parse(params.attached_media) as unknown;
      if (!Array.isArray(parsed)) throw new Error('not an array');
      entries.push(...parsed.map((item) => JSON.stringify(item)));
    } catch {
      throw invalidParameter('param attached_media must be an array.');
    }
  }
  const indexed = Object.keys(params)
    .map((name) => /^attached_media\[(\d+)\]$/.exec(name))
    .filter((match) => match !== null)
    .sort((a, b) => Number(a[1]) - Number(b[1]));
  for (const match of indexed) entries.push(params[match[0]]!);
  return entries.map((entry, index) => {
    let value: unknown;
    try {
      value = JSON.parse(entry);
    } catch {
      value = undefined;
    }
    const id = (value as { media_fbid?: unknown } | undefined)?.media_fbid;
    if (typeof id !== 'string' && typeof id !== 'number')
      throw invalidParameter(`param attached_media[${index}] must be an object with media_fbid.`);
    return String(id);
  });
}

const isTrue = (value: string | undefined, fallback: boolean) =>
  value === undefined ? fallback : value === 'true' || value === '1';

/** The Pages part of the fake: its state and the handlers of its endpoints. */
export class PageStore {
  readonly posts: FakeMetaPost[] = [];
  readonly photos: FakeMetaPhoto[] = [];
  readonly videos: FakeMetaVideo[] = [];
  readonly uploads: FakeMetaUploadSession[] = [];
  readonly comments: FakeMetaComment[] = [];
  private readonly uploadBytes = new Map<string, Buffer[]>();

  constructor(private readonly context: PagesContext) {}

  page(id: string): FakeMetaPage | undefined {
    return this.context.pages.find((p) => p.id === id);
  }

  /**
   * The Page a request acts as: a Page token of that Page, with the permissions publishing needs, of a person
   * who may create content on it; otherwise code 200, as the Pages API answers.
   */
  private actingPage(method: string, pageId: string, token: FakeMetaToken, needs: string[]): FakeMetaPage {
    const page = this.page(pageId);
    if (!page) throw unsupported(method, pageId);
    const scopes = this.context.scopesOf(token);
    if (
      token.kind !== 'page' ||
      token.pageId !== pageId ||
      !needs.every((scope) => scopes.includes(scope)) ||
      !page.tasks.includes('CREATE_CONTENT')
    )
      throw graphError(403, {
        message:
          '(#200) If posting to a page, requires both pages_read_engagement and pages_manage_posts as an admin with sufficient administrative permission',
        code: 200,
      });
    return page;
  }

  private newPost(page: FakeMetaPage, kind: FakeMetaPost['kind'], fields: Partial<FakeMetaPost>): FakeMetaPost {
    const number = fields.videoId ?? this.context.newId();
    const post: FakeMetaPost = {
      id: `${page.id}_${number}`,
      pageId: page.id,
      kind,
      message: null,
      link: null,
      photoIds: [],
      videoId: null,
      createdAt: this.context.now(),
      permalinkUrl:
        kind === 'video'
          ? `https://www.facebook.com/${page.username}/videos/${number}/`
          : `https://www.facebook.com/${page.username}/posts/${pfbid()}`,
      answerLost: false,
      ...fields,
    };
    this.posts.push(post);
    return post;
  }

  /** `POST /{page-id}/feed`: a message, a link, or unpublished photos attached. */
  feed(request: GraphRequest, token: FakeMetaToken, pageId: string): Answer {
    const page = this.actingPage('post', pageId, token, ['pages_manage_posts', 'pages_read_engagement']);
    const { params } = request;
    const attached = attachedMedia(params);
    const message = params.message ?? null;
    const link = params.link ?? null;
    if (link !== null && !/^https?:\/\/[^\s]+$/.test(link))
      throw invalidParameter('link URL is not properly formatted');
    if (!message && !link && attached.length === 0) throw invalidParameter('Missing message or attachment');
    if (attached.length > 0 && link !== null)
      throw invalidParameter('Cannot specify both link and attached_media in the same post.');
    const photos = attached.map((id, index) => {
      const photo = this.photos.find((p) => p.id === id && p.pageId === page.id);
      if (!photo || photo.published || photo.postId !== null)
        throw invalidParameter(
          `param attached_media[${index}] has photo id ${id} which is not an unpublished photo of this Page or was attached already.`,
        );
      return photo;
    });
    const post = this.newPost(page, photos.length > 0 ? 'photo' : link !== null ? 'link' : 'status', {
      message,
      link,
      photoIds: photos.map((p) => p.id),
    });
    for (const photo of photos) photo.postId = post.id;
    return { status: 200, body: { id: post.id } };
  }

  /** `POST /{page-id}/photos`: by `url` (Meta fetches it) or a multipart `source`; `published=false` holds it back. */
  async photo(request: GraphRequest, token: FakeMetaToken, pageId: string): Promise<Answer> {
    const page = this.actingPage('post', pageId, token, ['pages_manage_posts', 'pages_read_engagement']);
    const { params, files } = request;
    const url = params.url ?? null;
    let bytes: Buffer | undefined;
    let type: string | undefined;
    if (url !== null) {
      const fetched = await this.context.fetchMedia(url);
      bytes = fetched?.bytes;
      type = fetched?.type;
    } else if (files.source) {
      bytes = files.source.bytes;
      type = await this.context.sniff(bytes);
    }
    if (!bytes || !type || !PHOTO_TYPES.includes(type))
      throw graphError(400, { message: '(#324) Missing or invalid image file', code: 324 });
    const published = isTrue(params.published, true);
    const id = this.context.newId();
    const photo: FakeMetaPhoto = {
      id,
      pageId: page.id,
      published,
      postId: null,
      caption: params.caption ?? params.message ?? null,
      altText: params.alt_text_custom ?? null,
      url,
      bytes,
      createdAt: this.context.now(),
    };
    this.photos.push(photo);
    if (!published) return { status: 200, body: { id } };
    const post = this.newPost(page, 'photo', { message: photo.caption, photoIds: [id] });
    photo.postId = post.id;
    return { status: 200, body: { id, post_id: post.id } };
  }

  // ---- the Resumable Upload API and videos ----

  /** `POST /{app-id}/uploads`: a session for a file of `file_length` bytes, with a user token. */
  startUpload(request: GraphRequest, token: FakeMetaToken, appId: string): Answer {
    if (appId !== this.context.appId) throw unsupported('post', appId);
    if (token.kind !== 'user')
      throw graphError(400, { message: '(#100) The upload session requires a user access token.', code: 100 });
    const { params } = request;
    const length = Number(params.file_length);
    if (!params.file_name) throw invalidParameter('The parameter file_name is required');
    if (!Number.isSafeInteger(length) || length <= 0) throw invalidParameter('The parameter file_length is required');
    if (!UPLOAD_TYPES.includes(params.file_type ?? ''))
      throw invalidParameter(`Param file_type must be one of {${UPLOAD_TYPES.join(', ')}}`);
    const session: FakeMetaUploadSession = {
      id: `upload:${Buffer.from(`${this.context.newId()}:${params.file_name}`).toString('base64url')}?sig=${randomBytes(12).toString('base64url')}`,
      fileName: params.file_name,
      fileLength: length,
      fileType: params.file_type!,
      offset: 0,
      handle: null,
      transfers: [],
    };
    this.uploads.push(session);
    this.uploadBytes.set(session.id, []);
    return { status: 200, body: { id: session.id } };
  }

  private session(id: string): FakeMetaUploadSession {
    const session = this.uploads.find((s) => s.id === id || s.id.split('?')[0] === id.split('?')[0]);
    if (!session) throw unsupported('post', id);
    return session;
  }

  /** `GET /upload:{session}`: how far the upload got, to resume from there. */
  uploadStatus(sessionId: string): Answer {
    const session = this.session(sessionId);
    return { status: 200, body: { id: session.id, file_offset: session.offset } };
  }

  /**
   * Bytes that arrived for a session, from `file_offset`; a transfer cut short keeps what arrived (the fake's
   * `cutUploadAfter`). The file handle comes back once every byte is in.
   */
  receive(sessionId: string, offset: number, bytes: Buffer): void {
    const session = this.session(sessionId);
    session.transfers.push(offset);
    if (offset !== session.offset || session.handle !== null) return;
    const room = session.fileLength - session.offset;
    const kept = bytes.subarray(0, room);
    this.uploadBytes.get(session.id)!.push(kept);
    session.offset += kept.length;
    if (session.offset === session.fileLength) session.handle = `4:${randomBytes(18).toString('base64')}`;
  }

  /** `POST /upload:{session}` with `file_offset`: the bytes, sent raw, with `Authorization: OAuth {token}`. */
  transfer(request: GraphRequest, token: FakeMetaToken, sessionId: string): Answer {
    if (token.kind !== 'user')
      throw graphError(400, { message: '(#100) The upload session requires a user access token.', code: 100 });
    const session = this.session(sessionId);
    const offset = Number(request.headers.file_offset);
    if (!Number.isSafeInteger(offset) || offset !== session.offset)
      throw invalidParameter(
        `The file_offset header (${String(request.headers.file_offset)}) does not match the upload session's offset, ${session.offset}.`,
      );
    this.receive(sessionId, offset, request.body);
    if (session.handle !== null) return { status: 200, body: { h: session.handle } };
    return { status: 200, body: { id: session.id, file_offset: session.offset } };
  }

  uploadedBytes(sessionId: string): Buffer | undefined {
    const chunks = this.uploadBytes.get(sessionId);
    return chunks ? Buffer.concat(chunks) : undefined;
  }

  /** `POST /{page-id}/videos`: with an uploaded file's handle, a `file_url`, or a small multipart `source`. */
  async video(request: GraphRequest, token: FakeMetaToken, pageId: string): Promise<Answer> {
    const page = this.actingPage('post', pageId, token, ['pages_manage_posts', 'pages_read_engagement']);
    const { params, files } = request;
    let bytes: Buffer | undefined;
    let via: FakeMetaVideo['via'];
    if (params.fbuploader_video_file_chunk !== undefined) {
      via = 'handle';
      const session = this.uploads.find((s) => s.handle === params.fbuploader_video_file_chunk);
      if (!session)
        throw invalidParameter('The video file handle (fbuploader_video_file_chunk) is not a finished upload.');
      bytes = this.uploadedBytes(session.id);
    } else if (params.file_url !== undefined) {
      via = 'file_url';
      bytes = (await this.context.fetchMedia(params.file_url))?.bytes;
    } else if (files.source) {
      via = 'source';
      bytes = files.source.bytes;
    } else throw invalidParameter('Missing video file: fbuploader_video_file_chunk, file_url or source.');
    const type = bytes ? await this.context.sniff(bytes) : undefined;
    if (!bytes || !type || !VIDEO_TYPES.includes(type))
      throw graphError(400, {
        message: "The video file you selected is in a format that we don't support.",
        code: 352,
        error_user_title: 'Unsupported Video Format',
      });
    const id = this.context.newId();
    const post = this.newPost(page, 'video', {
      message: params.description ?? null,
      videoId: id,
    });
    this.videos.push({
      id,
      pageId: page.id,
      title: params.title ?? null,
      description: params.description ?? null,
      bytes,
      via,
      postId: post.id,
      createdAt: this.context.now(),
    });
    return { status: 200, body: { id } };
  }

  // ---- reading and commenting ----

  private postObject(post: FakeMetaPost): Record<string, unknown> {
    return {
      id: post.id,
      message: post.message ?? undefined,
      created_time: new Date(post.createdAt).toISOString().replace(/\.\d{3}Z$/, '+0000'),
      permalink_url: post.permalinkUrl,
      is_published: true,
      status_type:
        post.kind === 'photo'
          ? 'added_photos'
          : post.kind === 'video'
            ? 'added_video'
            : post.kind === 'link'
              ? 'shared_story'
              : 'mobile_status_update',
      attachments:
        post.photoIds.length > 0 ? { data: post.photoIds.map((id) => ({ target: { id }, type: 'photo' })) } : undefined,
    };
  }

  /** A Page object (post, photo, video) by id, as `GET /{id}` answers it; undefined when it is not one. */
  node(id: string, fields: string[] | undefined): Record<string, unknown> | undefined {
    const post = this.posts.find((p) => p.id === id);
    if (post) return pick(this.postObject(post), fields ?? ['created_time', 'message', 'id']);
    const photo = this.photos.find((p) => p.id === id);
    if (photo)
      return pick(
        {
          id: photo.id,
          name: photo.caption ?? undefined,
          created_time: new Date(photo.createdAt).toISOString().replace(/\.\d{3}Z$/, '+0000'),
          link: `https://www.facebook.com/photo.php?fbid=${photo.id}`,
          page_story_id: photo.postId ?? undefined,
        },
        fields ?? ['created_time', 'name', 'id'],
      );
    const video = this.videos.find((v) => v.id === id);
    if (video) {
      const page = this.page(video.pageId)!;
      return pick(
        {
          id: video.id,
          title: video.title ?? undefined,
          description: video.description ?? undefined,
          created_time: new Date(video.createdAt).toISOString().replace(/\.\d{3}Z$/, '+0000'),
          // A video's permalink_url is relative to www.facebook.com, unlike a post's.
          permalink_url: `/${page.username}/videos/${video.id}/`,
          post_id: video.postId,
        },
        fields ?? ['created_time', 'description', 'id'],
      );
    }
    return undefined;
  }

  /** `GET /{page-id}/posts` (also `/feed`, `/published_posts`): the Page's posts, newest first. */
  list(request: GraphRequest, pageId: string, origin: string): Answer {
    if (!this.page(pageId)) throw unsupported('get', pageId);
    const fields = fieldsOf(request.params, ['created_time', 'message', 'id']);
    const posts = this.posts
      .filter((p) => p.pageId === pageId)
      .sort((a, b) => b.createdAt - a.createdAt || this.posts.indexOf(b) - this.posts.indexOf(a))
      .map((post) => pick(this.postObject(post), fields));
    return { status: 200, body: pageOf(posts, request.params, origin, request.url.pathname) };
  }

  /** The Page an object (post, photo, video) belongs to. */
  ownerOf(id: string): string | undefined {
    return (
      this.posts.find((p) => p.id === id)?.pageId ??
      this.photos.find((p) => p.id === id)?.pageId ??
      this.videos.find((v) => v.id === id)?.pageId
    );
  }

  /** `POST /{object-id}/comments` on a Page's post, photo or video, as the Page (`pages_manage_engagement`). */
  comment(request: GraphRequest, token: FakeMetaToken, objectId: string): { answer: Answer; comment: FakeMetaComment } {
    const pageId = this.ownerOf(objectId)!;
    const scopes = this.context.scopesOf(token);
    if (token.kind !== 'page' || token.pageId !== pageId || !scopes.includes('pages_manage_engagement'))
      throw graphError(403, { message: '(#200) Permissions error', code: 200 });
    const message = request.params.message;
    if (!message && !request.params.attachment_url) throw invalidParameter('Missing message or attachment');
    const number = objectId.includes('_') ? objectId.split('_')[1]! : objectId;
    const comment: FakeMetaComment = {
      id: `${number}_${this.context.newId()}`,
      objectId,
      message: message ?? '',
      createdAt: this.context.now(),
      answerLost: false,
      from: { id: pageId, name: this.page(pageId)!.name },
    };
    this.comments.push(comment);
    return { answer: { status: 200, body: { id: comment.id } }, comment };
  }

  /**
   * `GET /{object-id}/comments` on a Page's post, photo or video, with a token of the Page: its comments in
   * chronological order (the edge's default), each with `id`, `message`, `created_time` and `from`.
   */
  listComments(request: GraphRequest, token: FakeMetaToken, objectId: string, origin: string): Answer {
    const pageId = this.ownerOf(objectId)!;
    if (token.kind !== 'page' || token.pageId !== pageId) throw unsupported('get', objectId);
    const fields = fieldsOf(request.params, ['created_time', 'from', 'message', 'id']);
    const comments = this.comments
      .filter((c) => c.objectId === objectId)
      .map((c) =>
        pick(
          {
            id: c.id,
            message: c.message,
            created_time: new Date(c.createdAt).toISOString().replace(/\.\d{3}Z$/, '+0000'),
            from: c.from,
          },
          fields,
        ),
      );
    return { status: 200, body: pageOf(comments, request.params, origin, request.url.pathname) };
  }
}
