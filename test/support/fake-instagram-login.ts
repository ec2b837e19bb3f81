import {
  Authorization,
  type FakeGraphConsent,
  type FakeGraphToken,
  type GraphApp,
  longLivedTokens,
  SHORT_LIVED_SECONDS,
  TokenStore,
} from './fake-graph-login.js';
import {
  type Answer,
  type FakeGraphErrorRecord,
  type FakeGraphRequestRecord,
  fieldsOf,
  GraphError,
  graphIds,
  graphTime,
  type GraphRateLimitCode,
  type GraphRequest,
  invalidParameter,
  permissionMissing,
  pageOf,
  pick,
  serveGraph,
  shortcode,
  Switches,
  unsupportedRequest,
} from './fake-graph-protocol.js';
import {
  ContainerStore,
  downloadMedia,
  type FakeGraphContainer,
  type FakeGraphDownload,
  imageTooLarge,
  MAX_IMAGE_BYTES,
  PublishingQuota,
  QUOTA_DURATION_SECONDS,
} from './fake-graph-publishing.js';

export type { FakeGraphConsent, FakeGraphToken } from './fake-graph-login.js';
export type { FakeGraphErrorRecord } from './fake-graph-protocol.js';
export type { FakeGraphContainer, FakeGraphDownload } from './fake-graph-publishing.js';

/** The Instagram professional account that consents at the fake authorization window and owns every media. */
export interface FakeInstagramAccount {
  /** The app-scoped id `/me` answers as `id`. */
  id: string;
  /** The professional account's id (`user_id`): the `<IG_ID>` of the publishing endpoints and the token's user. */
  userId: string;
  username: string;
  name: string;
  /** `BUSINESS` or `MEDIA_CREATOR`. */
  accountType: string;
  profilePictureUrl: string;
  followersCount: number;
}

/** A media published on the fake Instagram. */
export interface FakeInstagramMedia {
  id: string;
  containerId: string;
  /** `IMAGE`, `VIDEO` or `CAROUSEL_ALBUM`. */
  mediaType: string;
  /** `FEED`, `REELS` or `STORY`. */
  productType: string;
  caption: string | null;
  shortcode: string;
  permalink: string;
  /** ms on the fake's clock. */
  publishedAt: number;
  mediaUrl: string | null;
  /** A carousel's items, as media of their own. */
  children: string[];
  carouselItem: boolean;
  /** Published, but the connection was cut before Instagram answered (`loseNextAnswer('publish')`). */
  answerLost: boolean;
}

/** A comment made through the API. */
export interface FakeInstagramComment {
  id: string;
  mediaId: string;
  text: string;
  /** ms on the fake's clock. */
  createdAt: number;
  answerLost: boolean;
}

/** The Graph calls the fake serves, for the switches. */
export type FakeInstagramOperation =
  | 'me'
  | 'createContainer'
  | 'readObject'
  | 'publish'
  | 'publishingLimit'
  | 'listMedia'
  | 'comment'
  | 'listComments'
  | 'refreshToken';

/**
 * A stand-in for the Instagram API with Instagram Login on a loopback port, following developers.facebook.com's
 * Instagram Platform pages: the authorization window (www.instagram.com/oauth/authorize, the
 * `instagram_business_*` permissions), `POST /oauth/access_token` (api.instagram.com: a short-lived token),
 * `GET /access_token?grant_type=ig_exchange_token` and `GET /refresh_access_token?grant_type=ig_refresh_token`
 * (graph.instagram.com: 60 days, refreshed once a day old), and on graph.instagram.com, versioned (`/v23.0/` by
 * default) or not: `/me`, containers (`POST /<IG_ID>/media`: an image, `REELS`, `STORIES`, `CAROUSEL` of 2 to 10
 * items), their status (`GET /<CONTAINER_ID>?fields=status_code,status`), `POST /<IG_ID>/media_publish`, the
 * media (`GET /<MEDIA_ID>?fields=permalink,…`), the account's media, `/<IG_ID>/content_publishing_limit` and
 * comments (`POST /<MEDIA_ID>/comments`).
 *
 * As Instagram does: it fetches `image_url` and `video_url` itself (an image that cannot be fetched, or is not a
 * JPEG, fails the container's creation with 9004/2207052; a video its processing); images are at most 8 MiB,
 * captions 2,200 characters, 30 hashtags and 20 @ tags; publishing a container not finished answers
 * 9007/2207027, an expired one 2207020; a container is published once and lives a day; the rolling day's
 * publishing quota is enforced at `media_publish` (9/2207042). The token endpoint answers the
 * reference's flat `{access_token, user_id, permissions}`, `user_id` a JSON number too large for a double;
 * `tokenAnswerInData()` gives the Business Login guide's `{"data": [{…}]}` instead: an adapter reads both.
 */
