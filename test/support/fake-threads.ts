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
import { threadsTextLength } from './threads-text.js';

export type { FakeGraphConsent, FakeGraphToken } from './fake-graph-login.js';
export type { FakeGraphErrorRecord } from './fake-graph-protocol.js';
export type { FakeGraphContainer, FakeGraphDownload } from './fake-graph-publishing.js';

/** The Threads profile that consents at the fake authorization window and owns every post. */
export interface FakeThreadsAccount {
  /** The Threads user id: 17 digits, beyond what a double holds exactly. */
  id: string;
  username: string;
  name: string;
  profilePictureUrl: string;
  biography: string;
}

/** A post (or reply) published on the fake Threads. */
export interface FakeThreadsPost {
  id: string;
  containerId: string;
  /** `TEXT_POST`, `IMAGE`, `VIDEO` or `CAROUSEL_ALBUM`; `IMAGE`/`VIDEO` for a carousel's items. */
  mediaType: string;
  text: string | null;
  shortcode: string;
  permalink: string;
  /** ms on the fake's clock. */
  publishedAt: number;
  /** The post it replies to, and the first post of its thread. */
  repliedTo: string | null;
  rootPost: string;
  /** `everyone` unless the container said otherwise. */
  replyControl: string;
  mediaUrl: string | null;
  /** A carousel's items, as media of their own. */
  children: string[];
  /** An item of a carousel, not a post of its own. */
  carouselItem: boolean;
  /** Published, but the connection was cut before Threads answered (`loseNextAnswer('publish')`). */
  answerLost: boolean;
}

/** The Graph calls the fake serves, for the switches. */
export type FakeThreadsOperation =
  | 'me'
  | 'createContainer'
  | 'readObject'
  | 'publish'
  | 'publishingLimit'
  | 'listThreads'
  | 'listReplies'
  | 'conversation';

/**
 * A stand-in for the Threads API on a loopback port, following developers.facebook.com's Threads pages:
 * the authorization window (threads.net/oauth/authorize), `POST /oauth/access_token` (a short-lived token and
 * the user id), `GET /access_token?grant_type=th_exchange_token` (60 days), `GET /refresh_access_token?
 * grant_type=th_refresh_token` (once a day old), and on graph.threads.net under `/v1.0/`: `/me`, containers
 * (`POST /{user-id}/threads`: TEXT, IMAGE, VIDEO, CAROUSEL with children, `reply_to_id`, `reply_control`), their
 * status (`GET /{container-id}?fields=status,error_message`), `POST /{user-id}/threads_publish`, the post
 * (`GET /{media-id}?fields=permalink,…`), the profile's threads and replies, a post's replies and conversation,
 * and `/{user-id}/threads_publishing_limit` (`quota_usage`, `config`, `reply_quota_usage`, `reply_config`).
 *
 * As Threads does: it fetches `image_url` and `video_url` itself (an image that cannot be fetched fails the
 * container's creation, a video its processing with `FAILED_DOWNLOADING_VIDEO`); text is at most 500 characters,
 * emojis counted as their UTF-8 bytes; images at most 8 MiB; a container is published once and lives a day;
 * 250 posts and 1,000 replies a rolling day (reading the replies' quota needs `threads_manage_replies`). The
 * token endpoint answers `user_id` as a JSON number too large for a double, as Threads does: read the id from
 * `/me`.
 */
export interface FakeThreads {
  /** Everything's origin (threads.net's window, graph.threads.net's API). */
  url: string;
  /** `${url}/oauth/authorize`: consents at once as `account`, unless `deny()`. */
  authorizeUrl: string;
  /** The API's base, `${url}/v1.0`. */
  graphUrl: string;
  appId: string;
  appSecret: string;
  account: FakeThreadsAccount;
  consents: FakeGraphConsent[];
  tokens: FakeGraphToken[];
  containers: FakeGraphContainer[];
  /** Published posts, replies and carousel items, in order of publication. */
  posts: FakeThreadsPost[];
  /** Every fetch of a container's media. */
  downloads: FakeGraphDownload[];
  /** Every error answered, with its `fbtrace_id`. */
  errors: FakeGraphErrorRecord[];
  requests: FakeGraphRequestRecord[];

