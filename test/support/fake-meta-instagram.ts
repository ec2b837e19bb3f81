import { randomBytes } from 'node:crypto';
import type { FakeMetaInstagramAccount, FakeMetaPage, FakeMetaToken } from './fake-meta-login.js';
import type { FakeMetaComment } from './fake-meta-pages.js';
import {
  type Answer,
  containerExpired,
  fieldsOf,
  graphError,
  type GraphRequest,
  invalidParameter,
  listParameter,
  mediaNotAvailable,
  mediaNotFetched,
  noPermission,
  pageOf,
  pick,
  publishingLimitReached,
  unsupported,
} from './fake-meta-protocol.js';

// Instagram content publishing through Facebook Login (graph.facebook.com, a user or Page token, the IG user
// id), as the Instagram Platform documents it ("Content Publishing", "IG User Media", "IG Container",
// "IG User Media Publish", "IG User Content Publishing Limit", "IG Media", "IG Media Comments"):
//
// - `POST /{ig-user-id}/media` creates a container: an image (`image_url`), a reel (`media_type=REELS`,
//   `video_url`), a story (`STORIES`), a carousel item (`is_carousel_item=true`) or a carousel (`CAROUSEL` with
//   `children`, 2 to 10 items); Instagram downloads the media from the URL it is given (a JPEG of at most
//   8 MiB; an MP4 or MOV), so media that is not publicly fetchable fails: an image at once (code 9004,
//   subcode 2207052), a video when its container settles (`ERROR`);
// - `GET /{container-id}?fields=status_code,status` answers `IN_PROGRESS` for a number of polls, then
//   `FINISHED` (or `ERROR` with a message, or `EXPIRED` after 24 hours unpublished), `PUBLISHED` once published;
// - `POST /{ig-user-id}/media_publish` with `creation_id` publishes a `FINISHED` container, once: the
//   irreversible point; before it is ready, or again, it answers 9007/2207027; over the account's limit (50
//   in a moving 24 hours, `content_publishing_limit`) 9/2207042;
// - captions up to 2,200 characters, 30 hashtags and 20 @mentions; `collaborators` (up to 3) on the published
//   object (an image, a reel, the carousel), never on a carousel's items; `user_tags` on the image they tag (an
//   image's own container, or its item of a carousel), never on the carousel container;
// - `GET /{ig-media-id}/comments` lists a media's comments, newest first.

export type FakeMetaContainerStatus = 'IN_PROGRESS' | 'FINISHED' | 'ERROR' | 'EXPIRED' | 'PUBLISHED';
/** `VIDEO` only for a carousel's video item: for a video of its own, Meta takes `REELS`. */
export type FakeMetaContainerType = 'IMAGE' | 'VIDEO' | 'REELS' | 'STORIES' | 'CAROUSEL';

/** A media container of an Instagram account. */
export interface FakeMetaContainer {
  id: string;
  igUserId: string;
  mediaType: FakeMetaContainerType;
  isCarouselItem: boolean;
  imageUrl: string | null;
  videoUrl: string | null;
  caption: string | null;
  /** A carousel's item containers, in order. */
  children: string[];
  collaborators: string[];
  userTags: { username: string; x?: number; y?: number }[];
  /** Every parameter as sent. */
  params: Record<string, string>;
  statusCode: FakeMetaContainerStatus;
  /** The `status` text: why an `ERROR`. */
  status: string;
  /** Status reads that still answer `IN_PROGRESS`. */
  pollsLeft: number;
  /** Status reads answered. */
  polls: number;
  /** The media Instagram downloaded, null when it could not. */
  bytes: Buffer | null;
  createdAt: number;
  /** The media it became. */
  mediaId: string | null;
  /** How it settles when its polls run out (a switch, or the media that could not be fetched). */
  settlesAs: { statusCode: 'FINISHED' | 'ERROR' | 'EXPIRED'; status: string };
}

/** A published Instagram media. */
export interface FakeMetaMedia {
  id: string;
  igUserId: string;
  containerId: string;
  mediaType: 'IMAGE' | 'VIDEO' | 'CAROUSEL_ALBUM';
  productType: 'FEED' | 'REELS' | 'STORY';
  caption: string | null;
  shortcode: string;
  permalink: string;
  /** ms on the fake's clock. */
  createdAt: number;
  /** A carousel's items, as media of their own. */
  children: string[];
  collaborators: string[];
  userTags: { username: string; x?: number; y?: number }[];
  answerLost: boolean;
}