export interface FakeInstagramLogin {
  /** Everything's origin (www.instagram.com's window, api.instagram.com's and graph.instagram.com's endpoints). */
  url: string;
  /** `${url}/oauth/authorize`: consents at once as `account`, unless `deny()`. */
  authorizeUrl: string;
  /** The API's base, `${url}/v23.0` (or the version given). */
  graphUrl: string;
  version: string;
  appId: string;
  appSecret: string;
  account: FakeInstagramAccount;
  consents: FakeGraphConsent[];
  tokens: FakeGraphToken[];
  containers: FakeGraphContainer[];
  /** Published media, carousel items included, in order of publication. */
  media: FakeInstagramMedia[];
  comments: FakeInstagramComment[];
  /** Every fetch of a container's media. */
  downloads: FakeGraphDownload[];
  /** Every error answered, with its `fbtrace_id`. */
  errors: FakeGraphErrorRecord[];
  requests: FakeGraphRequestRecord[];

  /** The next consent answers `error=access_denied`: the user cancelled. */
  deny(): void;
  /** The next consent grants only these permissions (and `instagram_business_basic`). */
  grantOnly(scopes: string[]): void;
  /** The token endpoint answers the Business Login guide's `{"data": [{access_token, user_id, permissions}]}`. */
  tokenAnswerInData(on: boolean): void;
  /** Every token issued so far has expired: calls with them answer 190 (subcode 463). */
  expireTokens(): void;
  /** The user removed the app: every token answers 190 (subcode 458). */
  revokeTokens(): void;
  advanceClock(seconds: number): void;
  now(): number;
  /**
   * Status reads a container answers IN_PROGRESS before it settles, for every container created from now on;
   * undefined: Instagram's own pace (an image at once, a video or a carousel after one read).
   */
  processingPolls(count: number | undefined): void;
  /** The next container created ends ERROR (with this error code in `status`) or EXPIRED once its polls are done. */
  endNextContainer(status: 'ERROR' | 'EXPIRED', errorCode?: string): void;
  /** The next `count` calls (of `operation`, or any Graph call) are refused with this rate-limit code. */
  rateLimitNext(code: GraphRateLimitCode, operation?: FakeInstagramOperation, count?: number): void;
  /** The next call (of `operation`, or any) fails with a 5xx, having done nothing. */
  failNext(status?: number, operation?: FakeInstagramOperation): void;
  /** The next call of `operation` is done (the media published, the comment made), then the connection is cut. */
  loseNextAnswer(operation: FakeInstagramOperation): void;
  /**
   * The next call of `operation` that is done, after `skip` others, holds its answer back: it is sent `ms` later,
   * or, without `ms`, never; a caller that goes away meanwhile gets none (the media stays published).
   */
  holdNextAnswer(operation: FakeInstagramOperation, options?: { ms?: number; skip?: number }): void;
  /** Answers held back now: their work done, not sent yet, their callers still waiting. */
  heldAnswers(): number;
  /** Counts `count` publications as made now, toward the rolling day's quota. */
  usePublishingQuota(count: number): void;
  close(): Promise<void>;
}

export const INSTAGRAM_LOGIN_SCOPES = [
  'instagram_business_basic',
  'instagram_business_content_publish',
  'instagram_business_manage_comments',
  'instagram_business_manage_messages',
  'instagram_business_manage_insights',
];
const CAROUSEL_ITEMS = { min: 2, max: 10 };
const COLLABORATORS_MAX = 3;
const CAPTION = { characters: 2200, hashtags: 30, mentions: 20 };
const MEDIA_TYPES = ['IMAGE', 'VIDEO', 'REELS', 'STORIES', 'CAROUSEL'];
const VIDEO_TYPES = ['video/mp4', 'video/quicktime'];
const OAUTH = 'OAuthException';
const STATUS_TEXT: Record<string, string> = {
  IN_PROGRESS: 'In Progress: Media is still being processed.',
  FINISHED: 'Finished: Media container is ready to be published.',
  PUBLISHED: 'Published: Media has been published.',
  EXPIRED: 'Expired: Media container has expired.',
};