  /** The next consent answers `error=access_denied`: the user cancelled. */
  deny(): void;
  /** The next consent grants only these permissions (and `threads_basic`): the user unticked the others. */
  grantOnly(scopes: string[]): void;
  /** Every token issued so far has expired: calls with them answer 190 (subcode 463). */
  expireTokens(): void;
  /** The user removed the app: every token answers 190 (subcode 458). */
  revokeTokens(): void;
  advanceClock(seconds: number): void;
  now(): number;
  /**
   * Status reads a container answers IN_PROGRESS before it settles, for every container created from now on;
   * undefined: Threads' own pace (text and image at once, a video or a carousel after one read).
   */
  processingPolls(count: number | undefined): void;
  /** The next container created ends ERROR (with this `error_message`) or EXPIRED once its polls are done. */
  endNextContainer(status: 'ERROR' | 'EXPIRED', errorMessage?: string): void;
  /** The next `count` calls (of `operation`, or any Graph call) are refused with this rate-limit code. */
  rateLimitNext(code: GraphRateLimitCode, operation?: FakeThreadsOperation, count?: number): void;
  /** The next call (of `operation`, or any) fails with a 5xx, having done nothing. */
  failNext(status?: number, operation?: FakeThreadsOperation): void;
  /** The next call of `operation` is done (the post published), then the connection is cut before the answer. */
  loseNextAnswer(operation: FakeThreadsOperation): void;
  /**
   * The next call of `operation` that is done, after `skip` others, holds its answer back: it is sent `ms` later,
   * or, without `ms`, never; a caller that goes away meanwhile gets none (the post stays published).
   */
  holdNextAnswer(operation: FakeThreadsOperation, options?: { ms?: number; skip?: number }): void;
  /** Answers held back now: their work done, not sent yet, their callers still waiting. */
  heldAnswers(): number;
  /** Counts `posts` posts and `replies` replies as published now, toward the rolling day's quotas. */
  usePublishingQuota(posts: number, replies?: number): void;
  close(): Promise<void>;
}

export const THREADS_VERSION = 'v1.0';
export const THREADS_SCOPES = [
  'threads_basic',
  'threads_content_publish',
  'threads_manage_replies',
  'threads_read_replies',
  'threads_manage_insights',
  'threads_keyword_search',
  'threads_manage_mentions',
  'threads_delete',
  'threads_location_tagging',
  'threads_profile_discovery',
];
export const THREADS_TEXT_LIMIT = 500;
const POST_QUOTA = 250;
const REPLY_QUOTA = 1000;
const CAROUSEL_ITEMS = { min: 2, max: 20 };
const REPLY_CONTROLS = [
  'everyone',
  'accounts_you_follow',
  'mentioned_only',
  'parent_post_author_only',
  'followers_only',
];
const MEDIA_TYPES = ['TEXT', 'IMAGE', 'VIDEO', 'CAROUSEL'];
const IMAGE_TYPES = ['image/jpeg', 'image/png'];
const VIDEO_TYPES = ['video/mp4', 'video/quicktime'];
/** Threads' exception type for what is not about the token. */
const TH = 'THApiException';