export interface InstagramContext {
  now(): number;
  newId(): string;
  pages: FakeMetaPage[];
  scopesOf(token: FakeMetaToken): string[];
  pagesOf(token: FakeMetaToken): FakeMetaPage[];
  fetchMedia(url: string): Promise<{ bytes: Buffer; type: string | undefined } | null>;
}

const DAY_MS = 86_400_000;
const MIB = 1024 * 1024;
const CAPTION_MAX = 2_200;
const HASHTAGS_MAX = 30;
const MENTIONS_MAX = 20;
const COLLABORATORS_MAX = 3;
const CAROUSEL_MIN = 2;
const CAROUSEL_MAX = 10;
const IMAGE_MAX_BYTES = 8 * MIB;
const VIDEO_TYPES = ['video/mp4', 'video/quicktime'];
const STATUS_TEXT: Record<'IN_PROGRESS' | 'FINISHED' | 'EXPIRED' | 'PUBLISHED', string> = {
  IN_PROGRESS: 'In Progress: Media is still being processed.',
  FINISHED: 'Finished: Media has been uploaded and it is ready to be published.',
  EXPIRED: 'Expired: Media was not published within 24 hours.',
  PUBLISHED: 'Published: Media has been successfully published.',
};
const PUBLISHING_NEEDS = ['instagram_basic', 'instagram_content_publish', 'pages_read_engagement'];
const READING_NEEDS = ['instagram_basic', 'pages_read_engagement'];
const COMMENTING_NEEDS = ['instagram_basic', 'instagram_manage_comments', 'pages_read_engagement'];

const timestamp = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, '+0000');
const shortcode = () => randomBytes(8).toString('base64url').slice(0, 11);

/** The Instagram part of the fake: containers, media, the publishing limit, comments. */
export class InstagramStore {
  readonly containers: FakeMetaContainer[] = [];
  readonly media: FakeMetaMedia[] = [];
  readonly comments: FakeMetaComment[] = [];
  /** When each publication counted against an account's limit (ms), by IG user id. */
  private readonly published = new Map<string, number[]>();
  private pollsBeforeSettling = 1;
  private nextSettles: FakeMetaContainer['settlesAs'][] = [];
  quotaTotal = 50;

  constructor(private readonly context: InstagramContext) {}

  processingPolls(count: number): void {
    this.pollsBeforeSettling = count;
  }

  settleNext(settles: FakeMetaContainer['settlesAs']): void {
    this.nextSettles.push(settles);
  }

  usePublishingQuota(igUserId: string, count: number): void {
    const list = this.published.get(igUserId) ?? [];
    for (let i = 0; i < count; i++) list.push(this.context.now());
    this.published.set(igUserId, list);
  }

  quotaUsage(igUserId: string): number {
    const since = this.context.now() - DAY_MS;
    return (this.published.get(igUserId) ?? []).filter((at) => at > since).length;
  }

  account(id: string): { page: FakeMetaPage; account: FakeMetaInstagramAccount } | undefined {
    const page = this.context.pages.find((p) => p.instagram?.id === id);
    return page ? { page, account: page.instagram! } : undefined;
  }

  /** The account a request acts on: one linked to a Page the token may act for, with the permissions needed. */
  private acting(method: string, igUserId: string, token: FakeMetaToken, needs: string[]) {
    const found = this.account(igUserId);
    if (!found || !this.context.pagesOf(token).some((p) => p.id === found.page.id)) throw unsupported(method, igUserId);
    const scopes = this.context.scopesOf(token);
    if (!needs.every((scope) => scopes.includes(scope))) throw noPermission();
    return found.account;
  }

  // ---- containers ----