export async function startFakeInstagramLogin(
  options: {
    account?: Partial<FakeInstagramAccount>;
    appId?: string;
    appSecret?: string;
    redirectUris?: string[];
    /** The Graph API version the fake answers under (and unversioned); others are refused. */
    version?: string;
    /**
     * Publications a rolling day (the content publishing guide's limit; the reference's example answer shows
     * 50).
     */
    publishingQuota?: number;
  } = {},
): Promise<FakeInstagramLogin> {
  const account: FakeInstagramAccount = {
    id: '7382910465537281',
    userId: '17841405793187218',
    username: 'acme.studio',
    name: 'Acme Studio',
    accountType: 'BUSINESS',
    profilePictureUrl: 'https://scontent.cdninstagram.example/profile.jpg',
    followersCount: 1520,
    ...options.account,
  };
  const version = options.version ?? 'v23.0';
  const app: GraphApp = {
    appId: options.appId ?? '990602627938099',
    appSecret: options.appSecret ?? 'fake-instagram-app-secret',
    redirectUris: options.redirectUris ?? [],
    knownScopes: INSTAGRAM_LOGIN_SCOPES,
    basicScope: 'instagram_business_basic',
  };
  let clockOffsetMs = 0;
  const now = () => Date.now() + clockOffsetMs;
  const newId = graphIds(17_900_000_000_000_000n);
  const authorization = new Authorization(app, now);
  const tokens = new TokenStore(now, 'IGAA', app.appId);
  const containers = new ContainerStore(now, newId);
  const quota = new PublishingQuota(now, options.publishingQuota ?? 100);
  const switches = new Switches<FakeInstagramOperation>();
  const longLived = longLivedTokens(tokens, app, { exchange: 'ig_exchange_token', refresh: 'ig_refresh_token' });
  const media: FakeInstagramMedia[] = [];
  const comments: FakeInstagramComment[] = [];
  const downloads: FakeGraphDownload[] = [];
  const errors: FakeGraphErrorRecord[] = [];
  const requests: FakeGraphRequestRecord[] = [];
  let inData = false;

  const needs = (token: FakeGraphToken, ...scopes: string[]) => {
    for (const scope of scopes) if (!token.scopes.includes(scope)) throw permissionMissing(scope);
  };
  const isAccount = (id: string) => id === 'me' || id === account.userId || id === account.id;
  const findMedia = (id: string) => media.find((m) => m.id === id);

  // ---- containers ----

  const mediaDownloadFailed = (url: string) =>
    new GraphError(400, {
      message: 'Only photo or video can be accepted as media type.',
      type: OAUTH,
      code: 9004,
      error_subcode: 2207052,
      is_transient: false,
      error_user_title: "Media download has failed. The media URI doesn't meet our requirements.",
      error_user_msg: `The media could not be fetched from this URI: ${url}. Please check the limitations section in our development document for more information.`,
    });

  const createContainer = async (request: GraphRequest, token: FakeGraphToken): Promise<Answer> => {
    needs(token, 'instagram_business_content_publish');
    const p = request.params;
    const params = Object.fromEntries(p);
    const isCarouselItem = p.get('is_carousel_item') === 'true';
    const mediaType = p.get('media_type') ?? 'IMAGE';
    if (!MEDIA_TYPES.includes(mediaType))
      throw invalidParameter(OAUTH, `(#100) Param media_type must be one of {${MEDIA_TYPES.join(', ')}}`);
    if (mediaType === 'VIDEO' && !isCarouselItem)
      throw invalidParameter(
        OAUTH,
        'The VIDEO media type is only for carousel items: publish a single video as REELS.',
        2207023,
      );
    if (isCarouselItem && mediaType !== 'IMAGE' && mediaType !== 'VIDEO')
      throw invalidParameter(OAUTH, 'A carousel item must be an image or a VIDEO.', 2207023);
    const caption = p.get('caption');
    if (caption !== null) {
      // The content publishing guide's limits; Meta does not document the refusal's wording.
      const hashtags = caption.match(/(?:^|[^\p{L}\p{N}_&])#[\p{L}\p{N}_]+/gu)?.length ?? 0;
      const mentions = caption.match(/(?:^|[^\p{L}\p{N}_.])@[\p{L}\p{N}_.]+/gu)?.length ?? 0;
      if ([...caption].length > CAPTION.characters || hashtags > CAPTION.hashtags || mentions > CAPTION.mentions)
        throw invalidParameter(
          OAUTH,
          `A caption is limited to ${CAPTION.characters} characters, ${CAPTION.hashtags} hashtags and ${CAPTION.mentions} @ tags.`,
        );
    }
    const collaborators = p.get('collaborators');
    if (collaborators !== null) {
      let list: unknown;
      try {
        list = JSON.parse(collaborators);
      } catch {
        list = undefined;
      }
      if (!Array.isArray(list) || list.some((name) => typeof name !== 'string'))
        throw invalidParameter(OAUTH, '(#100) Param collaborators must be an array of usernames');
      if (isCarouselItem)
        throw invalidParameter(OAUTH, 'Collaborators are set on the carousel container, not on its items.');
      if (list.length > COLLABORATORS_MAX)
        throw invalidParameter(OAUTH, `A post can have at most ${COLLABORATORS_MAX} collaborators.`);
    }

    if (mediaType === 'CAROUSEL') {
      const children = (p.get('children') ?? '')
        .split(',')
        .map((c) => c.trim())
        .filter((c) => c !== '');
      if (children.length < CAROUSEL_ITEMS.min || children.length > CAROUSEL_ITEMS.max)
        throw invalidParameter(OAUTH, `A carousel has ${CAROUSEL_ITEMS.min} to ${CAROUSEL_ITEMS.max} items.`, 2207028);
      for (const id of children) {
        const child = containers.find(id);
        if (!child || !child.isCarouselItem) throw unsupportedRequest('post', id);
        if (child.status === 'ERROR' || child.status === 'EXPIRED')
          throw invalidParameter(OAUTH, `The carousel item ${id} cannot be used.`, 2207028);
      }
      return created(
        containers.create({ mediaType, params, isCarouselItem, children, defaultPolls: 1, download: null }),
      );
    }
    const image = mediaType === 'IMAGE' || (mediaType === 'STORIES' && p.has('image_url'));
    const urlName = image ? 'image_url' : 'video_url';
    const url = p.get(urlName);
    if (!url) throw invalidParameter(OAUTH, `The parameter ${urlName} is required.`);
    const download = await downloadMedia(url, downloads);
    if (image) {
      // An image is fetched while the container is made; Instagram publishes JPEG images only.
      if (download.sniffed !== 'image/jpeg') throw mediaDownloadFailed(url);
      if (download.bytes > MAX_IMAGE_BYTES) throw imageTooLarge(OAUTH);
      return created(containers.create({ mediaType, params, isCarouselItem, children: [], defaultPolls: 0, download }));
    }
    // A video is fetched while it is processed: one Instagram cannot fetch ends the container in ERROR.
    const fetched = download.sniffed !== null && VIDEO_TYPES.includes(download.sniffed);
    return created(
      containers.create({
        mediaType,
        params,
        isCarouselItem,
        children: [],
        defaultPolls: 1,
        download,
        ...(fetched ? {} : { failure: '2207052' }),
      }),
    );
  };
  const created = (container: FakeGraphContainer): Answer => ({ status: 200, body: { id: container.id } });

  // ---- publishing ----

  const publishAs = (container: FakeGraphContainer, carouselItem: boolean, children: string[]): FakeInstagramMedia => {
    const code = shortcode();
    const kind = container.mediaType;
    const productType = kind === 'REELS' ? 'REELS' : kind === 'STORIES' ? 'STORY' : 'FEED';
    const id = newId();
    const published: FakeInstagramMedia = {
      id,
      containerId: container.id,
      mediaType:
        kind === 'CAROUSEL'
          ? 'CAROUSEL_ALBUM'
          : kind === 'REELS' || kind === 'VIDEO' || (kind === 'STORIES' && container.params.video_url)
            ? 'VIDEO'
            : 'IMAGE',
      productType,
      caption: carouselItem ? null : (container.params.caption ?? null),
      shortcode: code,
      permalink:
        productType === 'REELS'
          ? `https://www.instagram.com/reel/${code}/`
          : productType === 'STORY'
            ? `https://www.instagram.com/stories/${account.username}/${id}/`
            : `https://www.instagram.com/p/${code}/`,
      publishedAt: now(),
      mediaUrl: container.params.image_url ?? container.params.video_url ?? null,
      children,
      carouselItem,
      answerLost: false,
    };
    media.push(published);
    container.status = 'PUBLISHED';
    container.mediaId = published.id;
    return published;
  };

  const publish = (request: GraphRequest, token: FakeGraphToken): Answer => {
    needs(token, 'instagram_business_content_publish');
    const creationId = request.params.get('creation_id');
    if (!creationId) throw invalidParameter(OAUTH, 'The parameter creation_id is required.');
    const container = containers.find(creationId);
    if (!container) throw unsupportedRequest('post', creationId);
    if (container.status === 'EXPIRED')
      throw new GraphError(400, {
        message: 'The media you are trying to access has expired. Please try to upload again.',
        type: OAUTH,
        code: -2,
        error_subcode: 2207020,
        is_transient: false,
        error_user_title: 'Media expired',
        error_user_msg: 'The media you are trying to access has expired. Please try to upload again.',
      });
    // A published container is no longer there to publish; Meta's reference does not list this answer, the
    // fake gives the one for media it cannot find.
    if (container.status === 'PUBLISHED')
      throw new GraphError(400, {
        message: 'The requested resource does not exist',
        type: OAUTH,
        code: 24,
        error_subcode: 2207006,
        is_transient: false,
        error_user_title: 'Media not found',
        error_user_msg: `The media with id ${creationId} cannot be found.`,
      });
    if (container.isCarouselItem || container.status !== 'FINISHED')
      throw new GraphError(400, {
        message: 'Media ID is not available',
        type: OAUTH,
        code: 9007,
        error_subcode: 2207027,
        is_transient: false,
        error_user_title: 'Media not ready for publishing',
        error_user_msg: 'The media is not ready for publishing, please wait for a moment',
      });
    if (quota.full())
      throw new GraphError(400, {
        message: 'Application request limit reached',
        type: OAUTH,
        code: 9,
        error_subcode: 2207042,
        is_transient: false,
        error_user_title: 'Reached publishing limit',
        error_user_msg: 'You reached maximum number of posts that is allowed to be published by Content Publish API.',
      });
    const children = container.children.map((id) => publishAs(containers.find(id)!, true, []).id);
    const published = publishAs(container, false, children);
    quota.take();
    const lose = switches.loses('publish');
    published.answerLost = lose;
    return { status: 200, body: { id: published.id }, lose };
  };

  // ---- comments ----

  const comment = (request: GraphRequest, token: FakeGraphToken, mediaId: string): Answer => {
    needs(token, 'instagram_business_manage_comments');
    const target = findMedia(mediaId);
    if (!target || target.carouselItem) throw unsupportedRequest('post', mediaId);
    if (target.productType === 'STORY') throw invalidParameter(OAUTH, 'A story cannot be commented on.');
    const message = request.params.get('message');
    if (!message) throw invalidParameter(OAUTH, 'The parameter message is required.');
    const made: FakeInstagramComment = { id: newId(), mediaId, text: message, createdAt: now(), answerLost: false };
    comments.push(made);
    made.answerLost = switches.loses('comment');
    return { status: 200, body: { id: made.id }, lose: made.answerLost };
  };

  const commentObject = (c: FakeInstagramComment, fields: string[]) =>
    pick(
      OAUTH,
      {
        id: c.id,
        text: c.text,
        timestamp: graphTime(c.createdAt),
        username: account.username,
        from: { id: account.userId, username: account.username },
        media: { id: c.mediaId },
        like_count: 0,
        hidden: false,
      },
      fields,
      'IGComment',
    );

  // ---- reads ----

  const userObject = (fields: string[]) =>
    pick(
      OAUTH,
      {
        id: account.id,
        user_id: account.userId,
        username: account.username,
        name: account.name,
        account_type: account.accountType,
        profile_picture_url: account.profilePictureUrl,
        followers_count: account.followersCount,
        follows_count: 0,
        media_count: media.filter((m) => !m.carouselItem && m.productType !== 'STORY').length,
      },
      fields,
      'User',
    );

  const mediaObject = (m: FakeInstagramMedia, fields: string[]) =>
    pick(
      OAUTH,
      {
        id: m.id,
        caption: m.caption ?? undefined,
        media_type: m.mediaType,
        media_product_type: m.productType,
        media_url: m.mediaUrl ?? undefined,
        permalink: m.permalink,
        shortcode: m.shortcode,
        timestamp: graphTime(m.publishedAt),
        username: account.username,
        owner: { id: account.userId },
        thumbnail_url: m.mediaType === 'VIDEO' ? `${m.permalink}thumbnail.jpg` : undefined,
        children: m.children.length > 0 ? { data: m.children.map((id) => ({ id })) } : undefined,
        comments_count: comments.filter((c) => c.mediaId === m.id).length,
        like_count: 0,
        is_comment_enabled: true,
      },
      fields,
      'IGMedia',
    );

  const readObject = (request: GraphRequest, id: string): Answer => {
    const fields = fieldsOf(request.params, ['id']);
    if (isAccount(id)) return { status: 200, body: userObject(fields) };
    const container = containers.find(id);
    if (container) {
      if (fields.includes('status_code') || fields.includes('status')) containers.poll(container);
      const statusText =
        container.status === 'ERROR'
          ? `Error: Media upload has failed with error code ${container.errorMessage ?? '2207001'}`
          : STATUS_TEXT[container.status];
      return {
        status: 200,
        body: pick(
          OAUTH,
          { id: container.id, status_code: container.status, status: statusText },
          fields,
          'IGContainer',
        ),
      };
    }
    const found = findMedia(id);
    if (found) return { status: 200, body: mediaObject(found, fields) };
    const made = comments.find((c) => c.id === id);
    if (made) return { status: 200, body: commentObject(made, fields) };
    throw unsupportedRequest(request.method, id);
  };

  const publishingLimit = (request: GraphRequest, token: FakeGraphToken): Answer => {
    needs(token, 'instagram_business_content_publish');
    const all = {
      quota_usage: quota.usage(),
      config: { quota_total: quota.total, quota_duration: QUOTA_DURATION_SECONDS },
    };
    return {
      status: 200,
      body: { data: [pick(OAUTH, all, fieldsOf(request.params, ['quota_usage']), 'ContentPublishingLimit')] },
    };
  };

  // ---- routing ----

  const api = async (request: GraphRequest, record: FakeGraphRequestRecord): Promise<Answer> => {
    const { method } = request;
    const parts = request.path.split('/').filter((s) => s !== '');
    const [id = '', edge] = parts;
    let operation: FakeInstagramOperation;
    if (method === 'GET' && parts.length === 1) operation = id === 'me' ? 'me' : 'readObject';
    else if (parts.length === 2 && edge === 'media') operation = method === 'POST' ? 'createContainer' : 'listMedia';
    else if (method === 'POST' && parts.length === 2 && edge === 'media_publish') operation = 'publish';
    else if (method === 'GET' && parts.length === 2 && edge === 'content_publishing_limit')
      operation = 'publishingLimit';
    else if (parts.length === 2 && edge === 'comments') operation = method === 'POST' ? 'comment' : 'listComments';
    else throw unsupportedRequest(method, id);
    record.operation = operation;
    if (request.version !== null && request.version !== version)
      throw new GraphError(400, {
        message: `Unknown path components: /${request.version}`,
        type: OAUTH,
        code: 2500,
      });
    const token = tokens.check(request.accessToken);
    needs(token, 'instagram_business_basic');
    const refusal = switches.refusal(operation);
    if (refusal) throw refusal;
    const onAccount = ['createContainer', 'listMedia', 'publish', 'publishingLimit'].includes(operation);
    if (onAccount && !isAccount(id)) throw unsupportedRequest(method, id);
    switch (operation) {
      case 'me':
      case 'readObject':
        return readObject(request, id);
      case 'createContainer':
        return { ...(await createContainer(request, token)), lose: switches.loses('createContainer') };
      case 'listMedia':
        return pageOf(
          request,
          origin,
          OAUTH,
          media.filter((m) => !m.carouselItem && m.productType !== 'STORY').reverse(),
          mediaObject,
        );
      case 'publish':
        return publish(request, token);
      case 'publishingLimit':
        return publishingLimit(request, token);
      case 'comment':
        return comment(request, token, id);
      case 'listComments':
        needs(token, 'instagram_business_manage_comments');
        if (!findMedia(id)) throw unsupportedRequest(method, id);
        return pageOf(request, origin, OAUTH, comments.filter((c) => c.mediaId === id).reverse(), commentObject);
    }
  };

  let origin = '';
  const server = await serveGraph(
    async (request, record) => {
      const route = `${request.method} ${request.version === null ? request.path : ''}`;
      switch (route) {
        case 'GET /oauth/authorize':
          record.operation = 'authorize';
          return authorization.window(request.params);
        case 'POST /oauth/access_token': {
          record.operation = 'token';
          const scopes = authorization.exchange(request.params);
          if (!Array.isArray(scopes)) return scopes;
          const token = tokens.issue('short', scopes, SHORT_LIVED_SECONDS);
          const value = JSON.stringify(token.value);
          // The Business Login guide gives `user_id` as a string and the permissions comma-separated, inside
          // `data`; the endpoint's reference gives `user_id` as a JSON number larger than a double holds.
          return inData
            ? {
                status: 200,
                body: { data: [{ access_token: token.value, user_id: account.userId, permissions: scopes.join(',') }] },
              }
            : {
                status: 200,
                rawJson: `{"access_token":${value},"user_id":${account.userId},"permissions":${JSON.stringify(scopes)}}`,
              };
        }
        case 'GET /access_token':
          record.operation = 'exchangeToken';
          return longLived.exchange(request);
        case 'GET /refresh_access_token': {
          record.operation = 'refreshToken';
          const refusal = switches.refusal('refreshToken');
          if (refusal) throw refusal;
          return longLived.refresh(request, now());
        }
        default: {
          const answer = await api(request, record);
          const hold =
            answer.status < 400 && !answer.lose && switches.heldAs(record.operation as FakeInstagramOperation);
          return hold ? { ...answer, hold } : answer;
        }
      }
    },
    errors,
    requests,
  );

  origin = server.url;
  return {
    url: server.url,
    authorizeUrl: `${server.url}/oauth/authorize`,
    graphUrl: `${server.url}/${version}`,
    version,
    appId: app.appId,
    appSecret: app.appSecret,
    account,
    consents: authorization.consents,
    tokens: tokens.tokens,
    containers: containers.containers,
    media,
    comments,
    downloads,
    errors,
    requests,
    deny: () => {
      authorization.denyNext = true;
    },
    grantOnly: (scopes) => {
      authorization.onlyScopes = scopes;
    },
    tokenAnswerInData: (on) => {
      inData = on;
    },
    expireTokens: () => tokens.expireAll(),
    revokeTokens: () => tokens.revokeAll(),
    advanceClock: (seconds) => {
      clockOffsetMs += seconds * 1000;
    },
    now,
    processingPolls: (count) => {
      containers.polls = count;
    },
    endNextContainer: (status, errorCode = '2207001') =>
      containers.endNext(status, status === 'ERROR' ? errorCode : null),
    rateLimitNext: (code, operation, count = 1) => switches.rateLimitNext(code, operation, count),
    failNext: (status = 500, operation) => switches.failNext(status, operation),
    loseNextAnswer: (operation) => switches.loseNextAnswer(operation),
    holdNextAnswer: (operation, { ms, skip } = {}) =>
      switches.holdNextAnswer(operation, ms === undefined ? {} : { ms }, skip),
    heldAnswers: () => server.heldAnswers(),
    usePublishingQuota: (count) => quota.fill(count),
    close: () => server.close(),
  };
}