export async function startFakeThreads(
  options: { account?: Partial<FakeThreadsAccount>; appId?: string; appSecret?: string; redirectUris?: string[] } = {},
): Promise<FakeThreads> {
  const account: FakeThreadsAccount = {
    id: '25132845713010866',
    username: 'acme.threads',
    name: 'Acme on Threads',
    profilePictureUrl: 'https://scontent.cdninstagram.example/threads/profile.jpg',
    biography: 'We make things.',
    ...options.account,
  };
  const app: GraphApp = {
    appId: options.appId ?? '990602627938098',
    appSecret: options.appSecret ?? 'fake-threads-app-secret',
    redirectUris: options.redirectUris ?? [],
    knownScopes: THREADS_SCOPES,
    basicScope: 'threads_basic',
  };
  let clockOffsetMs = 0;
  const now = () => Date.now() + clockOffsetMs;
  const newId = graphIds(17_890_000_000_000_000n);
  const authorization = new Authorization(app, now);
  const tokens = new TokenStore(now, 'THAA', app.appId);
  const containers = new ContainerStore(now, newId);
  const postQuota = new PublishingQuota(now, POST_QUOTA);
  const replyQuota = new PublishingQuota(now, REPLY_QUOTA);
  const switches = new Switches<FakeThreadsOperation>();
  const longLived = longLivedTokens(tokens, app, { exchange: 'th_exchange_token', refresh: 'th_refresh_token' });
  const posts: FakeThreadsPost[] = [];
  const downloads: FakeGraphDownload[] = [];
  const errors: FakeGraphErrorRecord[] = [];
  const requests: FakeGraphRequestRecord[] = [];

  const needs = (token: FakeGraphToken, ...scopes: string[]) => {
    for (const scope of scopes) if (!token.scopes.includes(scope)) throw permissionMissing(scope);
  };
  /** The user in a path: the account's id or `me`; anything else is an object the token cannot see. */
  const isUser = (id: string) => id === 'me' || id === account.id;
  const ownUser = (request: GraphRequest, id: string) => {
    if (!isUser(id)) throw unsupportedRequest(request.method, id);
  };
  const post = (id: string) => posts.find((p) => p.id === id);

  // ---- containers ----

  const createContainer = async (request: GraphRequest, token: FakeGraphToken): Promise<Answer> => {
    needs(token, 'threads_content_publish');
    const p = request.params;
    const params = Object.fromEntries(p);
    const mediaType = p.get('media_type');
    if (mediaType === null) throw invalidParameter(TH, 'The parameter media_type is required.');
    if (!MEDIA_TYPES.includes(mediaType))
      throw invalidParameter(TH, `(#100) Param media_type must be one of {${MEDIA_TYPES.join(', ')}}`);
    const isCarouselItem = p.get('is_carousel_item') === 'true';
    const text = p.get('text');
    // Meta documents the limit, not the wording of its refusal: the fake's is its own.
    if (text !== null && threadsTextLength(text) > THREADS_TEXT_LIMIT)
      throw new GraphError(400, {
        message: 'Invalid parameter',
        type: TH,
        code: 100,
        error_user_title: 'Text too long',
        error_user_msg: `The text of a post can be at most ${THREADS_TEXT_LIMIT} characters.`,
      });
    const replyControl = p.get('reply_control');
    if (replyControl !== null && !REPLY_CONTROLS.includes(replyControl))
      throw invalidParameter(TH, `(#100) Param reply_control must be one of {${REPLY_CONTROLS.join(', ')}}`);
    const replyTo = p.get('reply_to_id');
    if (replyTo !== null) {
      // Replying needs no permission more when the thread's first post is the account's own (Threads, create
      // replies), as every post of the fake is.
      const parent = post(replyTo);
      if (!parent || parent.carouselItem) throw unsupportedRequest('post', replyTo);
    }
    if (isCarouselItem && mediaType !== 'IMAGE' && mediaType !== 'VIDEO')
      throw invalidParameter(TH, 'A carousel item must be an IMAGE or a VIDEO.');

    if (mediaType === 'TEXT') {
      if (!text) throw invalidParameter(TH, 'The parameter text is required.');
      return created(
        containers.create({ mediaType, params, isCarouselItem, children: [], defaultPolls: 0, download: null }),
      );
    }
    if (mediaType === 'CAROUSEL') {
      const children = (p.get('children') ?? '')
        .split(',')
        .map((c) => c.trim())
        .filter((c) => c !== '');
      if (children.length < CAROUSEL_ITEMS.min || children.length > CAROUSEL_ITEMS.max)
        throw invalidParameter(TH, `A carousel has ${CAROUSEL_ITEMS.min} to ${CAROUSEL_ITEMS.max} items.`);
      for (const id of children) {
        const child = containers.find(id);
        if (!child || !child.isCarouselItem) throw unsupportedRequest('post', id);
        if (child.status !== 'FINISHED') throw invalidParameter(TH, `The carousel item ${id} is not ready.`, 4279009);
      }
      return created(
        containers.create({ mediaType, params, isCarouselItem, children, defaultPolls: 1, download: null }),
      );
    }
    const urlName = mediaType === 'IMAGE' ? 'image_url' : 'video_url';
    const url = p.get(urlName);
    if (!url) throw invalidParameter(TH, `The parameter ${urlName} is required.`);
    const download = await downloadMedia(url, downloads);
    const fetched =
      download.sniffed !== null && (mediaType === 'IMAGE' ? IMAGE_TYPES : VIDEO_TYPES).includes(download.sniffed);
    if (mediaType === 'IMAGE') {
      // An image is fetched while the container is made: one Threads cannot fetch is refused then.
      if (fetched && download.bytes > MAX_IMAGE_BYTES) throw imageTooLarge(TH);
      if (!fetched)
        throw new GraphError(400, {
          message: 'Only photo or video can be accepted as media type.',
          type: TH,
          code: 9004,
          error_subcode: 2207052,
          is_transient: false,
          error_user_title: "Media download has failed. The media URI doesn't meet our requirements.",
          error_user_msg: `The media could not be fetched from this URI: ${url}. Please check the limitations section in our development document for more information.`,
        });
      return created(containers.create({ mediaType, params, isCarouselItem, children: [], defaultPolls: 0, download }));
    }
    // A video is fetched while it is processed: one Threads cannot fetch ends the container in ERROR.
    return created(
      containers.create({
        mediaType,
        params,
        isCarouselItem,
        children: [],
        defaultPolls: 1,
        download,
        ...(fetched ? {} : { failure: 'FAILED_DOWNLOADING_VIDEO' }),
      }),
    );
  };
  const created = (container: FakeGraphContainer): Answer => ({ status: 200, body: { id: container.id } });

  // ---- publishing ----

  const mediaTypeOf = (container: FakeGraphContainer) =>
    container.mediaType === 'TEXT'
      ? 'TEXT_POST'
      : container.mediaType === 'CAROUSEL'
        ? 'CAROUSEL_ALBUM'
        : container.mediaType;

  const publishAs = (container: FakeGraphContainer, carouselItem: boolean, children: string[]): FakeThreadsPost => {
    const replyTo = carouselItem ? null : (container.params.reply_to_id ?? null);
    const code = shortcode();
    const published: FakeThreadsPost = {
      id: newId(),
      containerId: container.id,
      mediaType: mediaTypeOf(container),
      text: container.params.text ?? null,
      shortcode: code,
      permalink: `https://www.threads.net/@${account.username}/post/${code}`,
      publishedAt: now(),
      repliedTo: replyTo,
      rootPost: '',
      replyControl: container.params.reply_control ?? 'everyone',
      mediaUrl: container.params.image_url ?? container.params.video_url ?? null,
      children,
      carouselItem,
      answerLost: false,
    };
    published.rootPost = replyTo === null ? published.id : post(replyTo)!.rootPost;
    posts.push(published);
    container.status = 'PUBLISHED';
    container.mediaId = published.id;
    return published;
  };

  /** What Threads answers for a container it cannot publish (seen answered for one not ready yet, too). */
  const notFound = (id: string) =>
    new GraphError(400, {
      message: 'The requested resource does not exist',
      type: TH,
      code: 24,
      error_subcode: 4279009,
      is_transient: false,
      error_user_title: 'Media Not Found',
      error_user_msg: `The media with id ${id} cannot be found.`,
    });

  const publish = (request: GraphRequest, token: FakeGraphToken): Answer => {
    needs(token, 'threads_content_publish');
    const creationId = request.params.get('creation_id');
    if (!creationId) throw invalidParameter(TH, 'The parameter creation_id is required.');
    const container = containers.find(creationId);
    if (!container) throw unsupportedRequest('post', creationId);
    if (container.isCarouselItem || container.status !== 'FINISHED') throw notFound(creationId);
    const reply = container.params.reply_to_id !== undefined;
    const quota = reply ? replyQuota : postQuota;
    // Threads enforces its quotas at publishing; it does not document the refusal, which the fake gives as
    // Instagram's publishing limit error.
    if (quota.full())
      throw new GraphError(400, {
        message: 'Application request limit reached',
        type: 'OAuthException',
        code: 9,
        error_subcode: 2207042,
        is_transient: false,
        error_user_title: 'Reached publishing limit',
        error_user_msg: `You reached maximum number of ${reply ? 'replies' : 'posts'} that is allowed to be published by the API.`,
      });
    const children = container.children.map((id) => publishAs(containers.find(id)!, true, []).id);
    const published = publishAs(container, false, children);
    quota.take();
    const lose = switches.loses('publish');
    published.answerLost = lose;
    return { status: 200, body: { id: published.id }, lose };
  };

  // ---- reads ----

  const userObject = (fields: string[]) =>
    pick(
      TH,
      {
        id: account.id,
        username: account.username,
        name: account.name,
        threads_profile_picture_url: account.profilePictureUrl,
        threads_biography: account.biography,
        is_verified: false,
      },
      fields,
      'User',
    );

  const postObject = (p: FakeThreadsPost, fields: string[]) =>
    pick(
      TH,
      {
        id: p.id,
        media_product_type: 'THREADS',
        media_type: p.mediaType,
        media_url: p.mediaUrl ?? undefined,
        permalink: p.permalink,
        owner: { id: account.id },
        username: account.username,
        text: p.text ?? undefined,
        timestamp: graphTime(p.publishedAt),
        shortcode: p.shortcode,
        thumbnail_url: p.mediaType === 'VIDEO' ? `${p.permalink}/thumbnail.jpg` : undefined,
        children: p.children.length > 0 ? { data: p.children.map((id) => ({ id })) } : undefined,
        is_quote_post: false,
        is_reply: p.repliedTo !== null,
        has_replies: posts.some((r) => r.repliedTo === p.id),
        root_post: { id: p.rootPost },
        replied_to: p.repliedTo === null ? undefined : { id: p.repliedTo },
        is_reply_owned_by_me: p.repliedTo !== null,
        reply_audience: p.replyControl.toUpperCase(),
      },
      fields,
      'ThreadsMedia',
    );

  const readObject = (request: GraphRequest, id: string): Answer => {
    if (id === 'me' || id === account.id) return { status: 200, body: userObject(fieldsOf(request.params, ['id'])) };
    const container = containers.find(id);
    if (container) {
      const fields = fieldsOf(request.params, ['id']);
      if (fields.includes('status')) containers.poll(container);
      return {
        status: 200,
        body: pick(
          TH,
          { id: container.id, status: container.status, error_message: container.errorMessage ?? undefined },
          fields,
          'ThreadsMediaContainer',
        ),
      };
    }
    const found = post(id);
    if (!found) throw unsupportedRequest(request.method, id);
    return { status: 200, body: postObject(found, fieldsOf(request.params, ['id'])) };
  };

  /** The profile's threads or replies, newest first (`since`, `until` in epoch seconds), a page at a time. */
  const profileList = (request: GraphRequest, replies: boolean): Answer => {
    const p = request.params;
    const since = p.has('since') ? Number(p.get('since')) * 1000 : -Infinity;
    const until = p.has('until') ? Number(p.get('until')) * 1000 : Infinity;
    const matching = posts
      .filter((m) => !m.carouselItem && (m.repliedTo !== null) === replies)
      .filter((m) => m.publishedAt >= since && m.publishedAt <= until)
      .reverse();
    return pageOf(request, origin, TH, matching, postObject);
  };

  /**
   * A post's replies: the direct ones (`/replies`, newest first unless `reverse=false`) or every one under it,
   * flattened (`/conversation`).
   */
  const repliesOf = (request: GraphRequest, id: string, all: boolean): Answer => {
    const parent = post(id);
    if (!parent || parent.carouselItem) throw unsupportedRequest(request.method, id);
    const under = (m: FakeThreadsPost): boolean =>
      m.repliedTo !== null && (m.repliedTo === id || (all && under(post(m.repliedTo)!)));
    const matching = posts.filter(under);
    if (request.params.get('reverse') !== 'false') matching.reverse();
    return pageOf(request, origin, TH, matching, postObject);
  };

  const publishingLimit = (request: GraphRequest, token: FakeGraphToken): Answer => {
    needs(token, 'threads_content_publish');
    const fields = fieldsOf(request.params, ['quota_usage']);
    if (fields.some((f) => f.startsWith('reply_'))) needs(token, 'threads_manage_replies');
    const all: Record<string, unknown> = {
      quota_usage: postQuota.usage(),
      config: { quota_total: postQuota.total, quota_duration: QUOTA_DURATION_SECONDS },
      reply_quota_usage: replyQuota.usage(),
      reply_config: { quota_total: replyQuota.total, quota_duration: QUOTA_DURATION_SECONDS },
    };
    const shaped = pick(TH, all, fields, 'ThreadsPublishingLimit');
    return { status: 200, body: { data: [shaped] } };
  };

  // ---- routing ----

  const api = async (request: GraphRequest, record: FakeGraphRequestRecord): Promise<Answer> => {
    const { method, path } = request;
    const parts = path.split('/').filter((s) => s !== '');
    let operation: FakeThreadsOperation;
    if (method === 'GET' && parts.length === 1) operation = parts[0] === 'me' ? 'me' : 'readObject';
    else if (method === 'POST' && parts.length === 2 && parts[1] === 'threads') operation = 'createContainer';
    else if (method === 'GET' && parts.length === 2 && parts[1] === 'threads') operation = 'listThreads';
    else if (method === 'GET' && parts.length === 2 && parts[1] === 'replies') operation = 'listReplies';
    else if (method === 'GET' && parts.length === 2 && parts[1] === 'conversation') operation = 'conversation';
    else if (method === 'POST' && parts.length === 2 && parts[1] === 'threads_publish') operation = 'publish';
    else if (method === 'GET' && parts.length === 2 && parts[1] === 'threads_publishing_limit')
      operation = 'publishingLimit';
    else throw unsupportedRequest(method, parts[0] ?? '');
    record.operation = operation;
    if (request.version !== null && request.version !== THREADS_VERSION)
      throw new GraphError(400, {
        message: `Unknown path components: /${request.version}`,
        type: 'OAuthException',
        code: 2500,
      });
    const token = tokens.check(request.accessToken);
    const refusal = switches.refusal(operation);
    if (refusal) throw refusal;
    const onPost = operation === 'conversation' || (operation === 'listReplies' && !isUser(parts[0]!));
    if (parts.length === 2 && !onPost) ownUser(request, parts[0]!);
    switch (operation) {
      case 'me':
      case 'readObject':
        return readObject(request, parts[0]!);
      case 'createContainer':
        return { ...(await createContainer(request, token)), lose: switches.loses('createContainer') };
      case 'listThreads':
        return profileList(request, false);
      case 'listReplies':
        needs(token, 'threads_read_replies');
        return onPost ? repliesOf(request, parts[0]!, false) : profileList(request, true);
      case 'conversation':
        needs(token, 'threads_read_replies');
        return repliesOf(request, parts[0]!, true);
      case 'publish':
        return publish(request, token);
      case 'publishingLimit':
        return publishingLimit(request, token);
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
          // `user_id` is a JSON number, larger than a double holds exactly.
          return { status: 200, rawJson: `{"access_token":${JSON.stringify(token.value)},"user_id":${account.id}}` };
        }
        case 'GET /access_token':
          record.operation = 'exchangeToken';
          return longLived.exchange(request);
        case 'GET /refresh_access_token':
          record.operation = 'refreshToken';
          return longLived.refresh(request, now());
        default: {
          const answer = await api(request, record);
          const hold = answer.status < 400 && !answer.lose && switches.heldAs(record.operation as FakeThreadsOperation);
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
    graphUrl: `${server.url}/${THREADS_VERSION}`,
    appId: app.appId,
    appSecret: app.appSecret,
    account,
    consents: authorization.consents,
    tokens: tokens.tokens,
    containers: containers.containers,
    posts,
    downloads,
    errors,
    requests,
    deny: () => {
      authorization.denyNext = true;
    },
    grantOnly: (scopes) => {
      authorization.onlyScopes = scopes;
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
    endNextContainer: (status, errorMessage = 'UNKNOWN') =>
      containers.endNext(status, status === 'ERROR' ? errorMessage : null),
    rateLimitNext: (code, operation, count = 1) => switches.rateLimitNext(code, operation, count),
    failNext: (status = 500, operation) => switches.failNext(status, operation),
    loseNextAnswer: (operation) => switches.loseNextAnswer(operation),
    holdNextAnswer: (operation, { ms, skip } = {}) =>
      switches.holdNextAnswer(operation, ms === undefined ? {} : { ms }, skip),
    heldAnswers: () => server.heldAnswers(),
    usePublishingQuota: (count, replies = 0) => {
      postQuota.fill(count);
      replyQuota.fill(replies);
    },
    close: () => server.close(),
  };
}