  private checkCaption(caption: string): void {
    if ([...caption].length > CAPTION_MAX)
      throw invalidParameter(`The caption is longer than ${CAPTION_MAX} characters.`);
    if ((caption.match(/#[\p{L}\p{N}_]+/gu) ?? []).length > HASHTAGS_MAX)
      throw invalidParameter(`The caption has more than ${HASHTAGS_MAX} hashtags.`);
    if ((caption.match(/@[\w.]+/g) ?? []).length > MENTIONS_MAX)
      throw invalidParameter(`The caption has more than ${MENTIONS_MAX} @ tags.`);
  }

  private userTags(value: string | undefined): FakeMetaContainer['userTags'] {
    if (value === undefined) return [];
    let parsed: unknown;
    try {
      parsed = JSON.parse(value);
    } catch {
      throw invalidParameter('Param user_tags must be a JSON array.');
    }
    if (!Array.isArray(parsed)) throw invalidParameter('Param user_tags must be a JSON array.');
    return parsed.map((tag: unknown, index) => {
      const { username, x, y } = (tag ?? {}) as { username?: unknown; x?: unknown; y?: unknown };
      if (typeof username !== 'string') throw invalidParameter(`Param user_tags[${index}][username] is required.`);
      for (const [name, coordinate] of [
        ['x', x],
        ['y', y],
      ] as const)
        if (coordinate !== undefined && (typeof coordinate !== 'number' || coordinate < 0 || coordinate > 1))
          throw invalidParameter(`Param user_tags[${index}][${name}] must be a number from 0 to 1.`);
      return { username, ...(typeof x === 'number' ? { x } : {}), ...(typeof y === 'number' ? { y } : {}) };
    });
  }

  /** `POST /{ig-user-id}/media`. */
  async create(request: GraphRequest, token: FakeMetaToken, igUserId: string): Promise<Answer> {
    this.acting('post', igUserId, token, PUBLISHING_NEEDS);
    const { params } = request;
    const isCarouselItem = params.is_carousel_item === 'true';
    const declared = params.media_type;
    if (declared === 'VIDEO' && !isCarouselItem)
      throw invalidParameter(
        'The VIDEO media type is no longer supported for feed videos. Use REELS.',
        'Post videos as reels: media_type=REELS.',
      );
    if (declared !== undefined && !['IMAGE', 'VIDEO', 'REELS', 'STORIES', 'CAROUSEL'].includes(declared))
      throw invalidParameter('Param media_type must be one of {CAROUSEL, REELS, STORIES, IMAGE, VIDEO}');
    const mediaType = (declared ?? 'IMAGE') as FakeMetaContainerType;
    const imageUrl = params.image_url ?? null;
    const videoUrl = params.video_url ?? null;
    const caption = params.caption ?? null;
    const collaborators = listParameter(params.collaborators) ?? [];
    const userTags = this.userTags(params.user_tags);

    if (isCarouselItem && (caption !== null || collaborators.length > 0))
      throw invalidParameter('A carousel item takes no caption or collaborators: they go on the carousel container.');
    if (mediaType === 'CAROUSEL' && userTags.length > 0)
      throw invalidParameter('A carousel takes no user_tags: they go on the item container of the image they tag.');
    if (mediaType === 'STORIES' && (collaborators.length > 0 || userTags.length > 0))
      throw invalidParameter('Stories take no collaborators or user_tags.');
    if (collaborators.length > COLLABORATORS_MAX)
      throw invalidParameter(`Param collaborators takes at most ${COLLABORATORS_MAX} usernames.`);
    if (caption !== null) this.checkCaption(caption);

    const base = {
      id: this.context.newId(),
      igUserId,
      mediaType,
      isCarouselItem,
      imageUrl,
      videoUrl,
      caption: mediaType === 'STORIES' ? null : caption,
      children: [] as string[],
      collaborators,
      userTags,
      params: { ...params },
      statusCode: 'IN_PROGRESS' as FakeMetaContainerStatus,
      status: STATUS_TEXT.IN_PROGRESS,
      pollsLeft: this.pollsBeforeSettling,
      polls: 0,
      bytes: null as Buffer | null,
      createdAt: this.context.now(),
      mediaId: null,
      settlesAs: { statusCode: 'FINISHED' as const, status: STATUS_TEXT.FINISHED },
    };

    if (mediaType === 'CAROUSEL') {
      if (isCarouselItem) throw invalidParameter('A carousel cannot be a carousel item.');
      const children = listParameter(params.children) ?? [];
      if (children.length < CAROUSEL_MIN || children.length > CAROUSEL_MAX)
        throw invalidParameter(`Param children must have from ${CAROUSEL_MIN} to ${CAROUSEL_MAX} items.`);
      for (const id of children) {
        const child = this.containers.find((c) => c.id === id);
        if (!child || child.igUserId !== igUserId || !child.isCarouselItem)
          throw invalidParameter(`The child ${id} is not a carousel item container of this account.`);
        // Each item must have been seen FINISHED first: creating the carousel reads no status.
        this.expire(child);
        if (child.statusCode !== 'FINISHED') throw mediaNotAvailable();
      }
      return this.add({ ...base, children });
    }

    if (mediaType === 'REELS' || mediaType === 'VIDEO' || (mediaType === 'STORIES' && videoUrl !== null)) {
      if (videoUrl === null) throw invalidParameter('The parameter video_url is required');
      // A video is downloaded while the container is processed: a failure shows in its status, not here.
      const fetched = await this.context.fetchMedia(videoUrl);
      if (!fetched)
        return this.add({
          ...base,
          settlesAs: {
            statusCode: 'ERROR',
            status: "Error: Media download has failed. The media URI doesn't meet our requirements.",
          },
        });
      if (!fetched.type || !VIDEO_TYPES.includes(fetched.type))
        return this.add({
          ...base,
          bytes: fetched.bytes,
          settlesAs: { statusCode: 'ERROR', status: 'Error: Media upload has failed with error code 2207026' },
        });
      return this.add({ ...base, bytes: fetched.bytes });
    }

    if (imageUrl === null) throw invalidParameter('The parameter image_url is required');
    if (videoUrl !== null)
      throw invalidParameter('Param video_url needs media_type REELS, STORIES, or VIDEO for a carousel item');
    const fetched = await this.context.fetchMedia(imageUrl);
    // "JPEG is the only image format supported."
    if (!fetched || fetched.type !== 'image/jpeg') throw mediaNotFetched(imageUrl);
    if (fetched.bytes.length > IMAGE_MAX_BYTES)
      throw graphError(400, {
        message: 'The image size is too large.',
        code: 36000,
        error_subcode: 2207004,
        is_transient: false,
        error_user_title: 'Image size too large',
        error_user_msg: 'The image is too large to download. It should be less than 8 MiB.',
      });
    return this.add({ ...base, bytes: fetched.bytes });
  }

  private add(container: FakeMetaContainer): Answer {
    const switched = this.nextSettles.shift();
    if (switched && container.settlesAs.statusCode === 'FINISHED') container.settlesAs = switched;
    this.containers.push(container);
    return { status: 200, body: { id: container.id } };
  }

  /** A status read: `IN_PROGRESS` until its polls run out, then how it settles; `EXPIRED` 24 hours on. */
  private read(container: FakeMetaContainer): void {
    container.polls += 1;
    if (container.statusCode === 'IN_PROGRESS') {
      if (container.pollsLeft > 0) container.pollsLeft -= 1;
      else {
        container.statusCode = container.settlesAs.statusCode;
        container.status = container.settlesAs.status;
      }
    }
    this.expire(container);
  }

  private expire(container: FakeMetaContainer): void {
    if (
      container.statusCode !== 'PUBLISHED' &&
      container.statusCode !== 'ERROR' &&
      container.createdAt + DAY_MS <= this.context.now()
    ) {
      container.statusCode = 'EXPIRED';
      container.status = STATUS_TEXT.EXPIRED;
    }
  }

  containerNode(container: FakeMetaContainer, request: GraphRequest, token: FakeMetaToken): Answer {
    this.acting('get', container.igUserId, token, READING_NEEDS);
    const fields = fieldsOf(request.params, ['id']);
    if (fields.includes('status_code') || fields.includes('status')) this.read(container);
    else this.expire(container);
    return {
      status: 200,
      body: pick({ id: container.id, status_code: container.statusCode, status: container.status }, fields),
    };
  }

  // ---- publishing ----

  /** `POST /{ig-user-id}/media_publish` with `creation_id`: the irreversible point. */
  publish(request: GraphRequest, token: FakeMetaToken, igUserId: string): FakeMetaMedia {
    const account = this.acting('post', igUserId, token, PUBLISHING_NEEDS);
    const containerId = request.params.creation_id;
    if (!containerId) throw invalidParameter('The parameter creation_id is required');
    const container = this.containers.find((c) => c.id === containerId && c.igUserId === igUserId);
    if (!container) throw invalidParameter(`Param creation_id ${containerId} is not a container of this account.`);
    if (container.isCarouselItem)
      throw invalidParameter('A carousel item cannot be published on its own: publish its carousel container.');
    if (this.quotaUsage(igUserId) >= this.quotaTotal) throw publishingLimitReached();
    this.expire(container);
    if (container.statusCode === 'EXPIRED') throw containerExpired();
    // Not ready, failed, or published already: Meta's container cannot (again) become media.
    if (container.statusCode !== 'FINISHED') throw mediaNotAvailable();

    const productType =
      container.mediaType === 'STORIES' ? 'STORY' : container.mediaType === 'REELS' ? 'REELS' : 'FEED';
    const mediaType =
      container.mediaType === 'CAROUSEL' ? 'CAROUSEL_ALBUM' : container.videoUrl !== null ? 'VIDEO' : 'IMAGE';
    const children = container.children.map((childId) => {
      const child = this.containers.find((c) => c.id === childId)!;
      const media = this.newMedia(child, account, child.videoUrl !== null ? 'VIDEO' : 'IMAGE', 'FEED');
      child.statusCode = 'PUBLISHED';
      child.status = STATUS_TEXT.PUBLISHED;
      child.mediaId = media.id;
      return media.id;
    });
    const media = this.newMedia(container, account, mediaType, productType, children);
    container.statusCode = 'PUBLISHED';
    container.status = STATUS_TEXT.PUBLISHED;
    container.mediaId = media.id;
    this.usePublishingQuota(igUserId, 1);
    return media;
  }

  private newMedia(
    container: FakeMetaContainer,
    account: FakeMetaInstagramAccount,
    mediaType: FakeMetaMedia['mediaType'],
    productType: FakeMetaMedia['productType'],
    children: string[] = [],
  ): FakeMetaMedia {
    const id = this.context.newId();
    const code = shortcode();
    const media: FakeMetaMedia = {
      id,
      igUserId: container.igUserId,
      containerId: container.id,
      mediaType,
      productType,
      caption: container.caption,
      shortcode: code,
      permalink:
        productType === 'STORY'
          ? `https://instagram.com/stories/${account.username}/${id}`
          : `https://www.instagram.com/${productType === 'REELS' ? 'reel' : 'p'}/${code}/`,
      createdAt: this.context.now(),
      children,
      collaborators: container.collaborators,
      userTags: container.userTags,
      answerLost: false,
    };
    // A carousel's items are media of their own, but not in the account's list.
    this.media.push(media);
    return media;
  }

  /** `GET /{ig-user-id}/content_publishing_limit?fields=quota_usage,config`. */
  limit(request: GraphRequest, token: FakeMetaToken, igUserId: string): Answer {
    this.acting('get', igUserId, token, READING_NEEDS);
    const since = request.params.since;
    if (since !== undefined && (!/^\d+$/.test(since) || Number(since) * 1000 < this.context.now() - DAY_MS))
      throw invalidParameter('Param since must be a Unix timestamp no older than 24 hours.');
    const fields = fieldsOf(request.params, ['quota_usage']);
    const entry: Record<string, unknown> = {};
    if (fields.includes('quota_usage')) entry.quota_usage = this.quotaUsage(igUserId);
    if (fields.includes('config')) entry.config = { quota_total: this.quotaTotal, quota_duration: 86_400 };
    return { status: 200, body: { data: [entry] } };
  }

  // ---- reading and commenting ----

  private mediaObject(media: FakeMetaMedia): Record<string, unknown> {
    const account = this.account(media.igUserId)!.account;
    return {
      id: media.id,
      caption: media.caption ?? undefined,
      media_type: media.mediaType,
      media_product_type: media.productType,
      permalink: media.permalink,
      shortcode: media.shortcode,
      timestamp: timestamp(media.createdAt),
      username: account.username,
      owner: { id: media.igUserId },
      is_comment_enabled: media.productType !== 'STORY',
      comments_count: this.comments.filter((c) => c.objectId === media.id).length,
      like_count: 0,
      children: media.children.length > 0 ? { data: media.children.map((id) => ({ id })) } : undefined,
    };
  }

  /** A container, a media or an account by id, as `GET /{id}` answers it; undefined when it is none. */
  node(id: string, request: GraphRequest, token: FakeMetaToken): Answer | undefined {
    const container = this.containers.find((c) => c.id === id);
    if (container) return this.containerNode(container, request, token);
    const media = this.media.find((m) => m.id === id);
    if (media) {
      this.acting('get', media.igUserId, token, READING_NEEDS);
      return { status: 200, body: pick(this.mediaObject(media), fieldsOf(request.params, ['id'])) };
    }
    const found = this.account(id);
    if (found) {
      this.acting('get', id, token, READING_NEEDS);
      const { account } = found;
      const listed = this.media.filter((m) => m.igUserId === id && !this.isChild(m));
      return {
        status: 200,
        body: pick(
          {
            id: account.id,
            username: account.username,
            name: account.name,
            profile_picture_url: account.profilePictureUrl,
            followers_count: account.followersCount,
            media_count: listed.filter((m) => m.productType !== 'STORY').length,
          },
          fieldsOf(request.params, ['id']),
        ),
      };
    }
    return undefined;
  }

  private isChild(media: FakeMetaMedia): boolean {
    return this.media.some((m) => m.children.includes(media.id));
  }

  /** `GET /{ig-user-id}/media` (feed posts and reels) or `/stories` (stories of the last 24 hours), newest first. */
  list(request: GraphRequest, token: FakeMetaToken, igUserId: string, stories: boolean, origin: string): Answer {
    this.acting('get', igUserId, token, READING_NEEDS);
    const fields = fieldsOf(request.params, ['id']);
    const since = this.context.now() - DAY_MS;
    const items = this.media
      .filter(
        (m) =>
          m.igUserId === igUserId &&
          !this.isChild(m) &&
          (stories ? m.productType === 'STORY' && m.createdAt > since : m.productType !== 'STORY'),
      )
      .reverse()
      .map((m) => pick(this.mediaObject(m), fields));
    return { status: 200, body: pageOf(items, request.params, origin, request.url.pathname) };
  }

  /** `GET /{ig-media-id}/comments`: the media's comments, newest first (IG Media Comments). */
  listComments(request: GraphRequest, token: FakeMetaToken, mediaId: string, origin: string): Answer {
    const media = this.media.find((m) => m.id === mediaId)!;
    this.acting('get', media.igUserId, token, READING_NEEDS);
    const { username } = this.account(media.igUserId)!.account;
    const fields = fieldsOf(request.params, ['id', 'text', 'timestamp']);
    const items = this.comments
      .filter((c) => c.objectId === mediaId)
      .reverse()
      .map((c) =>
        pick(
          {
            id: c.id,
            text: c.message,
            timestamp: timestamp(c.createdAt),
            username,
            from: { id: media.igUserId, username },
            media: { id: mediaId },
          },
          fields,
        ),
      );
    return { status: 200, body: pageOf(items, request.params, origin, request.url.pathname) };
  }

  /** `POST /{ig-media-id}/comments`: a comment on the account's own media (not a story). */
  comment(request: GraphRequest, token: FakeMetaToken, mediaId: string): { answer: Answer; comment: FakeMetaComment } {
    const media = this.media.find((m) => m.id === mediaId)!;
    this.acting('post', media.igUserId, token, COMMENTING_NEEDS);
    if (media.productType === 'STORY') throw unsupported('post', mediaId);
    const message = request.params.message;
    if (!message) throw invalidParameter('The parameter message is required');
    const comment: FakeMetaComment = {
      id: this.context.newId(),
      objectId: mediaId,
      message,
      createdAt: this.context.now(),
      answerLost: false,
    };
    this.comments.push(comment);
    return { answer: { status: 200, body: { id: comment.id } }, comment };
  }
}
